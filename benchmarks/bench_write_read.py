"""write/read overhead against plain pyarrow, measured in one run (ratios only).

Prints, for a 1,000,000-row mixed table on the local store:
  write / (hash_table + pyarrow.parquet.write_table)        target <= 1.5
  read  / (sha256 of the object + pyarrow.parquet.read_table)   target <= 1.05 (the floor:
        the bytes are verified before any parser sees them)
  read  / pyarrow.parquet.read_table                         target <= 1.3
  none re-write / (hash_table + reading current metadata)    target ~<= 1 (plus a git fetch)
and the number of store reads needed to list 200 tables (target: 1), and a small write
into those 200 tables (median ms) with the accelerators and with ``DATOM_PLAIN=1`` (their
plain paths), interleaved.

Then, beside the table formats (each measured in this run, all in turn with plain pyarrow):
  write / pyarrow.parquet.write_table   datom (target <= 1.25), with DATOM_PLAIN=1, the
                                        floor (hash_table and write_table on two threads),
                                        deltalake, pyiceberg
  read  / pyarrow.parquet.read_table    datom (target <= 1.15), with DATOM_PLAIN=1, the
                                        floor (SHA-256, then read_table of those bytes),
                                        deltalake, pyiceberg
deltalake and pyiceberg (a SqlCatalog on sqlite in a temporary folder) are optional:
"not installed" is printed for a missing one. ``--peers-only`` prints only these lines.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        if "--peers-only" not in sys.argv:
            measure(Path(tmp))
        beside_peers(Path(tmp) / "peers")


def _fresh_tables(table: pa.Table, count: int) -> Iterator[pa.Table]:
    """``count`` tables differing from each other in one column, made before the clock
    starts (sharing the other columns' buffers): each write is data no version recorded
    (a full write: encode and upload), and making it is not timed."""
    values = pd.Series(table.column(0).to_numpy())
    made = [table.set_column(0, "value", pa.array(values + i)) for i in range(1, count + 1)]
    return iter(made)


def beside_peers(tmp: Path, repeat: int = 11) -> None:
    """write / pq.write_table and read / pq.read_table for datom and the table formats.

    Every contender and plain pyarrow run in turn, round after round, so the machine's
    drift hits them all alike; each ratio is the best time over the best of pyarrow's (and
    the medians' ratio beside it). Two floors are measured in the same rounds: the write's,
    ``hash_table`` and ``pq.write_table`` run at once on two threads (both release the
    interpreter lock), and the read's, the file's SHA-256 then ``pq.read_table`` of the same
    bytes (verify, then parse).
    """
    tmp.mkdir(parents=True)
    table = mixed_table()
    tables = _fresh_tables(table, 2 * repeat + 3)
    plain = tmp / "plain.parquet"
    pq.write_table(table, plain)

    def plain_write() -> None:
        pq.write_table(table, plain)

    def plain_read() -> None:
        pq.read_table(plain)

    conn = dc.init_repo(tmp / "repo", "PEERS", dc.LocalStore(tmp / "store"))
    conn.write("t", next(tables))
    stored = tmp / "store" / "datom" / "t" / f"{conn.metadata('t')['data_sha']}.parquet"
    writers: dict[str, Any] = {
        "datom": lambda: conn.write("t", next(tables)),
        "datom DATOM_PLAIN=1": _plain(lambda: conn.write("t", next(tables))),
        "floor": lambda: _overlapped(
            lambda: dc.hash_table(table), lambda: pq.write_table(table, tmp / "floor.parquet")
        ),
    }
    readers: dict[str, Any] = {
        "datom": lambda: conn.read("t", as_="arrow"),
        "datom DATOM_PLAIN=1": _plain(lambda: conn.read("t", as_="arrow")),
        "floor": lambda: _verify_then_parse(stored),
    }
    for name, make in (("deltalake", _delta), ("pyiceberg", _iceberg)):
        try:
            writers[name], readers[name] = make(tmp / name, table)
        except ImportError:
            print(f"  {name:20s} not installed")
    for write in writers.values():
        write()  # warm-up: imports, first files
    write_ratios = _interleaved(plain_write, writers, repeat)
    read_ratios = _interleaved(plain_read, readers, repeat)
    print(f"beside the table formats: ratios to plain pyarrow, best of {repeat} in wall time")
    print("(medians' ratio, best CPU time of all threads' ratio); floor: the write's is")
    print("hash_table and write_table on two threads, the read's SHA-256 then the parse")
    for name, (w, w_med, w_cpu) in write_ratios.items():
        r, r_med, r_cpu = read_ratios[name]
        targets = "  (targets <= 1.25, <= 1.15)" if name == "datom" else ""
        print(
            f"  {name:20s} write / pq.write_table = {w:4.2f} ({w_med:4.2f}, CPU {w_cpu:4.2f})"
            f"   read / pq.read_table = {r:4.2f} ({r_med:4.2f}, CPU {r_cpu:4.2f}){targets}"
        )


def _interleaved(
    base: Any, contenders: dict[str, Any], repeat: int
) -> dict[str, tuple[float, float, float]]:
    """Each contender's best wall time / base's best, median / base's median, and best CPU
    time (all threads) / base's best, all run in turns."""
    wall: dict[str, list[float]] = {name: [] for name in ("", *contenders)}
    cpu: dict[str, list[float]] = {name: [] for name in ("", *contenders)}
    for _ in range(repeat):
        for name, fn in (("", base), *contenders.items()):
            start, cpu_start = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
    best, median, best_cpu = min(wall[""]), statistics.median(wall[""]), min(cpu[""])
    return {
        name: (
            min(wall[name]) / best,
            statistics.median(wall[name]) / median,
            min(cpu[name]) / best_cpu,
        )
        for name in contenders
    }


def _overlapped(first: Any, second: Any) -> None:
    """``first`` and ``second`` at once, on this thread and another."""
    worker = threading.Thread(target=second)
    worker.start()
    first()
    worker.join()


def _verify_then_parse(path: Path) -> pa.Table:
    """The read floor: the object's bytes, their SHA-256, then the parser on those bytes."""
    raw = path.read_bytes()
    hashlib.sha256(raw).hexdigest()
    return pq.read_table(pa.BufferReader(raw))


def _plain(fn: Any) -> Any:
    """``fn`` run with ``DATOM_PLAIN=1``: datom's plain paths, its accelerators off."""

    def run() -> Any:
        os.environ["DATOM_PLAIN"] = "1"
        try:
            return fn()
        finally:
            del os.environ["DATOM_PLAIN"]

    return run


def _delta(folder: Path, table: pa.Table) -> tuple[Any, Any]:
    import deltalake

    def write() -> None:
        deltalake.write_deltalake(str(folder), table, mode="overwrite")

    def read() -> None:
        deltalake.DeltaTable(str(folder)).to_pyarrow_table()

    return write, read


def _iceberg(folder: Path, table: pa.Table) -> tuple[Any, Any]:
    from pyiceberg.catalog.sql import SqlCatalog

    folder.mkdir()
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}/warehouse"
    )
    catalog.create_namespace("bench")
    iceberg = catalog.create_table("bench.t", schema=table.schema)

    def write() -> None:
        with warnings.catch_warnings():  # "Delete operation did not match any records"
            warnings.simplefilter("ignore")
            iceberg.overwrite(table)

    def read() -> None:
        catalog.load_table("bench.t").scan().to_arrow()

    return write, read


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
        f"  plain: {ratio_of(_plain(datom_write), baseline_write):5.2f}"
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
    fast_ms, plain_ms = small_writes(small, table.slice(0, 10))
    print(f"small write at 200 tables (median ms)  = {fast_ms:5.1f}  plain: {plain_ms:5.1f}")


def small_writes(conn: dc.Connection, rows: pa.Table, n: int = 41) -> tuple[float, float]:
    """Median ms of a small write (new data each time) into ``conn``, with the
    accelerators and with ``DATOM_PLAIN=1``, alternating so machine drift hits both."""
    counter = iter(range(10**6))
    times: dict[bool, list[float]] = {False: [], True: []}

    def write() -> None:
        i = next(counter)
        conn.write("t000", rows.set_column(0, "value", pd.Series(rows.column(0).to_numpy()) + i))

    for _ in range(n):
        for is_plain in (False, True):
            run = _plain(write) if is_plain else write
            start = time.perf_counter()
            run()
            times[is_plain].append(time.perf_counter() - start)
    return statistics.median(times[False]) * 1e3, statistics.median(times[True]) * 1e3


if __name__ == "__main__":
    main()
