"""SIGTERM handled like SIGINT while datom changes a project, a leaf module.

Kubernetes, systemd and most supervisors stop a process with SIGTERM first; by default it
ends the process at once, skipping what a KeyboardInterrupt runs (a write's undo of what
it put in the store, the release of the clone's lock). While a write runs in the main
thread of a process that left SIGTERM at its default, SIGTERM raises KeyboardInterrupt
instead, as Ctrl-C does; the previous disposition is restored afterwards. A handler the
program installed itself (Dagster's, a web server's) is left alone, as is any thread
other than the main one (signals are delivered there only).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["terminate_as_interrupt"]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"terminated (signal {signum})")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (ValueError, AttributeError):  # no SIGTERM on this platform
        yield
        return
    if previous is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
