"""Loose objects written once and shared between a clone and a local remote (private to the
git layer).

A small write adds a handful of objects, each stored as a loose file (``objects/xx/yyyy``).
They are written here rather than by dulwich's ``add_object`` for three reasons:

* **Compressed at zlib level 1** (:data:`LOOSE_LEVEL`, what ``core.looseCompression=1``
  asks of git), and objects over :data:`STORED_FROM` bytes not compressed at all (zlib's
  stored blocks, level 0): loose objects live only until the next compaction packs them
  (compressing them then, once), while deflating the large documents of a big project (a
  3,000-table manifest, a 1,000-version history) on every write costs milliseconds, more
  than hashing and writing them together. A large blob of a new commit has its file
  written ahead, while its id is computed (:mod:`._stored`). The space this takes is
  bounded by the loose budget of :mod:`_maintenance`. Any zlib stream is a valid loose
  object for git and dulwich.
* **Written once per machine.** An object copied between two repositories on one
  filesystem (the clone and its local remote, either way) is hard-linked, as ``git clone
  --local`` does: no decompression, no second deflate, one system call. Where links are
  refused (another filesystem, another owner) the compressed bytes are copied as they are.
* **A pack for a large transfer.** A clone catching up many commits (a first clone, a
  long absence) gets them as one pack of raw copies (``_packs.copy_as_pack``), as git keeps
  a fetched pack: no fan-out directory to make (on ext4 a new directory costs hundreds
  of microseconds, a file tens), no object parsed.
* **No directory calls in the common case.** The fan-out directory is created only when
  the first attempt says it is missing (it exists for all but the first object of its 256
  fan-out names).

Nothing is fsynced: a loose object (or a pack of copies) becomes visible by ``rename``/``link`` of a complete
file, so a killed process leaves the old state or the new one (a stray temporary file at
worst, which git ignores), and a ref only ever names objects already in place. Git itself
does not fsync loose objects by default either; durability against power loss is what the
remote's ref update is for (dulwich fsyncs it).
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import Commit, ObjectID, ShaFile

from .._memory import KeyedMemory
from ._diff import names_between
from ._objects import tree_of
from ._read import load
from ._stored import STORED_FROM, LargeBlob, stored_form, write_parts

__all__ = [
    "LOOSE_LEVEL",
    "STORED_FROM",
    "commit_object_ids",
    "commit_objects",
    "commit_of",
    "copy_objects",
    "split_large",
    "write_loose",
]

LOOSE_LEVEL = 1
_FOLDER_TRIES = 16  # a fan-out folder made again while git's prune-packed removes it
# errno values of link(2) meaning "no hard link here": copy the compressed bytes instead.
_NO_LINK = {errno.EPERM, errno.EACCES, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS,
            errno.EXDEV, errno.EMLINK}  # fmt: skip
_SUBMODULE = 0o160000
# Parsed commits by id (an id names one content in every store), never mutated.
_COMMITS: KeyedMemory[bytes, Commit] = KeyedMemory(256)  # parsed commits by id, as trees are kept


def _path(store: DiskObjectStore, sha: bytes) -> str:
    hexsha = sha.decode("ascii")
    return os.path.join(store.path, hexsha[:2], hexsha[2:])


def _present(path: str) -> bool:
    """Whether a loose object is there, freshening its time as git does (a prune judges
    unreachable loose objects by age, and this one is about to be referenced)."""
    try:
        os.utime(path)
        return True
    except FileNotFoundError:
        return False
    except PermissionError:  # another user's object in a shared repository: it is there
        return True


def _publish(final: str, data: bytes | Sequence[bytes | memoryview]) -> None:
    """Write ``data`` (or its parts, in order) to a temporary file beside ``final`` and
    rename it into place."""
    folder = os.path.dirname(final)
    tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for attempt in range(_FOLDER_TRIES):
        try:
            fd = os.open(tmp, flags, 0o444)
            break
        except FileNotFoundError:
            if attempt == _FOLDER_TRIES - 1:
                raise
            # No fan-out folder: not made yet, or made and then removed as empty by a
            # concurrent git gc / repack -d (prune-packed): made again, as git's object
            # writer does.
            os.makedirs(folder, exist_ok=True)
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            write_parts(f.fileno(), [data] if isinstance(data, bytes) else data)
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_loose(store: BaseObjectStore, objects: Iterable[ShaFile]) -> int:
    """Store ``objects`` loose (level :data:`LOOSE_LEVEL`), skipping those already loose
    there; returns how many files were written. A store that is not on disk gets them
    through its own ``add_object``."""
    written = 0
    for obj in objects:
        if not isinstance(store, DiskObjectStore):
            store.add_object(obj)
            continue
        final = _path(store, obj.id)
        if _present(final):
            continue
        if not (isinstance(obj, LargeBlob) and obj.staged.take(os.fspath(store.path), final)):
            big = obj.raw_length() >= STORED_FROM
            form = stored_form(obj._header(), obj.as_raw_chunks()) if big else None
            _publish(final, form or obj.as_legacy_object(LOOSE_LEVEL))
        written += 1
    return written


def split_large(store: DiskObjectStore, shas: Sequence[bytes]) -> tuple[list[bytes], list[bytes]]:
    """``(small, large)``: the large are loose files of :data:`STORED_FROM` bytes or more
    (stored uncompressed, so linked rather than deflated into a pack)."""
    small: list[bytes] = []
    large: list[bytes] = []
    for sha in shas:
        try:
            big = os.stat(_path(store, sha)).st_size >= STORED_FROM
        except FileNotFoundError:
            big = False  # packed: read from its pack either way
        (large if big else small).append(sha)
    return small, large


def copy_objects(source: BaseObjectStore, target: BaseObjectStore, shas: Iterable[bytes]) -> int:
    """Make every object of ``shas`` present in ``target`` (``source`` holds them all):
    hard-linked or copied compressed when ``source`` has it loose, else written loose from
    its pack. Returns how many loose files ``target`` gained."""
    if not isinstance(source, DiskObjectStore) or not isinstance(target, DiskObjectStore):
        return write_loose(target, (source[ObjectID(sha)] for sha in shas))
    added = 0
    for sha in shas:
        src, dst = _path(source, sha), _path(target, sha)
        if _present(dst):
            continue
        if not _link(src, dst):
            write_loose(target, [source[ObjectID(sha)]])  # packed in the source
        added += 1
    return added


def _link(src: str, dst: str) -> bool:
    """Link (or copy the bytes of) the loose file ``src`` to ``dst``; False if ``src`` is not
    a loose file (the object is packed)."""
    for attempt in range(2):
        try:
            os.link(src, dst)
            return True
        except FileExistsError:
            return True  # a concurrent copy of the same (content-addressed) object
        except FileNotFoundError:
            if not os.path.exists(src):
                return False
            if attempt:
                raise
            os.makedirs(os.path.dirname(dst), exist_ok=True)
        except OSError as e:
            if e.errno not in _NO_LINK:
                raise
            try:
                with open(src, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                return False
            _publish(dst, data)
            return True
    return False


def commit_of(store: BaseObjectStore, sha: bytes) -> Commit | None:
    """The commit ``sha`` (None if it is not a commit), parsed once: a clone catching up
    meets each commit three times (the walk, its own objects, its child's parent)."""
    found = _COMMITS.get(sha)
    if found is None:
        obj = load(store, sha)
        if not isinstance(obj, Commit):
            return None
        _COMMITS.put(sha, obj)
        found = obj
    return found


def commit_object_ids(store: BaseObjectStore, commits: Iterable[bytes]) -> Iterator[bytes]:
    """The ids of each commit and of the trees and blobs it adds over its first parent,
    commit last (blobs are named, never read)."""
    return (sha for sha, _tree in commit_objects(store, commits))


def commit_objects(
    store: BaseObjectStore, commits: Iterable[bytes]
) -> Iterator[tuple[bytes, bool]]:
    """:func:`commit_object_ids`, each with whether it names a tree."""
    for sha in commits:
        c = commit_of(store, sha)
        assert c is not None
        parent = commit_of(store, c.parents[0]) if c.parents else None
        yield from _tree_ids(store, parent.tree if parent is not None else None, c.tree)
        yield sha, False


def _tree_ids(
    store: BaseObjectStore, old: bytes | None, new: bytes
) -> Iterator[tuple[bytes, bool]]:
    if old == new:
        return
    tree = tree_of(store, new)
    assert tree is not None
    yield new, True
    prev = tree_of(store, old) if old is not None else None
    for name in names_between(old, new, prev, tree):
        if name not in tree:
            continue
        mode, sha = tree[name]
        was = prev[name] if prev is not None and name in prev else None
        if was is not None and was[1] == sha:
            continue
        if mode & 0o170000 == 0o040000:
            base = was[1] if was is not None and was[0] & 0o170000 == 0o040000 else None
            yield from _tree_ids(store, base, sha)
        elif mode & 0o170000 != _SUBMODULE:  # a submodule's commit is not ours to send
            yield sha, False
