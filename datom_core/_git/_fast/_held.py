"""What git's own metadata holds in a pack folder, for the compaction that merges packs
(an accelerator of the git layer with :mod:`._compact`; switched off by ``DATOM_PLAIN=1``
or ``DATOM_PLAIN=compact``, see :mod:`datom_core._plain`).

Contract: a pack git's metadata names or marks is never merged away or rewritten, and a
``.keep`` or temporary file is removed only when datom's own and an hour old. Plain path:
none is needed, as dulwich's ``pack_loose_objects`` (the plain compaction) deletes no
pack and sweeps nothing.

git keeps files beside its packs and about them: ``.keep`` (never repack this), cruft
packs' ``.mtimes`` (unreachable objects with their ages, for git's pruning), a partial
clone's ``.promisor``, bitmaps and reverse indexes (``.bitmap``, ``.rev``: offsets into
one pack), and multi-pack-indexes (``multi-pack-index``, or an incremental chain in
``multi-pack-index.d``) naming packs, with their own bitmap and reverse index. A pack
any of them names is git's: datom's compaction never merges it away or rewrites it.
While a compaction runs, the packs it writes carry a ``.keep`` of its own
(:data:`KEEP`), so a concurrent ``git repack -d`` or ``git gc`` leaves them alone.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from dulwich.midx import load_midx

from .._access import PUSH_KEEP
from .._read import FETCH_KEEP

__all__ = [
    "KEEP",
    "STALE_AFTER",
    "drop_stale_files",
    "drop_stale_keeps",
    "git_held_packs",
    "git_lock",
]

KEEP = b"datom compaction\n"  # the .keep of a pack whose compaction is running
STALE_AFTER = 3600.0  # seconds after which a temporary file is a killed writer's
_PREFIX = "tmp_obj_"  # git's loose objects being written

# A pack with one of these beside it belongs to git: kept (.keep, and .promisor: a partial
# clone's), cruft (.mtimes: unreachable objects with their ages, for git's pruning), or
# indexed by git's own files (.bitmap, .rev) that a rewrite would orphan.
_GIT_SIDECARS = (".keep", ".mtimes", ".promisor", ".bitmap", ".rev")
_MIDX, _MIDX_CHAIN = "multi-pack-index", "multi-pack-index.d"


def git_held_packs(pack_dir: str | os.PathLike[str]) -> frozenset[str] | None:
    """The packs (basenames, ``pack-<id>``) in ``pack_dir`` that git's own metadata names or
    marks: a ``.keep``, cruft (``.mtimes``), ``.promisor``, ``.bitmap`` or ``.rev`` file
    beside it, or a multi-pack-index (single or incremental, whose bitmap and reverse
    index describe those packs' offsets) listing it. Such a pack is never merged away or
    rewritten. None when a multi-pack-index cannot be read: then every pack is held. (A
    commit-graph names commits, not packs: a merge keeps every object it names.)"""
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return frozenset()
    held = {n.rsplit(".", 1)[0] for n in names if n.endswith(_GIT_SIDECARS)}
    midxs = [os.path.join(pack_dir, _MIDX)] if _MIDX in names else []
    if _MIDX_CHAIN in names:
        chain = os.path.join(pack_dir, _MIDX_CHAIN)
        midxs += [os.path.join(chain, n) for n in os.listdir(chain) if n.endswith(".midx")]
    for path in midxs:
        try:
            midx = load_midx(path)
        except (OSError, ValueError, AssertionError):
            return None
        try:
            held.update(n.rsplit(".", 1)[0] for n in midx.pack_names)
        finally:
            midx.close()
    return frozenset(held)


def drop_stale_keeps(pack_dir: str | os.PathLike[str]) -> int:
    """Remove the ``.keep`` files a killed compaction, push or fetch left on its packs an
    hour ago or more (only datom's own: a ``.keep`` holding anything else is someone's wish)."""
    cutoff, removed = time.time() - STALE_AFTER, 0
    for name in os.listdir(pack_dir) if os.path.isdir(pack_dir) else []:
        path = os.path.join(pack_dir, name)
        try:
            if name.endswith(".keep") and os.stat(path).st_mtime < cutoff:
                with open(path, "rb") as f:
                    if f.read(len(KEEP) + 1) in (KEEP, PUSH_KEEP, FETCH_KEEP):
                        os.unlink(path)
                        removed += 1
        except OSError:
            continue
    return removed


@contextmanager
def git_lock(path: str) -> Iterator[bool]:
    """Hold git's lock file ``path`` (created exclusively, removed after); False when
    another process holds it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        yield False
        return
    os.close(fd)
    try:
        yield True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def drop_stale_files(
    folder: str | os.PathLike[str], now: float | None = None, prefix: str = _PREFIX
) -> int:
    """Remove the files named ``prefix``... in ``folder`` older than :data:`STALE_AFTER`
    (left by killed writers: a loose object's or a pack's temporary file);
    how many were removed."""
    cutoff = (time.time() if now is None else now) - STALE_AFTER
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.startswith(prefix) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue  # taken or removed meanwhile, or not ours to remove
    return removed
