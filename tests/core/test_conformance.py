"""Every conformance vector from the R implementation hashes identically here."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import datom_core
from datom_core._project._parse import parse_metadata
from tests.cv1_cases import build_table, load_cases

TABLE_CASES = load_cases("cv1_tables.json")
META_CASES = load_cases("format2_metadata.json")


def _expected(case: dict) -> tuple[str, list[tuple[str, str]]]:
    return case["data_sha"], [(c["name"], c["sha"]) for c in case["column_hashes"]]


def _observed(data: object) -> tuple[str, list[tuple[str, str]]]:
    h = datom_core.hash_table(data)
    return h.data_sha, [(c.name, c.sha) for c in h.column_hashes]


def test_every_vector_is_present() -> None:
    ids = {c["id"] for c in TABLE_CASES}
    assert {"golden-mixed", "golden-numeric", "golden-int64-bits"} <= ids
    assert len(TABLE_CASES) == 91 and len(META_CASES) == 75
    assert {"r020-plain", "r020-plain-extra-name", "r020-plain-future-field"} <= {
        c["id"] for c in META_CASES
    }


@pytest.mark.parametrize("case", TABLE_CASES, ids=[c["id"] for c in TABLE_CASES])
def test_arrow_table_matches_r(case: dict) -> None:
    table = build_table(case)
    assert _observed(table) == _expected(case)
    h = datom_core.hash_table(table)
    assert (h.nrow, h.ncol) == (case["nrow"], case["ncol"])


@pytest.mark.parametrize("case", TABLE_CASES, ids=[c["id"] for c in TABLE_CASES])
def test_record_batch_and_chunked_match_r(case: dict) -> None:
    table = build_table(case)
    assert _observed(table.to_batches()[0] if table.num_rows else table) == _expected(case)
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1)]) if table.num_rows > 1 else table
    assert _observed(chunked) == _expected(case)


@pytest.mark.parametrize("case", TABLE_CASES, ids=[c["id"] for c in TABLE_CASES])
def test_arrow_backed_pandas_matches_r(case: dict) -> None:
    df = build_table(case).to_pandas(types_mapper=pd.ArrowDtype)
    assert _observed(df) == _expected(case)


@pytest.mark.parametrize("case", TABLE_CASES, ids=[c["id"] for c in TABLE_CASES])
def test_polars_matches_r(case: dict) -> None:
    df = pl.from_arrow(build_table(case))
    assert _observed(df) == _expected(case)


@pytest.mark.parametrize("case", META_CASES, ids=[c["id"] for c in META_CASES])
def test_metadata_matches_r(case: dict) -> None:
    stored = json.loads(case["stored_json"])
    assert datom_core.canonical_json(stored) == case["canonical_json"]
    assert datom_core.metadata_sha(stored) == case["metadata_sha"]


# The cases that are whole metadata documents (the others exercise the encoding alone).
DOCUMENTS = [c for c in META_CASES if isinstance(json.loads(c["stored_json"]).get("data_sha"), str)]


@pytest.mark.parametrize("case", DOCUMENTS, ids=[c["id"] for c in DOCUMENTS])
def test_the_parsed_record_carries_the_same_version(case: dict) -> None:
    # The one parser computes the version once; it must be the vector's.
    record = parse_metadata(case["stored_json"].encode(), key="case")
    assert record.version == case["metadata_sha"]


def test_a_key_outside_the_allowlist_no_longer_moves_the_version() -> None:
    [case] = [c for c in META_CASES if "format1_metadata_sha" in c]
    stored = json.loads(case["stored_json"])
    assert case["format1_metadata_sha"] != case["metadata_sha"]
    assert datom_core.metadata_sha(stored) == case["metadata_sha"]


def test_strings_escape_like_jsonlite() -> None:
    # R datom hashes jsonlite::toJSON(auto_unbox = TRUE), which writes "</" as "<\/";
    # the expected text is what R 0.2.0's jsonlite printed for the same list.
    fields = {"colnames": ["a</b", "x\\y", "/"], "data_sha": "x"}
    expected = '{"colnames":["a<\\/b","x\\\\y","/"],"data_sha":"x"}'
    assert datom_core.canonical_json(fields) == expected
    assert datom_core.metadata_sha(fields) == hashlib.sha256(expected.encode()).hexdigest()
