"""Writer processes SIGKILLed at a random moment: the round the seeded kill test
(``tests/core/test_concurrency_clones.py``) and the stress run
(``benchmarks/stress_writers.py``) share.

A store is named by a small picklable ``spec`` (spawned writers rebuild it):
``{"kind": "local", "path": ...}`` or ``{"kind": "s3", "bucket": ..., "prefix": ...,
"endpoint": ...}``.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

import datom_core as dc
from datom_core._git import _maintenance as maint

TABLES = ("t0", "t1", "t2")


def store_of(spec: dict[str, str]) -> dc.Store:
    if spec["kind"] == "s3":
        return dc.S3Store(spec["bucket"], prefix=spec["prefix"], endpoint_url=spec["endpoint"])
    return dc.LocalStore(spec["path"])


def killable_writer(clone: str, spec: dict[str, str], worker: int, writes: int, log: str) -> None:
    """Writes to three tables, compacting at every push (the widest races), each version
    logged once it is returned (after a first line ``ready``)."""
    maint.LOOSE_BUDGET, maint.PACK_BUDGET = 4, 2
    maint.REMOTE_CHECK_EVERY = maint.CLONE_CHECK_EVERY = 1
    conn = dc.connect(clone, store=store_of(spec))
    with open(log, "a", buffering=1) as out:
        out.write("ready\n")
        for table, data in worker_writes(worker, writes):
            out.write(f"{table} {conn.write(table, data).version}\n")


def worker_writes(worker: int, writes: int) -> Iterator[tuple[str, pa.Table]]:
    """Writer ``worker``'s ``writes`` writes: a table (in turn) and new rows for it."""
    for i in range(writes):
        table = TABLES[(worker + i) % 3]
        yield table, pa.table({"k": [f"{worker}-{i}-{j}-{time.time_ns()}" for j in range(3)]})


def kill_round(
    rng: random.Random,
    clones: list[Path],
    spec: dict[str, str],
    writes: int,
    logs: list[Path],
    longest_pause: float,
    writer: Callable[[str, dict[str, str], int, int, str], None] | None = None,
    join_s: float = 900,
) -> list[int | None]:
    """Start one writer per clone (``logs[i]`` is writer ``i``'s; ``writer`` defaults to
    :func:`killable_writer`), SIGKILL two of them up to ``longest_pause`` seconds after all
    are ready, wait for the rest (each up to ``join_s``); the exit codes.
    :class:`TimeoutError` if the writers are not ready within two minutes."""
    ctx = multiprocessing.get_context("spawn")
    target = writer or killable_writer
    procs = [
        ctx.Process(target=target, args=(str(c), spec, w, writes, str(log)))
        for w, (c, log) in enumerate(zip(clones, logs, strict=True))
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 120
    while not all(log.exists() and log.read_text() for log in logs):
        if time.monotonic() > deadline:
            for p in procs:
                p.kill()
            raise TimeoutError("the writers did not start within 120 s")
        time.sleep(0.01)
    time.sleep(rng.uniform(0.05, longest_pause))
    for victim in rng.sample(procs, 2):
        if victim.pid is not None:
            os.kill(victim.pid, signal.SIGKILL)
    for p in procs:
        p.join(timeout=join_s)
    return [p.exitcode for p in procs]


def told(logs: list[Path]) -> list[tuple[str, str]]:
    """``(table, version)`` of every write a writer was told had landed."""
    lines = [line.split() for log in logs for line in log.read_text().splitlines()]
    return [(table, version) for table, version in (p for p in lines if len(p) == 2)]
