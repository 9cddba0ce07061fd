"""A round of writers under infrastructure faults and SIGKILLs, for the stress run's fault
mode (``benchmarks/stress_writers.py --faults``).

The writers reach the git server and S3 through :class:`tests.faultproxy.FaultProxy`
instances, into which :class:`Injector` drops one random fault at a time (lost answers,
5xx, SlowDown, resets, truncated bodies, stalls). A writer told of an error runs the same
write again, as a user would (a write that may have been recorded converges); every
version it is told of is logged with its ``data_sha``, to be read back by id.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import datom_core as dc
from tests.faultproxy import FaultProxy
from tests.kills import kill_round, store_of, worker_writes

__all__ = ["GIT_FAULTS", "S3_FAULTS", "Injector", "fault_round", "told_with_data"]

# (mode, method, path regex, options): what the injector picks from.
GIT_FAULTS = [
    ("lost", "POST", "git-receive-pack$", {}),
    ("status", "POST", "git-receive-pack$", {"status": 500}),
    ("status", "GET", "info/refs", {"status": 503}),
    ("reset", None, "", {}),
    ("truncate", "POST", "git-upload-pack$", {}),
    ("stall", None, "", {"delay": 0.5}),
]
S3_FAULTS = [
    ("slowdown", "PUT", "", {}),
    ("lost", "PUT", "", {}),
    ("status", "GET", "", {"status": 500}),
    ("status", "HEAD", "", {"status": 503}),
    ("reset", None, "", {}),
    ("truncate", "GET", "", {}),
    ("stall", None, "", {"delay": 0.5}),
]
_RETRIES = 6  # runs of the same write after an error


class Injector:
    """A thread dropping one random fault (seeded) into a random proxy every ``every`` s."""

    def __init__(
        self, rng: random.Random, targets: list[tuple[FaultProxy, list]], every: float = 0.25
    ) -> None:
        self._rng, self._targets, self._every = rng, targets, every
        self._stop = threading.Event()
        self.injected = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Injector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for proxy, _ in self._targets:
            proxy.clear()

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(0.5, 1.5) * self._every):
            proxy, faults = self._rng.choice(self._targets)
            mode, method, path, options = self._rng.choice(faults)
            proxy.inject(mode, method=method, path=path, times=1, **options)
            self.injected += 1


def tolerant_writer(clone: str, spec: dict[str, str], worker: int, writes: int, log: str) -> None:
    """Writes to three tables; an error runs the same write again (up to a few times).
    Logs ``table version data_sha`` for each write it is told landed."""
    conn = dc.connect(clone, store=store_of(spec))
    with open(log, "a", buffering=1) as out:
        out.write("ready\n")
        for table, data in worker_writes(worker, writes):
            for _ in range(_RETRIES):
                try:
                    result = conn.write(table, data)
                except dc.DatomError as e:
                    out.write(f"error {type(e).__name__}\n")
                    time.sleep(0.05)
                    continue
                out.write(f"{table} {result.version} {result.data_sha}\n")
                break


def fault_round(
    rng: random.Random,
    clones: list[Path],
    spec: dict[str, str],
    writes: int,
    logs: list[Path],
    longest_pause: float,
) -> list[int | None]:
    """Start one tolerant writer per clone, SIGKILL two of them a random moment after all
    are ready, wait for the rest; their exit codes."""
    return kill_round(
        rng, clones, spec, writes, logs, longest_pause, writer=tolerant_writer, join_s=1800
    )


def told_with_data(logs: list[Path]) -> tuple[list[tuple[str, str, str]], int]:
    """``(table, version, data_sha)`` of every write a writer was told landed, and the
    number of errors the writers were told of."""
    lines = [line.split() for log in logs for line in log.read_text().splitlines()]
    landed = [(p[0], p[1], p[2]) for p in lines if len(p) == 3]
    return landed, sum(1 for p in lines if p and p[0] == "error")
