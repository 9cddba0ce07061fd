"""The wait after a push lost to a concurrent writer (private to the git layer).

Writers race by compare-and-swap on the remote's branch: of those that read the same tip,
one wins and the others build again on the new tip. The wait is "full jitter"
exponential backoff, the policy of ``RepoCore.commit_and_push``: a uniform draw below a
bound that starts at 10 ms and doubles on every lost race, capped at 1 s. (Bounds scaled
to one attempt's duration, capped at 4 or 32 attempts, were tried across a 50 ms-RTT WAN
with 16 writers and did not do better on ``bench_wan.py``.)
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]

_FIRST, _CAP = 0.01, 1.0  # seconds


class Backoff:
    """The waits of one writer's successive lost races (see the module docstring)."""

    def __init__(self) -> None:
        self._bound = _FIRST

    def wait_for(self, attempt: float) -> float:
        """The seconds to wait after a lost attempt (``attempt``: its duration, unused
        by this policy); the bound doubles each time, up to the cap."""
        wait = random.uniform(0, self._bound)
        self._bound = min(self._bound * 2, _CAP)
        return wait
