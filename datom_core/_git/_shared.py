"""A clone of a local remote reads the remote's objects where they are (private to the git
layer): git's *alternates*, as ``git clone --shared`` sets them up.

A clone lists ``<remote>/objects`` in ``.git/objects/info/alternates``; git, libgit2 and
dulwich then find every object of the remote without a copy. For datom that removes the
largest cost of concurrent writers on one machine: each write used to copy (link) into
its clone every object the other writers had pushed since its last write, and its own,
one file (and often one new fan-out folder) per object. Now a push leaves the objects in
the remote, and the clone only moves its branch, index and working tree.

What the clone gives up, as with ``git clone --shared``: its history is readable only
while the remote's objects are there. datom never deletes a reachable object of a remote
(its compaction packs them, and dulwich re-scans a pack folder a concurrent compaction
changed, as git does); a remote that is moved or deleted leaves its clones unreadable
until they are re-cloned (or ``git repack -a -d`` is run in them before, which copies what
they need, after which the line in ``alternates`` can go). Entries are only ever added: a
clone whose origin is re-pointed elsewhere keeps reading the objects it already had.

A clone that must stand alone (a remote on removable media) opts out before it is made:
``DATOM_SHARE_OBJECTS=0`` in the environment, or ``git config datom.shareObjects false``
(global, or in a clone that never shared); it then copies what it fetches, as git does
without ``--shared``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from dulwich.config import Config
from dulwich.object_store import BaseObjectStore, DiskObjectStore

from .._errors import GitError

__all__ = ["SHARE_ENV", "missing_object", "share_objects", "sharing_wanted", "unreachable"]

log = logging.getLogger("datom_core.git")

SHARE_ENV = "DATOM_SHARE_OBJECTS"
_ALTERNATES = os.path.join("info", "alternates")
_NO = {"0", "false", "no", "off"}


def sharing_wanted(config: Config) -> bool:
    """Whether a clone may read a local remote's objects in place (see the module
    docstring): the environment wins over git's configuration."""
    env = os.environ.get(SHARE_ENV)
    if env is not None:
        return env.strip().lower() not in _NO
    try:
        return bool(config.get_boolean((b"datom",), b"shareObjects", True))
    except ValueError:  # not a boolean: git itself would refuse it; keep the default
        return True


def unreachable(store: BaseObjectStore) -> list[str]:
    """The folders ``store`` reads objects from that are not there now."""
    if not isinstance(store, DiskObjectStore):
        return []
    return [path for path in _listed(store) if not os.path.isdir(path)]


def share_objects(clone: BaseObjectStore, remote: BaseObjectStore) -> None:
    """Make ``clone`` read ``remote``'s objects in place, unless it does already.

    Anything but two on-disk stores (or a remote that is the clone itself) is left alone.
    """
    if not isinstance(clone, DiskObjectStore) or not isinstance(remote, DiskObjectStore):
        return
    target = os.path.realpath(remote.path)
    if target == os.path.realpath(clone.path) or target in _listed(clone):
        return
    try:
        clone.add_alternate_path(target)
    except OSError as e:  # a read-only clone: it keeps copying, as before
        log.debug("cannot share the objects of %s with %s: %s", target, clone.path, e)


def missing_object(clone: Path, store: BaseObjectStore, e: KeyError) -> GitError:
    """The error for an object the clone at ``clone`` cannot find."""
    gone = unreachable(store)
    if gone:
        return GitError(
            f"{clone} reads its git objects from the local remote's {gone[0]} (shared, as "
            "by git clone --shared), which is not there now: make it reachable again, or "
            "clone the project anew from a copy of the remote."
        )
    return GitError(
        f"{clone} lacks the git object {e.args[0]!r}: the clone is damaged; clone the "
        "project anew from its remote."
    )


def _listed(store: DiskObjectStore) -> list[str]:
    """The alternates of ``store``, absolute and resolved (relative lines are relative to
    the objects folder, as git reads them)."""
    try:
        with open(os.path.join(store.path, _ALTERNATES), "rb") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    paths = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(b"#"):
            continue
        path = os.fsdecode(line)
        paths.append(os.path.realpath(os.path.join(store.path, path)))
    return paths
