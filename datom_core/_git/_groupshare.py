"""Files datom makes in a local remote several OS users share (private to the git layer).

A remote made with ``git init --bare --shared=group`` (``core.sharedRepository``) is
written by a team: git gives every file and folder it creates there the group's
permissions (and folders the setgid bit, so the group is inherited), whatever each
person's umask. datom writes refs and its lock files there itself, so it does the same
(:func:`widen`, dulwich's ``adjust_shared_perm``, git's rules); dulwich does it for the
objects (the store's ``shared_perm``). A remote folder that is setgid and group-writable
without the setting is taken as group-shared too: that is how such a folder says it
belongs to a team (:func:`shared_perm`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from dulwich.file import PERM_GROUP, SharedPerm, adjust_shared_perm
from dulwich.object_store import BaseObjectStore
from dulwich.repo import Repo

__all__ = [
    "LOCK_FILES",
    "lock_mode",
    "open_lock",
    "ref_paths",
    "shared_perm",
    "store_perm",
    "widen",
]


def shared_perm(remote: Repo) -> SharedPerm | None:
    """The permissions files made in ``remote`` get (None: the umask decides)."""
    return _perm(remote.object_store, remote.controldir())


def store_perm(store: BaseObjectStore) -> SharedPerm | None:
    """The permissions files made in the object store ``store`` get (see
    :func:`shared_perm`; its repository is the folder above ``objects``)."""
    path = getattr(store, "path", None)
    return _perm(store, os.path.dirname(os.fspath(path))) if path is not None else None


def _perm(store: BaseObjectStore, controldir: str) -> SharedPerm | None:
    perm: SharedPerm | None = getattr(store, "shared_perm", None)
    if perm is not None:
        return perm
    try:
        st = os.stat(controldir)
    except OSError:
        return None
    if st.st_mode & stat.S_ISGID and st.st_mode & stat.S_IWGRP:
        return PERM_GROUP
    return None


# datom's lock files in a local remote (the writers' turn, and _maintenance's two).
LOCK_FILES = ("datom-writers.lock", "datom-maintenance.lock", "datom-compact.lock")


def lock_mode(remote: Repo) -> int:
    """The mode a lock file in ``remote`` is created with: one the team of a group-shared
    remote may open for writing."""
    perm = shared_perm(remote)
    return 0o644 if perm is None else (0o644 | perm.tweak) & 0o666


def open_lock(path: str | os.PathLike[str], mode: int) -> int:
    """A descriptor to ``flock`` the lock file ``path``, created with ``mode`` (corrected
    to it by its owner when the umask took bits away); one another user made that this
    process may read but not write is opened read-only, which ``flock`` accepts.
    :class:`OSError` when it can be neither."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    except PermissionError:
        if not os.path.exists(path):
            raise
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    if mode != 0o644:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != mode:
            os.fchmod(fd, mode)  # the umask took the team's bits away
    return fd


def widen(paths: Iterable[str | os.PathLike[str]], perm: SharedPerm | None) -> None:
    """Give each of ``paths`` (files or folders) the permissions ``perm`` asks for; paths
    another user owns, or that are gone, are left alone."""
    if perm is None:
        return
    for path in paths:
        try:
            if os.stat(path).st_uid == os.geteuid():
                adjust_shared_perm(path, perm)
        except (FileNotFoundError, PermissionError):
            continue


def ref_paths(root: Path, name: bytes) -> list[str]:
    """The file of ref ``name`` in the repository ``root`` and the folders above it."""
    file = root / os.fsdecode(name)
    folders = [str(p) for p in file.parents if root in p.parents]
    return [*reversed(folders), str(file)]
