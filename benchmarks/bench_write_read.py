"""write/read overhead against plain pyarrow, measured in one run (ratios only).

Prints, for a 1,000,000-row mixed table on the local store:
  write / (hash_table + pyarrow.parquet.write_table)        target <= 1.5
  read  / (sha256 of the object + pyarrow.parquet.read_table)   target <= 1.05 (the floor:
        the bytes are verified before any parser sees them)
  read  / pyarrow.parquet.read_table                         target <= 1.3
  none re-write / (hash_table + reading current metadata)    target ~<= 1 (plus a git fetch)
and the number of store reads needed to list 200 tables (target: 1).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import datom_core as dc  # noqa: E402
from _measure import ratio_of  # noqa: E402
from bench_hash import mixed_table  # noqa: E402


class CountingStore(dc.LocalStore):
    """A local store that counts reads, to show what listing costs."""

    reads = 0

    def read_bytes(self, key: str) -> bytes:
        CountingStore.reads += 1
        return super().read_bytes(key)


def main() -> None:
    print("1,000,000-row mixed table, local store; ratios measured in this run, interleaved")
    with tempfile.TemporaryDirectory(prefix="datom-bench-") as tmp:
        measure(Path(tmp))


def measure(tmp: Path) -> None:
    table = mixed_table()
    conn = dc.init_repo(tmp / "repo", "BENCH", dc.LocalStore(tmp / "store"))

    def baseline_write() -> None:
        dc.hash_table(table)
        pq.write_table(table, tmp / "plain.parquet")

    counter = iter(range(10**6))

    def datom_write() -> None:
        # new data each time (one changed value), so every write is a full write
        i = next(counter)
        conn.write("t", table.set_column(0, "value", pd.Series(table.column(0).to_numpy()) + i))

    datom_write()  # warm-up: first-write costs (directories, imports) are not the steady state
    print(
        f"write / (hash + parquet write)       = {ratio_of(datom_write, baseline_write):5.2f}  (target <= 1.5)"
    )

    key = dc.LocalStore(tmp / "store").url.removeprefix("file://")
    current = conn.metadata("t")
    path = Path(key) / "t" / f"{current['data_sha']}.parquet"

    def verify_then_parse() -> None:
        # The floor in plain Python: the object's bytes, their SHA-256, then the parser.
        raw = path.read_bytes()
        hashlib.sha256(raw).hexdigest()
        pq.read_table(pa.BufferReader(raw))

    def datom_read() -> None:
        conn.read("t", as_="arrow")

    floor_ratio = ratio_of(datom_read, verify_then_parse, repeat=15)
    floor_cpu = ratio_of(datom_read, verify_then_parse, repeat=15, clock=time.process_time)
    print(
        f"read(arrow) / (sha256 + read_table)   = {floor_ratio:5.2f}  (target <= 1.05; "
        f"in CPU time {floor_cpu:4.2f})"
    )
    read_ratio = ratio_of(lambda: conn.read("t", as_="arrow"), lambda: pq.read_table(path))
    print(f"read(arrow) / pyarrow read_table      = {read_ratio:5.2f}  (target <= 1.3)")
    pandas_ratio = ratio_of(lambda: conn.read("t"), lambda: pq.read_table(path).to_pandas())
    print(f"read(pandas) / read_table().to_pandas = {pandas_ratio:5.2f}")

    conn.write("same", table)
    none_ratio = ratio_of(
        lambda: conn.write("same", table), lambda: (dc.hash_table(table), conn.metadata("same"))
    )
    print(f"none re-write / (hash + read metadata) = {none_ratio:5.2f}  (includes one git fetch)")

    small = dc.init_repo(tmp / "repo200", "MANY", CountingStore(tmp / "store200"))
    start = time.perf_counter()
    for i in range(200):
        small.write(f"t{i:03d}", table.slice(0, 10))
    build = time.perf_counter() - start
    CountingStore.reads = 0
    listed = small.tables()
    print(
        f"tables() over {len(listed)} tables          = {CountingStore.reads} store read(s)  (target 1)"
    )
    print(f"(200 small writes took {build / 200 * 1000:.0f} ms each)")


if __name__ == "__main__":
    main()
