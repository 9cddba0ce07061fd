"""One worker thread per process for a kind of background work (a leaf module, used by the
git layer and the project layer): a forked child, which inherits the parent's executor but
not its thread, starts its own instead of waiting on one that does not exist."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

__all__ = ["ProcessWorker"]


class ProcessWorker:
    """``executor()``: this process's executor named ``name``, of ``threads`` threads."""

    def __init__(self, name: str, threads: int = 1) -> None:
        self._name, self._threads = name, threads
        self._pool: tuple[int, ThreadPoolExecutor] | None = None

    def executor(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool[0] != os.getpid():
            self._pool = (
                os.getpid(),
                ThreadPoolExecutor(self._threads, thread_name_prefix=self._name),
            )
        return self._pool[1]
