"""The one switch between datom's accelerators and their plain paths.

Some code exists for speed only (listed in ``docs/performance.md``, "Accelerators"): the
git layer's in ``datom_core/_git/_fast/``, the project layer's text
splices (``datom_core/_project/_manifest_text.py``, ``_history_text.py``), the compiled
string encoder of ``datom_core/_identity``. Each has a plain path beside it, built on dulwich,
:mod:`json` or Arrow, that gives byte-identical documents, objects and digests.
``DATOM_PLAIN=1`` in the environment selects every plain path: to rule the accelerators
out when chasing a problem, and to measure what they pay. The switch is read at each call,
so a process may change it between operations (the benchmarks do).
"""

from __future__ import annotations

import os

__all__ = ["PLAIN_ENV", "plain"]

PLAIN_ENV = "DATOM_PLAIN"
"""The environment variable that, set to anything but empty or ``0``, selects the plain
paths."""


def plain() -> bool:
    """True when ``DATOM_PLAIN`` asks for the plain paths (any value but empty or ``0``)."""
    return os.environ.get(PLAIN_ENV, "") not in ("", "0")
