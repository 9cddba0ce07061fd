"""Writing a table to a local parquet or csv file, in batches, crash-safely."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from datom_core import StoreError
from datom_core.cli._progress import Tracker

__all__ = ["EXPORT_FORMATS", "FORMAT_NAMES", "export_format", "stream_export", "write_export"]

#: Output formats of ``datom read --out``, by file extension.
EXPORT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
#: The names ``--format`` takes.
FORMAT_NAMES = ("parquet", "csv", "tsv")
# Rows per written batch: bounded extra memory and a smooth progress bar.
_BATCH_ROWS = 64 * 1024


def export_format(path: Path) -> str | None:
    """``parquet``, ``csv`` or ``tsv`` from the file extension; ``None`` if unsupported."""
    return EXPORT_FORMATS.get(path.suffix.lower())


def write_export(table: pa.Table, path: Path, fmt: str, progress: Tracker) -> None:
    """Write ``table`` to ``path`` as ``fmt``; a failure never leaves a partial file there."""
    temp = path.with_name(f".{path.name}.datom-{secrets.token_hex(4)}.partial")
    progress.phase(f"writing {path.name}", total=table.num_rows)
    try:
        with _writer(temp, table.schema, fmt) as writer:
            for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
                writer.write_batch(batch)
                progress.advance(batch.num_rows)
        os.replace(temp, path)
    except (OSError, pa.ArrowException) as e:
        raise StoreError(
            f"cannot write {path} ({type(e).__name__}: {e}); nothing was written"
        ) from e
    finally:
        temp.unlink(missing_ok=True)


def stream_export(table: pa.Table, sink: BinaryIO, fmt: str, progress: Tracker) -> None:
    """Write ``table`` as ``fmt`` to an open binary stream (stdout: nothing to seek back to,
    so parquet is written front to back, its footer last)."""
    progress.phase(f"writing {fmt} to stdout", total=table.num_rows)
    try:
        out = pa.PythonFile(sink, mode="w")
        with _writer(out, table.schema, fmt) as writer:
            for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
                writer.write_batch(batch)
                progress.advance(batch.num_rows)
        sink.flush()
    except BrokenPipeError:
        return  # the reader stopped reading (| head): what it wanted was written
    except (OSError, pa.ArrowException) as e:
        raise StoreError(f"cannot write {fmt} to stdout ({type(e).__name__}: {e})") from e


def _writer(path: Path | pa.NativeFile, schema: pa.Schema, fmt: str) -> pa.ipc.RecordBatchWriter:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetWriter(path, schema)
    import pyarrow.csv as pacsv

    options = pacsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ",")
    return pacsv.CSVWriter(path, schema, write_options=options)
