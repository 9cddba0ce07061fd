"""The crash-test hook: ``DATOM_CRASH_AT=<step>`` kills the process at that step.

A leaf module (it imports nothing of datom) so that every layer can mark its step
boundaries without depending on the layer that writes.
"""

from __future__ import annotations

import os
import signal

__all__ = ["checkpoint"]


_passed: dict[str, int] = {}


def checkpoint(step: str) -> None:
    """SIGKILL this process when ``DATOM_CRASH_AT`` names ``step``; a no-op otherwise.

    ``DATOM_CRASH_AT=<step>@<n>`` kills at the ``n``-th time the step is reached (a sync
    passes the git layer's steps once per table). The crash-safety tests stop a writer at
    each step boundary to prove that re-running it converges.
    """
    wanted = os.environ.get("DATOM_CRASH_AT")
    if wanted is None or not wanted.startswith(step):
        return
    if wanted == step:
        os.kill(os.getpid(), signal.SIGKILL)
    name, _, nth = wanted.rpartition("@")
    if name == step and nth.isdigit():
        _passed[step] = _passed.get(step, 0) + 1
        if _passed[step] == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)
