"""data_sha speed and memory against the SHA-256 limit, measured in one run.

For each table, prints (a) the time of ``hash_table`` divided by the time ``hashlib.sha256``
takes over the same number of payload bytes, both measured interleaved (best of N), in wall
time and in CPU time (all threads: the work done, which other load barely changes), and
(b) the peak extra memory while hashing as a multiple of the table's Arrow size (target
<= 1.5). Tables of 1,000,000 rows: numeric (4 x float64), mixed (float64, int64, one
string column, date), one short-string column (with a float64 and a date) and the
string-heavy shape of clinical data (4 short-string columns of 3-12 bytes, 10% missing,
with a float64 and a date; target <= 1.5). Run: ``python benchmarks/bench_hash.py``;
``DATOM_CV1_PURE=1`` measures the Arrow fallback of the compiled string encoder.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).parent))
import datom_core  # noqa: E402
from _measure import peak_rss, ratio_of  # noqa: E402
from datom_core._identity import _chr  # noqa: E402

ROWS = 1_000_000
REPEAT = 11


def mixed_table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(42)
    words = np.array([f"SUBJ-{i:05d}" for i in range(5000)])
    strings = pa.array(words[rng.integers(0, len(words), rows)])
    strings = pc.if_else(pa.array(rng.random(rows) < 0.05), pa.nulls(rows, pa.string()), strings)
    return pa.table(
        {
            "value": rng.normal(size=rows),
            "id": pa.array(rng.integers(0, 10**12, rows), pa.int64()),
            "subject": strings,
            "visit": pa.array(rng.integers(18000, 20000, rows).astype("int32")).cast(pa.date32()),
        }
    )


def numeric_table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({f"x{i}": rng.normal(size=rows) for i in range(4)})


def short_strings(
    rng: np.random.Generator, rows: int, missing: float = 0.1, lo: int = 3, hi: int = 12
) -> pa.Array:
    """Random upper-case ASCII codes of ``lo``..``hi`` bytes, a ``missing`` share null."""
    lengths = rng.integers(lo, hi + 1, rows)
    valid = rng.random(rows) >= missing
    lengths[~valid] = 0
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("A"), ord("Z") + 1, int(offsets[-1]), dtype=np.uint8)
    bitmap = np.packbits(valid, bitorder="little")
    return pa.StringArray.from_buffers(
        rows, pa.py_buffer(offsets), pa.py_buffer(data), pa.py_buffer(bitmap)
    )


def string_table(rows: int = ROWS, string_columns: int = 4) -> pa.Table:
    rng = np.random.default_rng(11)
    columns: dict[str, pa.Array] = {
        f"s{i}": short_strings(rng, rows) for i in range(string_columns)
    }
    columns["value"] = pa.array(rng.normal(size=rows))
    columns["day"] = pa.array(rng.integers(18000, 20000, rows).astype("int32")).cast(pa.date32())
    return pa.table(columns)


def payload_bytes(table: pa.Table) -> int:
    total = 0
    for column in table.columns:
        if pa.types.is_string(column.type):
            data = pc.sum(pc.binary_length(column)).as_py() or 0
            total += 2 * len(column) + data  # mask byte + NUL per row, plus the UTF-8 bytes
        else:
            total += 8 * len(column)
    return total


def report(label: str, table: pa.Table, target: float) -> None:
    buf = np.random.default_rng(0).bytes(payload_bytes(table))
    datom_core.hash_table(table)  # warm-up

    def ours() -> None:
        datom_core.hash_table(table)

    def floor() -> None:
        hashlib.sha256(buf).hexdigest()

    ratio = ratio_of(ours, floor, repeat=REPEAT)
    cpu = ratio_of(ours, floor, repeat=REPEAT, clock=time.process_time)
    with peak_rss() as peak:
        datom_core.hash_table(table)
    mem = peak["extra"] / table.nbytes
    print(
        f"{label:<34} time/sha256 = {ratio:5.2f} (target <= {target})  cpu/sha256 = {cpu:5.2f}"
        f"  peak extra memory = {mem:4.2f} x Arrow size (target <= 1.5)"
    )


def main() -> None:
    print(
        f"hash_table on {ROWS:,} rows; ratios measured in this run, interleaved best of "
        f"{REPEAT}. time: wall clock (threads on {os.cpu_count()} cores); cpu: CPU time of all "
        "threads (the work, steady under other load)"
    )
    print("chr values encoder:", "compiled" if _chr.compiled else "Arrow (the fallback)")
    report("numeric (4 x f64)", numeric_table(), 2.0)
    report("mixed (f64,i64,str,date)", mixed_table(), 2.0)
    report("one short string (str,f64,date)", string_table(string_columns=1), 1.5)
    report("string-heavy (4 x str,f64,date)", string_table(), 1.5)


if __name__ == "__main__":
    main()
