"""Parquet through ``pyarrow.parquet``: one file (never a dataset directory), read as stored."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from datom_core._onboard._readers._common import Source


def read_parquet(source: Source) -> pa.Table:
    """Read one parquet file into a table, with the column types it was written with."""
    try:
        if source.is_local:
            return pq.ParquetFile(source.path).read()
        with source.open() as handle:
            return pq.ParquetFile(handle).read()
    except (pa.ArrowException, OSError) as e:
        raise source.corrupt(e) from e
