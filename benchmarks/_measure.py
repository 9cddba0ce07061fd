"""Shared helpers for the benchmarks: timing and peak-RSS sampling, ratios only."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


@contextmanager
def peak_rss(interval: float = 0.001):
    """Yield a dict whose ``extra`` is the peak memory growth (bytes) inside the block.

    The larger of: RSS growth (sampled), and Python/numpy allocations (tracemalloc) plus
    Arrow's memory pool growth (sampled). Allocators keep freed pages, so RSS alone
    can miss temporaries that reuse them.
    """
    import tracemalloc

    import pyarrow as pa

    result = {"extra": 0}
    base = rss_bytes()
    arrow_base = pa.total_allocated_bytes()
    arrow_peak = [0]
    stop = threading.Event()
    tracemalloc.start()

    def sample() -> None:
        while not stop.is_set():
            result["extra"] = max(result["extra"], rss_bytes() - base)
            arrow_peak[0] = max(arrow_peak[0], pa.total_allocated_bytes() - arrow_base)
            time.sleep(interval)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield result
    finally:
        stop.set()
        t.join()
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result["extra"] = max(result["extra"], rss_bytes() - base, traced_peak + arrow_peak[0])


def best_of(
    fn: Callable[[], Any], repeat: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Fastest time of ``repeat`` calls (the least noisy estimate), wall time by default."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def ratio_of(
    numerator: Callable[[], Any],
    denominator: Callable[[], Any],
    repeat: int = 7,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Fastest time of ``numerator`` over fastest of ``denominator``, measured interleaved.

    Alternating the two spreads the machine's drift (other processes, frequency changes)
    over both sides, so the ratio is steadier than two separate best-of runs. With
    ``clock=time.process_time`` it compares the CPU time of all the process's threads:
    the work done, which other load on the machine barely changes.
    """
    top, bottom = [], []
    for _ in range(repeat):
        top.append(best_of(numerator, 1, clock))
        bottom.append(best_of(denominator, 1, clock))
    return min(top) / min(bottom)


def file_churn_cost(folder: str | os.PathLike[str], files: int = 200) -> str:
    """How dear making a file is in ``folder`` right now, as a line to print beside ratios.

    On ext4 without a journal (this kind of VM's disk), allocating an inode skips every
    inode of its block group freed in the last one to six minutes (``recently_deleted`` in
    the kernel's ``find_inode_bit``), so after heavy create-and-replace traffic (a test
    run, another benchmark) a new file can cost 20-40x what it does on a quiet disk. The
    datom write path makes ~20 files a write where the filesystem IO manager rewrites one
    in place, so its ratios move with this state; read them with it.
    """
    start = time.perf_counter()
    names = [os.path.join(folder, f".churn-probe-{os.getpid()}-{i}") for i in range(files)]
    for name in names:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    made = time.perf_counter()
    for name in names:
        os.unlink(name)
    per_file = (made - start) / files * 1e6
    return f"making a file here costs {per_file:.0f} us now (a quiet ext4 disk: ~20-30 us)"
