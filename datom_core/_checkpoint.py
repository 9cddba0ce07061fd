"""The crash-test hook: ``DATOM_CRASH_AT=<step>`` kills the process at that step.

A leaf module (it imports nothing of datom) so that every layer can mark its step
boundaries without depending on the layer that writes.
"""

from __future__ import annotations

import os
import signal

__all__ = ["checkpoint"]


def checkpoint(step: str) -> None:
    """SIGKILL this process when ``DATOM_CRASH_AT`` names ``step``; a no-op otherwise.

    The crash-safety tests stop a writer at each step boundary to prove that re-running
    it converges.
    """
    if os.environ.get("DATOM_CRASH_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)
