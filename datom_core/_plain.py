"""The one switch between datom's accelerators and their plain paths.

Some code exists for speed only (listed in ``docs/performance.md``, "Accelerators"): the
git layer's in ``datom_core/_git/_fast/``, the project layer's text
splices (``datom_core/_project/_manifest_text.py``, ``_history_text.py``), the compiled
string encoder of ``datom_core/_identity``. Each has a plain path beside it, built on dulwich,
:mod:`json` or Arrow, that gives byte-identical documents, objects and digests.
``DATOM_PLAIN=1`` in the environment selects every plain path: to rule the accelerators
out when chasing a problem, and to measure what they pay. The switch is read at each call,
so a process may change it between operations (the benchmarks do).

``DATOM_PLAIN`` may instead name some accelerators, comma-separated (``walk``: the git
layer's tree walks; ``advert``: its kept ref advertisements; ``compact``: its pack
merges and a local remote's compaction; ``group``: group commit; ``share``: a clone
reading a local remote's objects in place; ``history``: ``log``'s path index and first
parents; ``trees``, ``commits``, ``blobs``: parsed objects and blob bytes kept by id; see
:data:`NAMED`): only those take their plain path, so a benchmark can show what each pays.
"""

from __future__ import annotations

import os

__all__ = ["NAMED", "PLAIN_ENV", "plain"]

PLAIN_ENV = "DATOM_PLAIN"
"""The environment variable that, set to anything but empty or ``0``, selects the plain
paths."""


NAMED = frozenset(
    {
        "advert",
        "blobs",
        "commits",
        "compact",
        "group",
        "history",
        "share",
        "trees",
        "walk",
    }
)
"""Accelerators ``DATOM_PLAIN`` may name alone."""


def plain(accelerator: str | None = None) -> bool:
    """True when ``DATOM_PLAIN`` asks for the plain paths: any value but empty, ``0`` or a
    list of :data:`NAMED` accelerators, which selects those (``accelerator``) only."""
    value = os.environ.get(PLAIN_ENV, "")
    if value in ("", "0"):
        return False
    names = {v.strip() for v in value.split(",")}
    return accelerator in names if names <= NAMED else True
