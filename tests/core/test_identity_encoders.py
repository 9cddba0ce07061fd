"""The compiled ``chr`` values encoder and its Arrow fallback write the same bytes.

Both are judged, payload byte for payload byte, against a slow reference written here
from IDENTITY.md (each value's UTF-8 bytes and a NUL; a missing value just the NUL), on
the layouts that stress an encoder working on raw buffers: empty and all-missing arrays,
null slots holding bytes, slices whose offset is not a multiple of 8, 64-bit offsets,
string views, dictionaries, multi-byte UTF-8, values longer than the 16-byte copy block,
and values that end flush with an unpadded data buffer.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import datom_core
from datom_core._identity import _chr
from tests.cv1_cases import ENCODERS, build_table, chr_encoder, load_cases

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

Values = list[str | None]

_HOSTILE_VALUES: dict[str, Values] = {
    "empty_strings": ["", "", ""],
    "all_missing": [None] * 9,
    "one_value": ["x"],
    "multibyte": ["ü", "日本語テキスト", "𝄞𝄞", "e\u0301", None, "€" * 6, "ab"],
    "block_edges": ["a" * 15, "b" * 16, "c" * 17, None, "d" * 32, "e" * 33, "", "f" * 1000],
    "mostly_missing": [None, None, "USUBJID-0001", None, None, None, None, None, "Y", None],
    "codes": ["AE", "CM", "DM", "AE", None, "EX", "LB", "AE", "VS", "", None, "MH"] * 11,
    # More data than the encoder pads on its stack: the last values end flush with it.
    "large_data_short_tail": ["ü" * 3000, "ab", None, "c", "", "d" * 15, "e"],
}

_char = st.characters(exclude_characters="\0", exclude_categories=["Cs"])
_value = st.one_of(st.none(), st.just(""), st.text(_char, max_size=5), st.text(_char, max_size=40))


def reference_values(values: Values) -> bytes:
    return b"".join((b"" if v is None else v.encode("utf-8")) + b"\0" for v in values)


def _exact_buffers(values: Values, garbage: bytes = b"", wide: bool = False) -> pa.Array:
    """A string array whose data buffer is exactly its bytes (no Arrow padding), and whose
    null slots hold ``garbage``: reading one byte too far or one null byte is visible."""
    data, offsets = bytearray(), [0]
    for v in values:
        data += garbage if v is None else v.encode("utf-8")
        offsets.append(len(data))
    valid = np.array([v is not None for v in values], bool)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    kind, width = (pa.LargeStringArray, np.int64) if wide else (pa.StringArray, np.int32)
    return kind.from_buffers(len(values), _exact(np.array(offsets, width)), _exact(data), bitmap)


def _exact(content: Any) -> pa.Buffer:
    """A buffer of exactly these bytes, in memory of exactly that size (numpy's; Arrow's
    pool rounds up to 64 bytes): under the sanitizer run a read past its end is reported."""
    return pa.py_buffer(np.frombuffer(bytes(memoryview(content).cast("B")), np.uint8).copy())


def _sliced(values: Values, arrow_type: pa.DataType, head: int) -> pa.Array:
    pad: Values = ["pad ü", None, "", "padding longer than a block", None, "p", "q", "r", "s"]
    whole = pa.array(pad[:head] + values + pad, arrow_type)
    return whole.slice(head, len(values))


_INT8, _STRING = pa.int8(), pa.string()


def _dictionary(
    values: Values,
    null_level: bool = False,
    index_type: pa.DataType = _INT8,
    level_type: pa.DataType = _STRING,
    stale: int | None = None,
) -> pa.Array:
    """A dictionary array with an unused level (and a missing one with ``null_level``), the
    levels themselves a slice of a longer array, and ``stale`` as the index of null rows."""
    levels: Values = ["unused level", *sorted({v for v in values if v is not None})]
    if null_level:
        levels.append(None)
    missing = len(levels) - 1 if null_level else None
    codes = [missing if v is None else levels.index(v) for v in values]
    dictionary = pa.array(["before", *levels, "after"], level_type).slice(1, len(levels))
    indices = pa.array(codes, index_type)
    if stale is not None and indices.null_count:
        raw = np.array([stale if c is None else c for c in codes], index_type.to_pandas_dtype())
        indices = pa.Array.from_buffers(
            index_type, len(codes), [indices.buffers()[0], pa.py_buffer(raw)]
        )
    return pa.DictionaryArray.from_arrays(indices, dictionary)


LAYOUTS: dict[str, Callable[[Values], pa.Array]] = {
    "string": lambda v: pa.array(v, pa.string()),
    "large_string": lambda v: pa.array(v, pa.large_string()),
    "string_view": lambda v: pa.array(v, pa.string_view()),
    "exact_buffers": _exact_buffers,
    "exact_buffers_large": lambda v: _exact_buffers(v, wide=True),
    "null_slots_holding_bytes": lambda v: _exact_buffers(v, b"GARBAGE\0 LONGER THAN A BLOCK"),
    "null_slots_holding_bytes_large": lambda v: _exact_buffers(v, b"\0\0\xff", wide=True),
    "sliced_by_1": lambda v: _sliced(v, pa.string(), 1),
    "sliced_by_3": lambda v: _sliced(v, pa.string(), 3),
    "sliced_by_9": lambda v: _sliced(v, pa.string(), 9),
    "sliced_large_string": lambda v: _sliced(v, pa.large_string(), 5),
    "sliced_string_view": lambda v: _sliced(v, pa.string_view(), 7),
    "dictionary": _dictionary,
    "dictionary_null_level": lambda v: _dictionary(v, null_level=True),
    "dictionary_uint32": lambda v: _dictionary(v, index_type=pa.uint32()),
    "dictionary_int64_large_levels": lambda v: _dictionary(
        v, index_type=pa.int64(), level_type=pa.large_string()
    ),
    "dictionary_view_levels": lambda v: _dictionary(v, level_type=pa.string_view()),
    "dictionary_stale_indices": lambda v: _dictionary(v, index_type=pa.int16(), stale=-3),
    "dictionary_stale_past_the_levels": lambda v: _dictionary(v, stale=120),
    "sliced_dictionary": lambda v: pa.array(["z", *v, "z"]).dictionary_encode().slice(1, len(v)),
}


def values_payload(arr: pa.Array) -> bytes:
    """The values payload of ``arr`` as the column encoder cuts and writes it."""
    pieces = [piece for part in _chr._byte_slices(arr) for piece in _chr._values_payload(part)]
    return b"".join(bytes(memoryview(piece).cast("B")) for piece in pieces)


@pytest.fixture(params=ENCODERS)
def encoder(request: pytest.FixtureRequest) -> Any:
    with chr_encoder(request.param):
        yield request.param


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", _HOSTILE_VALUES)
def test_hostile_layouts_give_the_reference_payload(encoder: str, layout: str, case: str) -> None:
    values = _HOSTILE_VALUES[case]
    arr = LAYOUTS[layout](values)
    assert arr.to_pylist() == values
    assert values_payload(arr) == reference_values(values)


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.string_view()])
def test_all_missing_without_a_data_buffer(encoder: str, arrow_type: pa.DataType) -> None:
    arr = pa.nulls(5, arrow_type)
    assert values_payload(arr) == b"\0" * 5
    assert values_payload(arr.slice(2)) == b"\0" * 3


def test_an_empty_array_has_an_empty_payload(encoder: str) -> None:
    assert values_payload(pa.array([], pa.string())) == b""
    assert values_payload(pa.array(["a", "b"]).slice(1, 0)) == b""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_value, max_size=60), st.sampled_from(sorted(LAYOUTS)), st.integers(1, 5))
def test_both_encoders_agree_with_the_reference(values: Values, layout: str, rows: int) -> None:
    """Random values in every layout, cut into slices of a few rows (offsets everywhere)."""
    arr = LAYOUTS[layout](values)
    payloads = []
    for kind in ENCODERS:
        with chr_encoder(kind), pytest.MonkeyPatch.context() as patch:
            patch.setattr(_chr, "SLICE_ROWS", rows)
            payloads.append(values_payload(arr))
    assert payloads == [reference_values(values)] * len(ENCODERS)


def test_digests_match_across_chunk_boundaries(encoder: str) -> None:
    rng = np.random.default_rng(5)
    words = np.array(["", "Y", "ü", "SUBJ-0001", "日本語", "x" * 20, "AE"])
    picks = words[rng.integers(0, len(words), 50_000)].tolist()
    values = [None if m else v for v, m in zip(picks, rng.random(len(picks)) < 0.1, strict=True)]
    cuts = [0, 1, 8, 9, 4_099, 50_000]
    chunks = [pa.array(values[a:b], pa.string()) for a, b in zip(cuts, cuts[1:], strict=False)]
    column = pa.chunked_array(chunks, type=pa.string())
    mask = bytes(1 if v is None else 0 for v in values)
    expected = hashlib.sha256(b"chrs\0" + mask + reference_values(values)).hexdigest()
    assert datom_core.hash_table(pa.table({"s": column})).column_hashes[0].sha == expected


@pytest.mark.parametrize("case", load_cases("cv1_tables.json"), ids=lambda c: c["id"])
def test_conformance_vectors_hold_with_either_encoder(encoder: str, case: dict) -> None:
    assert datom_core.hash_table(build_table(case)).data_sha == case["data_sha"]


def _compiled() -> Any:
    if _chr._chrenc is None:
        pytest.skip("the compiled chr encoder is not built here (no C compiler at install)")
    return _chr._chrenc


def test_the_compiled_encoder_refuses_malformed_input() -> None:
    """Offsets out of order or past the data, indices out of range, short buffers: an error,
    never a stray read."""
    values = _compiled().values
    data, out = b"abcdefgh", np.empty(64, np.uint8)
    ok = np.array([0, 2, 5, 8], np.int32)
    assert values(out, ok, data, False, None, 0, None) == 11
    assert bytes(out[:11]) == b"ab\0cde\0fgh\0"
    assert values(out, ok[1:].astype(np.int64), data, True, None, 0, None) == 8
    assert values(out, ok, data, False, None, 0, np.array([2, 0, 2], np.int64)) == 11
    assert bytes(out[:11]) == b"fgh\0ab\0fgh\0"
    bad = [
        (out, np.array([0, 2, 9], np.int32), data, False, None, 0, None),  # past the data
        (out, np.array([0, 5, 2], np.int32), data, False, None, 0, None),  # decreasing
        (out, np.array([-1, 2], np.int32), data, False, None, 0, None),  # negative
        (out, ok, data, True, None, 0, None),  # 32-bit offsets read as 64-bit
        (out, ok[:3].tobytes() + b"x", data, False, None, 0, None),  # not whole offsets
        (out, np.array([], np.int32), data, False, None, 0, None),  # no offsets at all
        (out, ok, data, False, b"", 0, None),  # a validity bitmap too short
        (out, ok, data, False, b"\xff", 6, None),  # ... for its bit offset
        (out, ok, data, False, b"\xff", -1, None),
        (np.empty(12, np.uint8), ok, data, False, None, 0, None),  # no room for the block
        (out, ok, data, False, None, 0, np.array([0, 3], np.int64)),  # index past the values
        (out, ok, data, False, None, 0, np.array([-1], np.int64)),  # negative index
        (out, ok, data, False, None, 0, b"1234567"),  # not whole int64 indices
    ]
    for args in bad:
        with pytest.raises(ValueError, match="malformed"):
            values(*args)
    with pytest.raises(TypeError):
        values(b"read-only", ok, data, False, None, 0, None)


def test_what_null_slots_hold_is_never_used() -> None:
    """A missing row contributes its NUL whatever its offsets or its index say."""
    values = _compiled().values
    out = np.empty(64, np.uint8)
    offsets = np.array([-7, 0, 1, 1000], np.int32)  # rows 0 and 2 are null, pointing nowhere
    assert values(out, offsets, b"ab", False, bytes([0b010]), 0, None) == 4
    assert bytes(out[:4]) == b"\0a\0\0"
    levels = np.array([0, 1, 3], np.int32)
    stale = np.array([1, -5, 99, 0], np.int64)  # rows 1 and 2 are null, with stale indices
    assert values(out, levels, b"abc", False, bytes([0b1001 << 3]), 3, stale) == 7
    assert bytes(out[:7]) == b"bc\0\0\0a\0"


@pytest.mark.parametrize("layout", [k for k in LAYOUTS if "stale" not in k])
def test_a_present_nul_is_refused(encoder: str, layout: str) -> None:
    column = pa.chunked_array([LAYOUTS[layout](["ok", None, "bad\0value", "x"])])
    with pytest.raises(datom_core.UnhashableColumnsError, match="NUL"):
        datom_core.hash_table(pa.table({"s": column}))


class _Recording:
    """The real compiled encoder, counting its calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def values(self, *args: Any) -> int:
        self.calls += 1
        return int(self.inner.values(*args))


def test_the_switch_routes_to_the_encoder_it_names() -> None:
    if _chr._chrenc is None:
        pytest.skip("the compiled chr encoder is not built here (no C compiler at install)")
    recording = _Recording(_chr._chrenc)
    arr = pa.array(["a", None, "bc"] * 100)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_chr, "compiled", recording)
        assert values_payload(arr) == reference_values(arr.to_pylist())
        assert recording.calls > 0
        calls = recording.calls
        patch.setattr(_chr, "compiled", None)
        assert values_payload(arr) == reference_values(arr.to_pylist())
        assert recording.calls == calls


_PROBE = """
import json, pyarrow as pa, datom_core
from datom_core._identity import _chr
column = pa.array(["ü", None, "SUBJ-0001", ""] * 1000)
sha = datom_core.hash_table(pa.table({"s": column})).data_sha
print(json.dumps({"compiled": _chr.compiled is not None, "sha": sha}))
"""


@pytest.mark.parametrize("setting", ["1", "0", ""])
def test_the_environment_variable_forces_the_arrow_path(setting: str) -> None:
    env = {**os.environ, _chr.PURE_ENV: setting}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    probe = json.loads(out.stdout)
    column = pa.array(["ü", None, "SUBJ-0001", ""] * 1000)
    assert probe["sha"] == datom_core.hash_table(pa.table({"s": column})).data_sha
    assert probe["compiled"] is (setting != "1" and _chr._chrenc is not None)


def _installed_from_this_checkout() -> bool:
    # Several "datom" distributions can be visible (the checkout's own egg-info among them):
    # the installed one records where it was installed from.
    root = Path(__file__).resolve().parents[2].as_uri()
    for dist in importlib.metadata.distributions(name="datom"):
        try:
            url = json.loads(dist.read_text("direct_url.json") or "{}").get("url")
        except json.JSONDecodeError:
            continue
        if url == root:
            return True
    return False


def _can_compile() -> bool:
    cc = (sysconfig.get_config_var("CC") or "").split()
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return bool(cc) and shutil.which(cc[0]) is not None and headers.exists()


def test_the_install_built_the_compiled_encoder() -> None:
    """Where this checkout was installed with a C compiler at hand, the optional extension
    must have been built: otherwise the fast path would silently never run (nor be tested)."""
    if not (_installed_from_this_checkout() and _can_compile()):
        pytest.skip("this interpreter's datom was not installed from this checkout")
    assert _chr._chrenc is not None, "rebuild it: pip install -e . (from this checkout)"
