"""Compaction that merges packs and compacts a local remote (an accelerator of the git
layer; switched off by ``DATOM_PLAIN=1`` or ``DATOM_PLAIN=compact``, see
:mod:`datom_core._plain`). :mod:`.._maintenance` decides when (budgets, checks); this
module does it.

Contract: every object stays readable throughout, by datom, dulwich and git (each one is
written to its new pack, fsynced with its index, before its other copy is deleted); no
pack git's metadata holds (:mod:`._held`) is merged; a local remote's objects are deleted
only while nobody reads it (the exclusive side of :mod:`.._access`'s lock); a failure
leaves objects twice, never missing. Measured (``benchmarks/bench_compaction.py``, two
clones writing in turn, the last 100 of 300-400 writes): over HTTP a write 1.41-1.75x
(10 packs a clone against 150); a local remote 4.2x less disk (4,206 loose files against
105 at 600 writes) and a colleague's ``git clone`` of it 2.44x, for writes 0.88-0.96x.

Plain path (in :mod:`.._maintenance`): a clone's loose objects packed by dulwich's
``pack_loose_objects``; packs never merged (dulwich's ``repack`` merges every pack, git's
multi-pack-index and kept packs too); a local remote left to ``git gc``.

* **A clone.** More than the loose budget of loose objects are packed (a blob this process
  still holds is not read again); more than the pack budget of packs (each HTTP fetch adds
  one) are merged geometrically (the big pack is kept while it outweighs the others
  together, so the cost stays proportional to what is new). Packs are written by
  :mod:`._packs` from the objects' bytes, not by dulwich's ``add_objects``, which reads
  every object of a new pack back to index it.
* **A local remote**, one process at a time (``<remote>/datom-compact.lock``), none of it
  in the writers' turn: its packs are written while others read and push; what they
  replace is deleted under the exclusive maintenance lock, which datom's fetches and
  pushes hold shared, so no reader sees an object vanish between listing and reading.
"""

from __future__ import annotations

import binascii
import contextlib
import fcntl
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, ObjectID
from dulwich.pack import Pack
from dulwich.repo import Repo

from ..._errors import DatomError
from .._access import LOCK_NAME, RemoteAccess
from .._groupshare import lock_mode, open_lock
from ._held import KEEP, drop_stale_files, drop_stale_keeps, git_held_packs, git_lock
from ._memo import kept_blob
from ._packs import TMP_PACK, loose_entry, merge_packs, pack_entries, write_entries

__all__ = ["Budgets", "compact", "compact_remote", "drop_stale_temporaries", "packs_over"]

log = logging.getLogger("datom_core.git")

Budgets = tuple[int, int]  # (loose objects, packs) past which a repository is compacted
SWEPT_FOLDERS = 8  # loose-object fan-out folders a compaction sweeps for stale temporaries
_COMPACT_LOCK = "datom-compact.lock"


def compact(r: Repo, budgets: Budgets) -> tuple[int, int]:
    """Pack loose objects and merge packs past ``budgets``; (objects packed, packs merged).
    A clone gains objects only under its lock, which the caller holds."""
    plan = None
    try:
        plan = _prepare(r.object_store, budgets)
        return _finish(r.object_store, plan)
    finally:
        if plan is not None:
            plan.unkeep(r.object_store)


@dataclass
class _Compaction:
    """What :func:`_prepare` wrote packs for and :func:`_finish` deletes: loose objects a
    pack now holds, and packs merged into a new one."""

    loose: list[ObjectID] = field(default_factory=list)
    merged: list[Pack] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # its new packs, kept until it ends
    finished: bool = False  # whether :func:`_finish` began deleting the other copies

    def unkeep(self, store: DiskObjectStore) -> None:
        """Remove the ``.keep`` files of the packs it wrote (they are ordinary packs now)."""
        for name in self.written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(store.pack_dir, name + ".keep"))
        self.written = []


def _prepare(store: DiskObjectStore, budgets: Budgets) -> _Compaction:
    """Write the packs of a compaction, deleting nothing: an object is then both loose and
    packed, or in two packs, which every reader accepts (a compaction that cannot finish
    leaves duplicates, which the next merge drops)."""
    plan = _Compaction()
    drop_stale_temporaries(store)
    try:
        if store.count_loose_objects() > budgets[0]:
            plan.loose = _loose_into_pack(store, plan.written)
        packs = sorted(_mergeable(store), key=len, reverse=True)
        if len(packs) > budgets[1]:
            biggest, rest = packs[0], packs[1:]
            merge = rest if len(biggest) >= 2 * sum(len(p) for p in rest) else packs
            new = merge_packs(store, merge, keep=KEEP)
            plan.written.append(new)
            plan.merged = [p for p in merge if os.path.basename(p._basename) != new]
    except BaseException:
        plan.unkeep(store)
        raise
    return plan


def packs_over(store: DiskObjectStore, budget: int) -> bool:
    """Whether more than ``budget`` packs could be merged (the cached list, counted only)."""
    return len(store.packs) > budget and len(_mergeable(store, False)) > budget


def _mergeable(store: DiskObjectStore, refresh: bool = True) -> list[Pack]:
    """The packs a compaction may merge: every pack but those git's own metadata holds
    (:func:`._held.git_held_packs`: a multi-pack-index, a bitmap, ``.keep`` or cruft
    packs), none if a multi-pack-index cannot be read."""
    if refresh:
        # The packs cached after a look at the folder (a pack another process merged away
        # or git repacked drops out). Not ``store.packs``: it lists the cached packs before
        # its own look, which closes those gone; such a pack, used again (len()), reopens
        # its index outside the cache, and nothing closes it.
        store._update_pack_cache()
        packs = list(store._iter_cached_packs())
    else:
        packs = store.packs  # only counted
    held = git_held_packs(store.pack_dir)
    if held is None:
        return []
    # dulwich lists any .pack beside an .idx, git's half-written ones too (``.tmp-<pid>-
    # pack-*``, renamed when done): merged and deleted, they took the objects git was
    # moving there. Only a finished pack (a name not starting with a dot) is merged.
    names = [(p, os.path.basename(p._basename)) for p in packs]
    return [p for p, name in names if name not in held and not name.startswith(".")]


def drop_stale_temporaries(store: DiskObjectStore, folders: int = SWEPT_FOLDERS) -> int:
    """Remove what killed writers left in ``store`` an hour ago or more: temporary packs,
    datom's ``.keep`` files, and the temporary files of loose objects in ``folders``
    fan-out folders picked at random (all 256 would cost as much as the compaction's own
    listing again; every folder is reached within a few dozen compactions)."""
    removed = drop_stale_files(store.path)
    removed += drop_stale_files(store.pack_dir, prefix=TMP_PACK)
    removed += drop_stale_keeps(store.pack_dir)
    for i in random.sample(range(256), min(folders, 256)):
        removed += drop_stale_files(os.path.join(store.path, f"{i:02x}"))
    return removed


def _finish(store: DiskObjectStore, plan: _Compaction) -> tuple[int, int]:
    """Delete what :func:`_prepare` packed again; (loose objects, packs) deleted.

    The new packs are kept (``.keep``) until now, so a concurrent ``git repack -d`` or
    ``git gc`` cannot have deleted one whose objects are about to lose their other copy
    (git loosens the unreachable objects of a pack it deletes: the same loose files this
    would then delete). Merged packs are deleted holding git's own
    ``multi-pack-index.lock`` (``git repack --write-midx`` and ``git multi-pack-index
    write`` take it before they list the packs), after asking again which packs git holds:
    one a multi-pack-index names since :func:`_prepare` stays. A lock git holds now leaves
    them all for a later compaction. The caller removes the new packs' ``.keep`` files
    (:meth:`_Compaction.unkeep`) once no push that wrote their objects can be under way."""
    plan.finished = True
    for sha in plan.loose:
        try:
            store.delete_loose_object(sha)
        except FileNotFoundError:  # deleted meanwhile (a datom too old to take the lock)
            continue
    removed = 0
    with git_lock(os.path.join(store.pack_dir, "multi-pack-index.lock")) as mine:
        held = git_held_packs(store.pack_dir) if mine else None
        for p in plan.merged:
            if held is not None and os.path.basename(p._basename) not in held:
                store._remove_pack(p)
                removed += 1
    return len(plan.loose), removed


def _pack_loose(store: DiskObjectStore) -> int:
    """Pack every loose object, then delete the loose copies; how many were packed."""
    plan = _Compaction()
    try:
        plan.loose = _loose_into_pack(store, plan.written)
        return _finish(store, plan)[0]
    finally:
        plan.unkeep(store)


def _loose_into_pack(store: DiskObjectStore, written: list[str]) -> list[ObjectID]:
    """Write every loose object into one new pack (kept: its name is added to
    ``written``); the ids it holds (still loose too). A blob this process still holds
    (most of what it wrote since the last compaction, manifests of a megabyte among them)
    is not read and inflated from its file again."""
    shas = list(store._iter_loose_objects())
    objects = [o for o in (_kept(sha) or loose_entry(store, sha) for sha in shas) if o]
    if objects:
        written.append(write_entries(store, pack_entries(objects), keep=KEEP))
    return [ObjectID(binascii.hexlify(oid)) for oid, _type, _content in objects]


def _kept(sha: bytes) -> tuple[bytes, int, bytes] | None:
    data = kept_blob(sha)
    return (binascii.unhexlify(sha), Blob.type_num, data) if data is not None else None


def compact_remote(
    path: Path,
    opener: Callable[[], Repo],
    access: RemoteAccess,
    budgets: Budgets,
    wait: float = 0.0,
    turn: Callable[[], AbstractContextManager[object]] | None = None,
) -> bool:
    """Compact a local remote: one datom process at a time (``datom-compact.lock``), and
    none of it while holding the writers' turn.

    Its packs are written while others read and push (a new pack hides nothing: each of
    its objects is still where it was, and a push adds only files); only deleting what they
    replace waits for a moment when nobody reads (the exclusive side of the maintenance
    lock, tried for ``wait`` seconds: readers hold it for milliseconds). Returns whether it
    finished; a compaction that did not leaves its objects twice until the next merge.

    Its new packs stay kept (``.keep``) until ``turn()``, the writers' turn, is held once
    after the other copies are gone: a push writes its objects and then moves the branch,
    both in its turn, so a loose object packed here may belong to a push not yet referenced
    by any branch. ``git repack -a -d`` drops unreferenced objects of every pack it may
    delete (loose ones it leaves alone): a kept pack it does not delete. A turn not had
    within seconds leaves the ``.keep`` files to the sweep of an hour later.
    """
    file_mode = lock_mode(opener())  # a group-shared remote's lock files are the team's
    with _alone(path / _COMPACT_LOCK, file_mode) as mine:
        if not mine:
            return False  # another process is compacting it
        with access.shared():  # a datom too old to take the compactor's lock waits
            repo = opener()
            store = repo.object_store
            if not isinstance(store, DiskObjectStore):
                return True
            plan = _prepare(store, budgets)
        try:
            return _finish_alone(path, store, plan, wait, file_mode)
        finally:
            _unkeep_after_pushes(store, plan, turn)


def _unkeep_after_pushes(
    store: DiskObjectStore,
    plan: _Compaction,
    turn: Callable[[], AbstractContextManager[object]] | None,
) -> None:
    if not plan.finished or turn is None:
        plan.unkeep(store)  # every object is still where it was too
        return
    try:
        with turn():
            plan.unkeep(store)
    except DatomError as e:
        log.info("left the compaction's packs kept until a later sweep (%s)", e)


def _finish_alone(
    path: Path, store: DiskObjectStore, plan: _Compaction, wait: float, mode: int
) -> bool:
    """:func:`_finish` at a moment nobody reads the remote, tried for ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        with _alone(path / LOCK_NAME, mode) as alone:
            if alone:
                done = _finish(store, plan)
                if done != (0, 0):
                    log.info("compacted %s: %d loose objects packed, %d packs merged", path, *done)
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


@contextmanager
def _alone(lock: Path, file_mode: int) -> Iterator[bool]:
    """Hold ``flock(LOCK_EX)`` on ``lock`` (made with ``file_mode``: a group-shared
    remote's team may open it) if nobody holds it; yields whether it is held (never on a
    read-only remote, which nobody compacts)."""
    try:
        fd = open_lock(lock, file_mode)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held = True
    except BlockingIOError:
        held = False
    try:
        yield held
    finally:
        os.close(fd)  # closing the descriptor releases the lock
