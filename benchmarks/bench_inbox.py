"""Onboarding speed: scanning a large unchanged inbox, and onboarding one 100 MB CSV.

(a) An inbox of 500 files, all already onboarded: a scan must cost one manifest read plus
    a ``stat`` per file. Prints the time per file, the time relative to a bare
    ``os.scandir`` + ``stat`` of the folder, and what the scan read (manifest, histories,
    store objects, files hashed).
(b) A ~100 MB CSV onboarded into a fresh project (``conn.sync()``: scan, hash, read, write
    the version): prints its time relative to ``pyarrow.csv.read_csv`` + ``pyarrow.parquet
    .write_table`` of the same file (target <= 1.5), and its peak memory relative to the
    size of the Arrow table (each measured in a fresh process).

(c) The CDISC pilot's SAS transport files (``tests/fixtures/cdisc``, the xpt files the
    installed datom reads) onboarded into a fresh project by one ``conn.sync()``: prints
    its time relative to a bare ``pyreadstat.read_xport`` of the same files (target <= 2.0)
    and its peak memory relative to the size of the Arrow tables.

Run: ``python benchmarks/bench_inbox.py [n_files] [csv_mb]`` (defaults 500 and 100; 0 skips
(a) or (b)).
Setting up (a) writes every file once, one commit each: that takes a while.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import datom_core as dc  # noqa: E402
from _measure import best_of, peak_rss  # noqa: E402
from datom_core._git import MetadataRepo  # noqa: E402
from datom_core._onboard import _inbox, _scan  # noqa: E402
from datom_core._project import _layout as L  # noqa: E402

_HOUR_NS = 3600 * 10**9


class CountingStore(dc.LocalStore):
    """A local store that counts the objects read from it."""

    reads = 0

    def read_bytes(self, key: str) -> bytes:
        CountingStore.reads += 1
        return super().read_bytes(key)

    def open_read(self, key: str) -> Any:
        CountingStore.reads += 1
        return super().open_read(key)


class CountingRepo(MetadataRepo):
    """A clone that records the working-tree documents read from it."""

    reads: list[str] = []

    def read(self, relpath: str) -> bytes | None:
        CountingRepo.reads.append(relpath)
        return super().read(relpath)


def _settle(path: Path) -> None:
    # As an extract dropped an hour ago: outside the SHA cache's racy window.
    mtime = path.stat().st_mtime_ns - _HOUR_NS
    os.utime(path, ns=(mtime, mtime))


def bench_scan(workdir: Path, n_files: int) -> None:
    store = CountingStore(workdir / "store")
    dc.init_repo(workdir / "repo", "BENCH", store)
    conn = dc.Connection("BENCH", store, CountingRepo(workdir / "repo"))
    inbox = conn.path / L.INBOX
    for i in range(n_files):
        path = inbox / f"t{i:04d}.csv"
        path.write_text(f"USUBJID,AGE\nS-{i:04d},{20 + i % 60}\n")
        _settle(path)
    start = time.perf_counter()
    results = conn.sync()
    assert {r.status for r in results} == {"synced"}, "setup failed"
    print(f"setup: onboarded {n_files} files in {time.perf_counter() - start:.1f} s")

    hashed = []
    plain_sha = _inbox.file_sha256
    hashers = (_inbox, _scan)  # each module that calls file_sha256 holds its own name

    def counting_sha(fs: Any, path: str) -> str:  # instruments the benchmark only
        hashed.append(path)
        return plain_sha(fs, path)

    for module in hashers:
        module.file_sha256 = counting_sha  # type: ignore[attr-defined]
    CountingStore.reads, CountingRepo.reads[:] = 0, []
    rows = conn.scan_inbox()
    assert {r.status for r in rows} == {"unchanged"}, "expected an unchanged inbox"
    repo_reads, store_reads = list(CountingRepo.reads), CountingStore.reads
    for module in hashers:
        module.file_sha256 = plain_sha  # type: ignore[attr-defined]

    scan_time = best_of(conn.scan_inbox, repeat=5)

    def bare_listing() -> None:
        with os.scandir(inbox) as it:
            for entry in it:
                entry.stat()

    listing_time = best_of(bare_listing, repeat=5)
    print(f"scan of {n_files} unchanged files:")
    print(f"  time per file                 {scan_time / n_files * 1e6:8.1f} us")
    print(f"  relative to scandir + stat    {scan_time / listing_time:8.1f} x")
    print(f"  git documents read            {len(repo_reads):8d}  {sorted(set(repo_reads))}")
    print(f"  store objects read            {store_reads:8d}")
    print(f"  files hashed                  {len(hashed):8d}")


def make_csv(path: Path, megabytes: int) -> None:
    rows = megabytes * 1_000_000 // 50  # ~50 bytes per line
    rng = np.random.default_rng(1)
    subjects = np.array([f"STUDY001-{i:05d}" for i in range(20_000)])
    arms = np.array(["Placebo", "Drug 10 mg", "Drug 20 mg"])
    table = pa.table(
        {
            "USUBJID": subjects[rng.integers(0, len(subjects), rows)],
            "VISITNUM": rng.integers(1, 20, rows),
            "AVAL": np.round(rng.normal(100, 15, rows), 3),
            "ARM": arms[rng.integers(0, 3, rows)],
            "ADT": pa.array(rng.integers(18000, 20000, rows).astype("int32")).cast(pa.date32()),
        }
    )
    pacsv.write_csv(table, path)


def arrow_baseline(csv: Path, out: Path) -> pa.Table:
    table = pacsv.read_csv(csv)
    pq.write_table(table, out)
    return table


def onboard_fresh(csv: Path, workdir: Path) -> list[Any]:
    conn = dc.init_repo(workdir / "repo", "BENCH", dc.LocalStore(workdir / "store"))
    target = conn.path / L.INBOX / csv.name
    os.link(csv, target)  # the same bytes, no copy
    _settle(target)
    start = time.perf_counter()
    results = conn.sync()
    elapsed = time.perf_counter() - start
    assert [(r.status, r.change) for r in results] == [("synced", "full")], results
    return [elapsed]


XPT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cdisc"


def readable_xpt() -> list[Path]:
    """The fixture xpt files this datom reads (an older one refuses the Windows-1252 TS)."""
    files = []
    for path in sorted(XPT_DIR.glob("*.xpt")):
        try:
            dc.read_extract(path)
        except dc.OnboardingError:
            continue
        files.append(path)
    return files


def sync_xpt(files: list[Path], workdir: Path) -> float:
    conn = dc.init_repo(workdir / "repo", "BENCH", dc.LocalStore(workdir / "store"))
    for path in files:
        target = conn.path / L.INBOX / path.name
        os.link(path, target)
        _settle(target)
    start = time.perf_counter()
    results = conn.sync()
    elapsed = time.perf_counter() - start
    assert {r.status for r in results} == {"synced"}, results
    return elapsed


def pyreadstat_baseline(files: list[Path]) -> int:
    import pyreadstat

    cells = 0
    for path in files:
        frame, _ = pyreadstat.read_xport(str(path), encoding="cp1252")
        cells += frame.size
    return cells


def bench_xpt(workdir: Path) -> None:
    files = readable_xpt()
    arrow_bytes = sum(dc.read_extract(p).nbytes for p in files)
    base = best_of(lambda: pyreadstat_baseline(files), repeat=5)
    runs = [sync_xpt(files, workdir / f"xpt{i}") for i in range(5)]
    datom_peak = _child("xpt-datom", XPT_DIR, workdir / "mem-xpt-datom")
    bare_peak = _child("xpt-bare", XPT_DIR, workdir / "mem-xpt-bare")
    names = " ".join(p.stem for p in files)
    print(f"onboarding {len(files)} CDISC xpt files ({names}; Arrow {arrow_bytes / 1e6:.1f} MB):")
    print(f"  time / pyreadstat.read_xport          {min(runs) / base:6.2f}  (target <= 2.0)")
    print(f"  peak memory / Arrow table size        {datom_peak / arrow_bytes:6.2f}")
    print(f"  (pyreadstat.read_xport alone:         {bare_peak / arrow_bytes:6.2f})")


def measure_child(kind: str, csv: Path, workdir: Path) -> None:
    """In a fresh process: peak extra RSS of one run."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = readable_xpt() if kind.startswith("xpt") else []
    with peak_rss() as peak:
        if kind == "datom":
            onboard_fresh(csv, workdir)
        elif kind == "xpt-datom":
            sync_xpt(files, workdir)
        elif kind == "xpt-bare":
            pyreadstat_baseline(files)
        else:
            arrow_baseline(csv, workdir / "out.parquet")
    print(json.dumps({"peak": peak["extra"]}))


def _child(kind: str, csv: Path, workdir: Path) -> int:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(csv), str(workdir)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(json.loads(out.strip().splitlines()[-1])["peak"])


def bench_csv(workdir: Path, megabytes: int) -> None:
    csv = workdir / "lb.csv"
    make_csv(csv, megabytes)
    size_mb = csv.stat().st_size / 1e6
    arrow_bytes = pacsv.read_csv(csv).nbytes

    base = best_of(lambda: arrow_baseline(csv, workdir / "baseline.parquet"), repeat=3)
    runs = [onboard_fresh(csv, workdir / f"run{i}")[0] for i in range(3)]
    datom_peak = _child("datom", csv, workdir / "mem-datom")
    arrow_peak = _child("arrow", csv, workdir / "mem-arrow")
    print(f"onboarding a {size_mb:.0f} MB CSV (Arrow table {arrow_bytes / 1e6:.0f} MB):")
    print(f"  time / (read_csv + write parquet)     {min(runs) / base:6.2f}  (target <= 1.5)")
    print(f"  peak memory / Arrow table size        {datom_peak / arrow_bytes:6.2f}")
    print(f"  (read_csv + write parquet alone:      {arrow_peak / arrow_bytes:6.2f})")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        measure_child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        return
    n_files = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with tempfile.TemporaryDirectory(prefix="datom-bench-inbox-") as tmp:
        if n_files:
            bench_scan(Path(tmp) / "scan", n_files)
        if megabytes:
            bench_csv(Path(tmp), megabytes)
        bench_xpt(Path(tmp))


if __name__ == "__main__":
    main()
