"""A clone of a local remote reads the remote's objects where they are: git's *alternates*,
as ``git clone --shared`` sets them up (an accelerator of the git layer, for speed and
disk; switched off by ``DATOM_PLAIN=1`` or ``DATOM_PLAIN=share``, see
:mod:`datom_core._plain`).

Contract: a clone made while sharing is wanted lists ``<remote>/objects`` in
``.git/objects/info/alternates``; git, libgit2 and dulwich then find every object of the
remote without a copy, so a push leaves its objects in the remote and the clone only
moves its branch, index and working tree. Every commit, tree, document and error is the
one the plain path gives. Plain path: the clone copies what it fetches, as git does
without ``--shared`` (``LocalTransport.receive`` and ``fetch_commit`` in
:mod:`.._transport`). Measured (``benchmarks/bench_concurrency.py --compare share``, 8
writers each with its own clone, distinct tables, runs interleaved): 1.59x and 2.52x the
plain path's writes/s in two runs; each plain write copies every object the others pushed
since its last.

What a sharing clone gives up, as with ``git clone --shared``: its history is readable
only while the remote's objects are there (datom never deletes a reachable object of a
remote; a moved or deleted remote leaves the clone unreadable, :func:`.._shared.
missing_object` says so). Entries are only ever added. A clone that must stand alone
(a remote on removable media) opts out before it is made: ``DATOM_SHARE_OBJECTS=0``, or
``git config datom.shareObjects false`` (global, or in a clone that never shared).
"""

from __future__ import annotations

import logging
import os

from dulwich.config import Config
from dulwich.object_store import BaseObjectStore, DiskObjectStore

from ..._plain import plain

__all__ = ["SHARE_ENV", "share_objects", "sharing_wanted"]

log = logging.getLogger("datom_core.git")

SHARE_ENV = "DATOM_SHARE_OBJECTS"


def sharing_wanted(config: Config) -> bool:
    """Whether a clone may read a local remote's objects in place: never on the plain
    path; else the environment wins over git's configuration (default yes)."""
    if plain("share"):
        return False
    env = os.environ.get(SHARE_ENV)
    if env is not None:
        return env.strip().lower() not in {"0", "false", "no", "off"}
    try:
        return bool(config.get_boolean((b"datom",), b"shareObjects", True))
    except ValueError:  # not a boolean: git itself would refuse it; keep the default
        return True


def share_objects(clone: BaseObjectStore, remote: BaseObjectStore) -> None:
    """Make ``clone`` read ``remote``'s objects in place, unless it does already.

    Anything but two on-disk stores (or a remote that is the clone itself) is left alone.
    """
    if not isinstance(clone, DiskObjectStore) or not isinstance(remote, DiskObjectStore):
        return
    target = os.path.realpath(remote.path)
    listed = {os.path.realpath(a.path) for a in clone.alternates if hasattr(a, "path")}
    if target == os.path.realpath(clone.path) or target in listed:
        return
    try:
        clone.add_alternate_path(target)
    except OSError as e:  # a read-only clone: it keeps copying, as before
        log.debug("cannot share the objects of %s with %s: %s", target, clone.path, e)
