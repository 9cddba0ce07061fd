"""Big tables (and small ones): the accelerators and their plain paths (``DATOM_PLAIN=1``)
store the same parquet bytes and record the same digests, and a stored object altered
after its write is refused before any parser sees it, in either mode, on every store."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import datom_core as dc
from datom_core._errors import IntegrityError
from datom_core._git import _metadata, _repo
from datom_core._memory import KeyedMemory
from datom_core._plain import PLAIN_ENV, plain
from datom_core._project import _columns, _documents, _parquet
from datom_core._project import _layout as L
from datom_core._store import LocalStore, Store
from tests.core.projects import new_project

_MODES = {"accelerated": "0", "plain": "1"}
_BIG_ROWS = 700_000


def _big(rows: int = _BIG_ROWS, seed: int = 1) -> pa.Table:
    """A string-heavy table over the in-memory limit (16 MiB of Arrow data): encoded into
    a temporary file, read through the dataset layer."""
    rng = np.random.default_rng(seed)
    words = np.array([f"SUBJ-{i:05d}-é" for i in range(3000)])
    subject = pa.array(words[rng.integers(0, len(words), rows)])
    missing = pa.array(rng.random(rows) < 0.05)
    table = pa.table(
        {
            "value": rng.normal(size=rows),
            "id": pa.array(rng.integers(0, 10**12, rows), pa.int64()),
            "subject": pc.if_else(missing, pa.nulls(rows, pa.string()), subject),
        }
    )
    assert rows < _BIG_ROWS or table.nbytes > _parquet._IN_MEMORY
    return table


def _small(seed: int = 1) -> pa.Table:
    """A table encoded in memory and parsed without the dataset layer."""
    return _big(50, seed)


def _mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv(PLAIN_ENV, _MODES[mode])
    assert plain() is (mode == "plain")


class _FixedDatetime(dt.datetime):
    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _FixedDatetime:
        return cls(2030, 1, 2, 3, 4, 5, tzinfo=tz)


def _fix_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents' timestamps and commit times fixed: two projects record the same ids."""
    monkeypatch.setattr(_documents, "dt", SimpleNamespace(datetime=_FixedDatetime, UTC=dt.UTC))
    for module in (_repo, _metadata):
        monkeypatch.setattr(module, "_now", lambda: 1_900_000_000)


# -- the same bytes and digests either way -------------------------------------------------


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("", False), ("0", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(PLAIN_ENV, value)
        assert plain() is expected
    monkeypatch.delenv(PLAIN_ENV)
    assert plain() is False


def test_serialized_bytes_digest_and_footer_are_one_in_both_modes_and_both_routes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In memory (a small table) or through a temporary file (a big one), accelerated or
    plain: the same parquet bytes, their digest, the column digests in the footer."""
    table = _big(200_000)
    digests = dc.hash_table(table).column_hashes
    seen = {}
    for in_memory in (False, True):
        monkeypatch.setattr(_parquet, "_IN_MEMORY", 1 << 40 if in_memory else 0)
        for mode in _MODES:
            _mode(monkeypatch, mode)
            with _parquet.serialized(table, digests) as sp:
                assert isinstance(sp.source, bytes) is in_memory
                raw = sp.source if isinstance(sp.source, bytes) else sp.source.read_bytes()
                assert sp.parquet_sha == hashlib.sha256(raw).hexdigest()
                assert sp.size_bytes == len(raw)
                footer = pq.ParquetFile(pa.BufferReader(raw)).metadata.metadata
                assert json.loads(footer[_parquet.FOOTER_KEY.encode()]) == [
                    {"name": c.name, "sha": c.sha} for c in digests
                ]
                read = _parquet.without_footer_key(pq.read_table(pa.BufferReader(raw)))
                assert read.equals(table)
                seen[in_memory, mode] = (raw, sp.parquet_sha)
    assert len(set(seen.values())) == 1, "the routes or the modes gave different bytes"


def _written(root: Path, table: pa.Table) -> tuple[str, str, str, bytes, pa.Table]:
    """(data_sha, parquet_sha, metadata_sha, stored parquet bytes, table read back)."""
    conn = new_project(root)
    result = conn.write("t", table)
    raw = conn.store.read_bytes(L.store_parquet("t", result.data_sha))
    assert hashlib.sha256(raw).hexdigest() == result.parquet_sha
    return result.data_sha, result.parquet_sha, result.version, raw, conn.read("t", as_="arrow")


def _same_either_way(table: pa.Table) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        _fix_clocks(mp)
        outcome = {}
        for mode in _MODES:
            _mode(mp, mode)
            *ids, read = _written(Path(tmp) / mode, table)
            # the values read back are the values written (Arrow's equals: NaN is not NaN)
            assert dc.hash_table(read).data_sha == dc.hash_table(table).data_sha == ids[0]
            assert read.schema.remove_metadata() == table.schema.remove_metadata()
            outcome[mode] = tuple(ids)
        assert outcome["accelerated"] == outcome["plain"]


_no_nul = st.characters(exclude_characters="\x00")  # datom refuses NUL in strings (cv1)
_types = {"int": pa.int64(), "float": pa.float64(), "text": pa.string(), "flag": pa.bool_()}
_cells: dict[str, st.SearchStrategy[list[Any]]] = {
    "int": st.lists(st.none() | st.integers(-(2**62), 2**62), min_size=1, max_size=40),
    "float": st.lists(st.none() | st.floats(allow_nan=True, width=64), min_size=1, max_size=40),
    "text": st.lists(st.none() | st.text(_no_nul, max_size=12), min_size=1, max_size=40),
    "flag": st.lists(st.none() | st.booleans(), min_size=1, max_size=40),
}


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    kinds = draw(st.lists(st.sampled_from(sorted(_cells)), min_size=1, max_size=4))
    rows = draw(st.integers(1, 40))
    columns = {}
    for i, kind in enumerate(kinds):
        values = draw(_cells[kind])
        columns[f"{kind}_{i}"] = pa.array((values * rows)[:rows], _types[kind])
    return pa.table(columns)


@settings(
    max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(table=_tables())
def test_a_write_records_the_same_ids_and_bytes_in_both_modes(table: pa.Table) -> None:
    _same_either_way(table)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_big_write_records_the_same_ids_and_bytes_in_both_modes(seed: int) -> None:
    _same_either_way(_big(seed=seed))


# -- altered objects are refused before any parse ------------------------------------------


@contextmanager
def _parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every parquet parse in this process (the parser's entry points), recorded."""
    seen: list[int] = []
    real_read_table, real_file = pq.read_table, pq.ParquetFile

    def read_table(source: Any, *args: Any, **kwargs: Any) -> pa.Table:
        seen.append(1)
        return real_read_table(source, *args, **kwargs)

    def parquet_file(source: Any, *args: Any, **kwargs: Any) -> pq.ParquetFile:
        seen.append(1)
        return real_file(source, *args, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(pq, "read_table", read_table)
        mp.setattr(pq, "ParquetFile", parquet_file)
        yield seen


def _alter(store: Store, key: str, change: Any) -> bytes:
    """Replace the object at ``key`` by ``change(bytes)`` behind datom's back (for a local
    store, in place on disk); the original bytes."""
    raw = store.read_bytes(key)
    altered = change(bytearray(raw))
    if isinstance(store, LocalStore):
        path = Path(store.root, "proj", "datom", key)
        assert path.read_bytes() == raw
        with path.open("r+b") as f:
            f.write(altered)
            f.truncate()
    else:
        store.write_bytes(key, bytes(altered))
    return raw


def _flip(raw: bytearray) -> bytearray:
    raw[len(raw) // 3] ^= 0x01  # one bit inside the row data: still a parseable file
    return raw


def _other_parquet(_: bytearray) -> bytes:
    # A well-formed parquet of other data, the same length or not: only the digest tells.
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [1, 2, 3]}), sink)
    return sink.getvalue().to_pybytes()


_CHANGES = {
    "bit": _flip,
    "truncated": lambda raw: raw[: len(raw) - 9],
    "grown": lambda raw: raw + b"PAR1",
    "replaced": _other_parquet,
}


@pytest.mark.parametrize("size", ["big", "small"])
@pytest.mark.parametrize("mode", list(_MODES))
def test_an_altered_parquet_is_refused_before_any_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Store, mode: str, size: str
) -> None:
    _mode(monkeypatch, mode)
    table = _big() if size == "big" else _small()
    conn = new_project(tmp_path, store)
    result = conn.write("t", table)
    key = L.store_parquet("t", result.data_sha)
    original = store.read_bytes(key)
    for name, change in _CHANGES.items():
        _alter(store, key, change)
        with _parses(monkeypatch) as parsed:
            reads = [
                (version, columns, verify, as_)
                for version in (None, result.version, result.version[:10])
                for columns in (None, ["id"])
                for verify in ("bytes", "content")
                for as_ in ("arrow", "pandas")
            ]
            for version, columns, verify, as_ in reads:
                with pytest.raises(dc.IntegrityError, match="parquet_sha") as info:
                    conn.read("t", version, columns=columns, as_=as_, verify=verify)  # type: ignore[arg-type]
                assert info.value.key == key, name
                assert info.value.expected == result.parquet_sha, name
                assert info.value.actual != result.parquet_sha, name
        assert parsed == [], f"{name}: the parser saw altered bytes"
        store.write_bytes(key, original)
    with _parses(monkeypatch) as parsed:  # restored: read again, parsed
        assert conn.read("t", as_="arrow").equals(table)
    assert parsed


def test_an_altered_footer_never_says_which_columns_changed(tmp_path: Path) -> None:
    """A parquet's footer is read before the object is verified: digests it records that
    are not its version's (they do not combine to its data_sha) are not believed: the
    columns that changed are then found from the data, which is verified first."""
    conn = new_project(tmp_path)
    n = 5000  # past the small-table path
    v1 = conn.write("t", pa.table({"a": list(range(n)), "b": [f"x{i}" for i in range(n)]}))
    v2 = conn.write("t", pa.table({"a": list(range(n)), "b": [f"y{i}" for i in range(n)]}))
    key = L.store_parquet("t", v1.data_sha)
    raw_v1 = conn.store.read_bytes(key)
    old = pq.read_table(pa.BufferReader(raw_v1))
    new_raw = conn.store.read_bytes(L.store_parquet("t", v2.data_sha))
    claimed = pq.ParquetFile(pa.BufferReader(new_raw)).metadata.metadata[
        _parquet.FOOTER_KEY.encode()
    ]
    altered = old.replace_schema_metadata(
        {**(old.schema.metadata or {}), _parquet.FOOTER_KEY.encode(): claimed}
    )
    sink = pa.BufferOutputStream()
    pq.write_table(altered, sink)
    conn.store.delete(key)
    conn.store.write_bytes(key, sink.getvalue().to_pybytes())
    _columns._KNOWN = KeyedMemory(1 << 16, 1 << 16)  # as a fresh process: nothing remembered
    fresh = dc.connect(conn.path, store=conn.store)
    with pytest.raises(IntegrityError, match=v1.data_sha):  # not a silent "nothing changed"
        fresh.diff("t", v1.version, v2.version)
    conn.store.delete(key)
    conn.store.write_bytes(key, bytes(raw_v1))  # the footer of the object as written is believed
    assert fresh.diff("t", v1.version, v2.version).columns_changed == ("b",)
