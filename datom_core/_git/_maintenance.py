"""Keeping repositories small and unstuck (private to the git layer).

* **Compaction on a budget.** Every write adds a few loose objects (and an HTTP fetch a
  small pack); every lookup pays per pack. A handle checks its clone (or its local
  remote) after a fixed number of its operations, and on any operation whose new commit
  is :func:`due` by its id: a repository written by many short-lived processes (a
  Dagster step each, one CLI call each), none of which reaches the count, is checked as
  often as one written by a long-lived writer. Past ``LOOSE_BUDGET`` loose objects or
  ``PACK_BUDGET`` packs, :mod:`._fast._compact` packs and merges them (the clone's, and a
  local remote's outside the writers' turn). Plain path (``DATOM_PLAIN=compact``): a
  clone's loose objects packed by dulwich's ``pack_loose_objects``, fsynced as git
  fsyncs a pack; packs left as they are (dulwich's ``repack`` would merge those git's
  multi-pack-index and ``.keep`` files hold); a local remote left to ``git gc``. Either
  way datom's fetches and pushes hold the remote's maintenance lock shared
  (:mod:`._access`), so a process in the other mode may compact it beside them.
* **Stale git locks.** dulwich writes a ref or the index through ``<file>.lock``; a process
  killed at that moment leaves the lock behind and every later update fails. datom writes a
  clone only under its own lock (:mod:`_lock`), so such a file found while holding it is
  stale: it is removed where it is met (``_internals.unstale``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from dulwich.object_store import DiskObjectStore
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from .._plain import plain
from ._access import RemoteAccess
from ._fast import _compact
from ._settings import precious

__all__ = [
    "CLONE_CHECK_EVERY",
    "REMOTE_CHECK_EVERY",
    "RemoteAccess",
    "compact",
    "compact_if_over",
    "compact_remote",
    "due",
    "may_need_compaction",
]

log = logging.getLogger("datom_core.git")

LOOSE_BUDGET = 256
PACK_BUDGET = 16
CLONE_CHECK_EVERY = 16  # object-adding operations of one handle between two checks
REMOTE_CHECK_EVERY = 8  # pushes of one handle between two checks of a local remote


def compact(r: Repo) -> tuple[int, int]:
    """Pack loose objects (and, accelerated, merge packs) past their budgets; (objects
    packed, packs merged). Callers ask :func:`may_need_compaction` first."""
    store = r.object_store
    if not isinstance(store, DiskObjectStore):
        return 0, 0
    try:
        if not plain("compact"):
            done = _compact.compact(r, (LOOSE_BUDGET, PACK_BUDGET))
        elif store.count_loose_objects() <= LOOSE_BUDGET:
            return 0, 0
        else:
            fsync, store.fsync_object_files = store.fsync_object_files, True
            try:
                done = store.pack_loose_objects(), 0
            finally:
                store.fsync_object_files = fsync
    except (OSError, PackFileDisappeared) as e:
        # A folder or pack a concurrent git gc / repack removed while it was read: what was
        # written stays (each object still where it was, or twice), the rest waits.
        log.warning("could not compact %s (%s); it is tried again later", r.path, e)
        return 0, 0
    if done != (0, 0):
        log.info("compacted %s: %d loose objects packed, %d packs merged", r.path, *done)
    return done


def due(made: bytes, every: int) -> bool:
    """Whether the operation that made the object ``made`` (a hex id) checks its
    repository for compaction: one operation in ``every``, told by the id (uniform), not by
    a count one process keeps."""
    return int(made[-6:], 16) % every == 0


def compact_if_over(r: Repo, loose_added: int) -> int:
    """:func:`compact` ``r`` if :func:`may_need_compaction` says so, unless
    ``extensions.preciousObjects`` forbids deleting objects; the loose objects still
    counted (0 once compacted; a compaction that fails is logged, never raised)."""
    if precious(r) or not may_need_compaction(r, loose_added):
        return loose_added
    compact(r)
    return 0


def may_need_compaction(r: Repo, loose_added: int = 0) -> bool:
    """Whether :func:`compact` could have work, without counting every loose object: the
    loose objects are at least the ``loose_added`` the caller wrote, and are estimated from
    eight of the 256 fan-out folders (as ``git gc --auto`` estimates from one) for those
    other processes wrote. Checked before waiting for a local remote's exclusive lock,
    which readers delay; :func:`compact` then counts them."""
    store = r.object_store
    if not isinstance(store, DiskObjectStore):
        return False
    found = sum(_entries(os.path.join(store.path, f"{i:02x}")) for i in range(0, 256, 32))
    if max(loose_added, 32 * found) > LOOSE_BUDGET:
        return True
    return not plain("compact") and _compact.packs_over(store, PACK_BUDGET)


def _entries(folder: str) -> int:
    try:
        return len(os.listdir(folder))
    except OSError:  # no object under that prefix yet
        return 0


def compact_remote(
    path: Path,
    opener: Callable[[], Repo],
    access: RemoteAccess,
    wait: float = 0.0,
    turn: Callable[[], AbstractContextManager[object]] | None = None,
) -> bool:
    """Compact the local remote at ``path`` (:func:`._fast._compact.compact_remote`);
    whether it finished. Plain path: nothing (done)."""
    if plain("compact"):
        return True
    budgets = (LOOSE_BUDGET, PACK_BUDGET)
    return _compact.compact_remote(path, opener, access, budgets, wait, turn)
