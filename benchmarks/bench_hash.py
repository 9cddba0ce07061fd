"""data_sha speed and memory against the SHA-256 limit, measured in one run.

Prints (a) the time of ``hash_table`` divided by the time ``hashlib.sha256`` takes over the
same number of payload bytes (target <= 2.0) and (b) the peak extra memory while hashing as
a multiple of the table's Arrow size (target <= 1.5). Run: ``python benchmarks/bench_hash.py``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).parent))
import datom_core  # noqa: E402
from _measure import best_of, peak_rss  # noqa: E402

ROWS = 1_000_000


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


def payload_bytes(table: pa.Table) -> int:
    total = 0
    for column in table.columns:
        if pa.types.is_string(column.type):
            data = pc.sum(pc.binary_length(column)).as_py() or 0
            total += 2 * len(column) + data  # mask byte + NUL per row, plus the UTF-8 bytes
        else:
            total += 8 * len(column)
    return total


def sha256_time(nbytes: int) -> float:
    buf = np.random.default_rng(0).bytes(nbytes)
    return best_of(lambda: hashlib.sha256(buf).hexdigest())


def report(label: str, table: pa.Table) -> None:
    datom_core.hash_table(table)  # warm-up
    t_hash = best_of(lambda: datom_core.hash_table(table))
    t_sha = sha256_time(payload_bytes(table))
    with peak_rss() as peak:
        datom_core.hash_table(table)
    ratio = t_hash / t_sha
    mem = peak["extra"] / table.nbytes
    print(
        f"{label:<28} time/sha256 = {ratio:5.2f} (target <= 2.0)   peak extra memory = {mem:4.2f} x Arrow size (target <= 1.5)"
    )


def main() -> None:
    print(f"hash_table on {ROWS:,} rows, {datom_core.__name__}; ratios measured in this run")
    report("mixed (f64,i64,str,date)", mixed_table())
    report("numeric (4 x f64)", numeric_table())


if __name__ == "__main__":
    main()
