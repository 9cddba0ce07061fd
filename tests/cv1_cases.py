"""Build the conformance vectors of ``fixtures/cv1_tables.json`` as Arrow tables, and pick
the ``chr`` values encoder (compiled or the Arrow fallback) a test runs with.

``DATOM_TEST_CHRENC=<path>`` makes "compiled" mean the extension module at ``path``
instead of the installed one: ``test_identity_sanitized`` runs the encoder tests on a build
instrumented with AddressSanitizer and UBSan that way."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from datom_core._identity import _chr

FIXTURES = Path(__file__).parent / "fixtures"

ENCODERS = ("compiled", "arrow")
"""The two ``chr`` values encoders, which must write the same bytes."""

TEST_BUILD_ENV = "DATOM_TEST_CHRENC"


def _use_test_build(path: str) -> None:
    spec = importlib.util.spec_from_file_location("datom_core._identity._chrenc", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{TEST_BUILD_ENV}={path} is not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _chr._chrenc = module
    _chr.compiled = module


if os.environ.get(TEST_BUILD_ENV):
    _use_test_build(os.environ[TEST_BUILD_ENV])


@contextmanager
def chr_encoder(kind: str) -> Iterator[None]:
    """Encode string values with ``kind`` (one of :data:`ENCODERS`) inside the block."""
    if kind == "compiled" and _chr._chrenc is None:
        pytest.skip("the compiled chr encoder is not built here (no C compiler at install)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_chr, "compiled", _chr._chrenc if kind == "compiled" else None)
        yield


def load_cases(name: str) -> list[dict]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _ints(values: list) -> list:
    return [None if v is None else int(v) for v in values]


def _floats(values: list, arrow_type: pa.DataType) -> pa.Array:
    bits = np.array(
        [0 if v is None else struct.unpack("<Q", bytes.fromhex(v))[0] for v in values],
        dtype=np.uint64,
    )
    mask = np.array([v is None for v in values], dtype=bool)
    array = pa.array(bits.view(np.float64), mask=mask, type=pa.float64())
    return array if arrow_type == pa.float64() else array.cast(arrow_type)


def build_column(col: dict, tz: str | None) -> pa.Array:
    kind, values = col["type"], col["values"]
    if kind in ("float64", "float32"):
        return _floats(values, getattr(pa, kind)())
    if kind in ("int8", "int16", "int32", "uint8", "uint16"):
        return pa.array(values, getattr(pa, kind)())
    if kind == "int64":
        return pa.array(_ints(values), pa.int64())
    if kind == "bool":
        return pa.array(values, pa.bool_())
    if kind in ("string", "large_string"):
        return pa.array(values, getattr(pa, kind)())
    if kind == "category":
        levels = col["levels"]
        codes = pa.array([None if v is None else levels.index(v) for v in values], pa.int32())
        return pa.DictionaryArray.from_arrays(codes, pa.array(levels, pa.string()))
    if kind == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    unit = kind.rsplit("_", 1)[-1]
    ticks = pa.array(_ints(values), pa.int64())
    if kind.startswith("timestamp_"):
        return ticks.cast(pa.timestamp(unit, tz=tz))
    if kind.startswith("duration_"):
        return ticks.cast(pa.duration(unit))
    if kind == "time_us":
        return ticks.cast(pa.time64("us"))
    raise ValueError(f"unknown conformance column type {kind!r}")


def build_table(case: dict) -> pa.Table:
    arrays = [build_column(c, case.get("tz")) for c in case["columns"]]
    return pa.Table.from_arrays(arrays, names=[c["name"] for c in case["columns"]])
