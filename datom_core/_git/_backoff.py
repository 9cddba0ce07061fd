"""The wait after a push lost to a concurrent writer, or a fetch that raced one: "full
jitter" backoff, a uniform draw below a bound from 10 ms doubling per lost race up to 1 s
(bounds scaled to an attempt's duration did no better on ``bench_wan.py``, 16 writers
over a 50 ms-RTT WAN)."""

from __future__ import annotations

import random

__all__ = ["Backoff"]

_FIRST, _CAP = 0.01, 1.0  # seconds


class Backoff:
    """The waits of one writer's successive lost races (see the module docstring)."""

    _bound = _FIRST  # each instance's own from its first lost race

    def next(self) -> float:
        """The seconds to wait after a lost race; the bound doubles each time, up to the cap."""
        wait = random.uniform(0, self._bound)
        self._bound = min(self._bound * 2, _CAP)
        return wait
