"""String columns hash by the cv1 ``chr`` rule whatever their Arrow layout.

Every digest is checked against a reference encoder written straight from IDENTITY.md (one
mask byte per row, then each value's UTF-8 bytes and a NUL), value by value in Python, so
the vectorised encoder is judged by the specification, not by itself. Every test runs
twice: with the compiled values encoder and with the Arrow fallback.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import datom_core
from datom_core import UnhashableColumnsError
from datom_core._identity import _chr
from tests.cv1_cases import ENCODERS, chr_encoder

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any character but NUL (refused) and lone surrogates (not encodable), so multi-byte UTF-8,
# combining marks and astral-plane characters all occur.
_char = st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))
_value = st.one_of(st.none(), st.just(""), st.text(_char, max_size=6), st.text(_char, max_size=40))
_values = st.lists(_value, max_size=30)


@pytest.fixture(autouse=True, scope="module", params=ENCODERS)
def encoder(request: pytest.FixtureRequest) -> Iterator[str]:
    with chr_encoder(request.param):
        yield request.param


LAYOUTS = (
    "string",
    "large_string",
    "string_view",
    "dictionary",
    "dictionary_large_string",
    "dictionary_unused_levels",
    "dictionary_null_level",
    "chunked",
    "chunked_dictionary",
    "sliced",
    "sliced_large_string",
    "sliced_string_view",
    "sliced_dictionary",
    "null_slots_holding_bytes",
)


def reference_chr(name: str, values: list[str | None]) -> str:
    mask = bytes(1 if v is None else 0 for v in values)
    body = b"".join((b"" if v is None else v.encode("utf-8")) + b"\0" for v in values)
    return hashlib.sha256(b"chr" + name.encode("utf-8") + b"\0" + mask + body).hexdigest()


def reference_data_sha(nrow: int, digests: list[str]) -> str:
    head = b"datom-cv1" + struct.pack("<dd", float(nrow), float(len(digests)))
    return hashlib.sha256(head + "".join(digests).encode("ascii")).hexdigest()


def _null_slots_holding_bytes(values: list[str | None]) -> pa.Array:
    # Arrow lets a null slot span bytes; they are not part of any value.
    data, offsets = bytearray(), [0]
    for v in values:
        data += b"GARBAGE\0" if v is None else v.encode("utf-8")
        offsets.append(len(data))
    bitmap = np.packbits(np.array([v is not None for v in values], bool), bitorder="little")
    return pa.StringArray.from_buffers(
        len(values),
        pa.py_buffer(np.array(offsets, np.int32)),
        pa.py_buffer(bytes(data)),
        pa.py_buffer(bitmap.tobytes()),
    )


def layout(values: list[str | None], kind: str, cut: int) -> pa.ChunkedArray:
    """``values`` as a string column in the Arrow layout ``kind``."""
    pad = ["prefix ü", None, ""]
    if kind in ("string", "large_string", "string_view"):
        return pa.chunked_array([pa.array(values, getattr(pa, kind)())])
    if kind == "dictionary":
        return pa.chunked_array([pa.array(values, pa.string()).dictionary_encode()])
    if kind == "dictionary_large_string":
        return pa.chunked_array([pa.array(values, pa.large_string()).dictionary_encode()])
    if kind in ("dictionary_unused_levels", "dictionary_null_level"):
        levels = sorted({v for v in values if v is not None})
        extra = ["unused level", "level with \0 unused"] if kind.endswith("levels") else [None]
        dictionary = pa.array(extra + levels, pa.string())
        codes = [
            (len(extra) - 1 if kind.endswith("null_level") else None)
            if v is None
            else len(extra) + levels.index(v)
            for v in values
        ]
        return pa.chunked_array(
            [pa.DictionaryArray.from_arrays(pa.array(codes, pa.int16()), dictionary)]
        )
    if kind == "chunked":
        return pa.chunked_array(
            [
                pa.array(values[:cut], pa.string()),
                pa.array([], pa.string()),
                pa.array(values[cut:], pa.string()),
            ],
            type=pa.string(),
        )
    if kind == "chunked_dictionary":
        head, tail = values[:cut], values[cut:]
        return pa.chunked_array(
            [
                pa.array(head, pa.string()).dictionary_encode(),
                pa.array(tail, pa.string()).dictionary_encode(),
            ],
            type=pa.dictionary(pa.int32(), pa.string()),
        )
    if kind.startswith("sliced"):
        inner = kind.removeprefix("sliced").removeprefix("_") or "string"
        whole = pa.array(
            pad + values + pad, pa.string() if inner == "dictionary" else getattr(pa, inner)()
        )
        if inner == "dictionary":
            whole = whole.dictionary_encode()
        return pa.chunked_array([whole.slice(len(pad), len(values))])
    if kind == "null_slots_holding_bytes":
        return pa.chunked_array([_null_slots_holding_bytes(values)])
    raise AssertionError(kind)


def column_sha(column: pa.ChunkedArray, name: str = "s") -> str:
    return datom_core.hash_table(pa.table({name: column})).column_hashes[0].sha


@SETTINGS
@given(_values, st.sampled_from(LAYOUTS), st.data())
def test_every_layout_hashes_by_the_spec(
    values: list[str | None], kind: str, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(values)))
    column = layout(values, kind, cut)
    assert column.to_pylist() == values
    assert column_sha(column) == reference_chr("s", values)


@SETTINGS
@given(_values, st.sampled_from(LAYOUTS), st.integers(1, 4), st.integers(1, 12), st.data())
def test_slice_boundaries_do_not_matter(
    values: list[str | None], kind: str, rows: int, nbytes: int, data: st.DataObject
) -> None:
    """Tiny slices (a few rows, a few bytes) put a boundary everywhere a real one can fall."""
    column = layout(values, kind, data.draw(st.integers(0, len(values))))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_chr, "SLICE_ROWS", rows)
        patch.setattr(_chr, "SLICE_BYTES", nbytes)
        assert column_sha(column) == reference_chr("s", values)


@SETTINGS
@given(
    st.lists(_values, min_size=1, max_size=4).filter(lambda cols: len({len(c) for c in cols}) == 1)
)
def test_string_tables_match_the_spec_in_every_container(columns: list[list[str | None]]) -> None:
    names = [f"col é {i}" for i in range(len(columns))]
    table = pa.table({n: pa.array(c, pa.string()) for n, c in zip(names, columns, strict=True)})
    expected = reference_data_sha(
        len(columns[0]), [reference_chr(n, c) for n, c in zip(names, columns, strict=True)]
    )
    assert datom_core.hash_table(table).data_sha == expected
    assert datom_core.hash_table(table.to_pandas(types_mapper=pd.ArrowDtype)).data_sha == expected
    assert datom_core.hash_table(pl.from_arrow(table)).data_sha == expected  # polars: string_view


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("nrow", [0, 1, 5])
def test_empty_strings_and_all_missing(kind: str, nrow: int) -> None:
    for values in ([""] * nrow, [None] * nrow, ["", None] * nrow):
        assert column_sha(layout(values, kind, nrow // 2)) == reference_chr("s", values)


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.string_view()])
def test_an_all_null_array_without_data_buffer(arrow_type: pa.DataType) -> None:
    values: list[str | None] = [None] * 7
    assert column_sha(pa.chunked_array([pa.nulls(7, arrow_type)])) == reference_chr("s", values)


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view", "dictionary", "sliced"])
def test_values_longer_than_a_slice(kind: str) -> None:
    """Values above the slice byte budget go one per slice, never split, never merged."""
    big = _chr.SLICE_BYTES + 12_345
    values = ["a" * big, None, "é" * (big // 2 + 1), "", "short", "ü€𝄞" * 1000] * 2
    assert column_sha(layout(values, kind, 3)) == reference_chr("s", values)


def test_many_short_strings_match_the_spec() -> None:
    """A million-row-style column spanning many slices, with 10% missing."""
    rng = np.random.default_rng(3)
    words = np.array(["", "Y", "N", "ü", "SUBJ-0001", "日本語テキスト", "x" * 40])
    picks = words[rng.integers(0, len(words), 300_000)].tolist()
    values = [None if m else v for v, m in zip(picks, rng.random(len(picks)) < 0.1, strict=True)]
    assert column_sha(layout(values, "string", 0)) == reference_chr("s", values)
    assert column_sha(layout(values, "chunked", 123_457)) == reference_chr("s", values)
    assert column_sha(layout(values, "dictionary", 0)) == reference_chr("s", values)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_fixed_width_identifiers_match_the_spec(kind: str) -> None:
    """Columns whose values share one byte length take a shortcut; it must agree."""
    ids = [f"STUDY1-{i:04d}-ü" for i in range(2000)]
    for values in (
        ids,
        ids[:1],
        ["AE"] * 500,
        [""] * 9,
        ids[:-1] + ["STUDY1-999-ü"],
        ids[:5] + [None],
    ):
        assert column_sha(layout(values, kind, len(values) // 3)) == reference_chr("s", values)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_chr, "SLICE_ROWS", 7)
            assert column_sha(layout(values, kind, 5)) == reference_chr("s", values)


@pytest.mark.parametrize("kind", ["string", "string_view", "dictionary", "sliced_string_view"])
def test_a_present_nul_is_refused_in_every_layout(kind: str) -> None:
    column = layout(["ok", "bad\0value", None], kind, 1)
    with pytest.raises(UnhashableColumnsError, match="NUL"):
        datom_core.hash_table(pa.table({"s": column}))


def test_nul_only_under_null_slots_or_unused_levels_is_not_refused() -> None:
    values: list[str | None] = ["a", None, "b"]
    assert column_sha(layout(values, "null_slots_holding_bytes", 0)) == reference_chr("s", values)
    assert column_sha(layout(values, "dictionary_unused_levels", 0)) == reference_chr("s", values)
