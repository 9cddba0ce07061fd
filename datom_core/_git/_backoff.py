"""The wait after a push lost to a concurrent writer (private to the git layer).

Writers race by compare-and-swap on the remote's branch: of those that read the same tip,
one wins and the others build again on the new tip. Each lost attempt costs the remote
as much as a won one (a ref advertisement, a pack received and refused), so when writers
retry faster than the remote records pushes, the lost attempts crowd out the winning
ones: with a 10 ms first wait capped at 1 s, 16 writers across a 50 ms-RTT WAN made 4.3
pushes per write and wrote at half the rate of one.

The wait here is "full jitter" exponential backoff (a uniform draw below a bound that
doubles on every lost race), with the bound scaled by what one attempt costs on this
remote: the first bound is one attempt's duration, and the cap ``CAP_ATTEMPTS`` of them
(at least ``_CAP_MIN`` seconds, at most ``_CAP_MAX``). ``n`` writers contending then
spread over about ``n`` attempt-durations, i.e. about one attempt at the remote at a
time, whatever the round-trip time; a local remote (attempts of milliseconds) still
retries within milliseconds.
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]

CAP_ATTEMPTS = 32  # the longest bound, in attempt durations (room for ~16 contenders)
_CAP_MIN, _CAP_MAX = 1.0, 30.0  # seconds
_FIRST_MIN = 0.005  # seconds: the first bound however quick an attempt was


class Backoff:
    """The waits of one writer's successive lost races (see the module docstring)."""

    def __init__(self) -> None:
        self._bound: float | None = None
        self._cap = _CAP_MIN

    def wait_for(self, attempt: float) -> float:
        """The seconds to wait after a lost attempt that took ``attempt`` seconds (the
        bound doubles each time; the first one is that attempt's duration)."""
        if self._bound is None:
            self._bound = max(attempt, _FIRST_MIN)
            self._cap = min(max(CAP_ATTEMPTS * attempt, _CAP_MIN), _CAP_MAX)
        else:
            self._bound = min(self._bound * 2, self._cap)
        return random.uniform(0, self._bound)
