"""The digest does not depend on how the work is split: inline, per column threads, slices."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from datom_core._identity import _cv1, _pipeline


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(rows)
    words = pa.array([f"S-{i:05d}" for i in rng.integers(0, 999, rows)])
    return pa.table(
        {
            "USUBJID": words,
            "AVAL": pa.array(rng.normal(size=rows)),
            "N": pa.array(rng.integers(0, 10**12, rows), pa.int64()),
            "ARM": words.dictionary_encode(),
        }
    )


@pytest.mark.parametrize(
    "rows", [0, 1, _cv1.SMALL_TABLE_ROWS, _cv1.SMALL_TABLE_ROWS + 1, 3 * _pipeline.SLICE_ROWS + 7]
)
def test_inline_threaded_and_sliced_hashing_agree(rows: int) -> None:
    table = _table(rows)
    threaded = _cv1.hash_arrow_table(table, threads=4)
    inline = _cv1.hash_arrow_table(table, threads=1)
    assert threaded == inline
    # Re-chunked into many small chunks (many slices per column): the same digest.
    pieces = table.to_batches(max_chunksize=max(1, rows // 5))
    rechunked = pa.Table.from_batches(pieces, schema=table.schema) if pieces else table
    assert _cv1.hash_arrow_table(rechunked, threads=4) == threaded
