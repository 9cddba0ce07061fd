"""Children started as a shell starts a command: SIGTERM and SIGINT at their defaults.

Dagster's in-process execution gives SIGTERM the disposition SIGINT has (so that a
Kubernetes stop interrupts a run), and a pytest-xdist worker ignores SIGINT: after a
Dagster test, that worker ignores SIGTERM, and an ignored signal is kept across ``exec``.
A test that stops a child with SIGTERM starts it with :func:`default_signals`.
"""

from __future__ import annotations

import signal

__all__ = ["default_signals"]


def default_signals() -> None:
    """For ``subprocess.Popen(preexec_fn=...)``: SIGTERM and SIGINT at their defaults."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
