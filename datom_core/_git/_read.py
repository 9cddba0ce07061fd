"""Reading one object by id, loose files first (private to the git layer).

dulwich's ``DiskObjectStore[sha]`` looks in the store's packs first (listing the pack
folder again whenever the id is in none of them), then in its loose files, then in each
alternate the same way: about 60 µs for an object a clone reads through its alternate.
What a write reads is mostly what was pushed moments ago, loose files in the local remote
(which a clone lists as its alternate, :mod:`._shared`): those are opened here directly
(one ``open``, one inflate, ~20 µs). Everything else (packed objects, other kinds of store,
a file that does not inflate to a well-formed object of that id) goes through dulwich,
whose answer or error it then is. The bytes are checked against the id (SHA-1 of the
inflated file, a few µs for a document): a loose file that is not what its name says is
never returned, where dulwich, trusting the name, would return it unless a pack has the id.
Compaction inflates loose objects into pack entries the same way (``inflate_loose``), and
whether a clone holds an object is asked of those file names first (``has``).
"""

from __future__ import annotations

import hashlib
import os
import zlib

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import DEFAULT_LOOSE_OBJECT_SIZE_LIMIT, ObjectID, ShaFile

__all__ = ["has", "inflate_loose", "load", "load_loose"]

_TYPES: dict[bytes, int] = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
_HEADER_MAX = 32  # "commit 4294967296\0" and then some
_LOOKS = 3  # looks for an object a concurrent repack may be moving into a new pack


def load(store: BaseObjectStore, sha: bytes) -> ShaFile:
    """The object ``sha`` (40 hex digits) of ``store``; :class:`KeyError` if it has none."""
    for attempt in range(_LOOKS):
        found = load_loose(store, sha)
        if found is not None:
            return ShaFile.from_raw_string(found[0], found[1], ObjectID(sha))
        try:
            return store[ObjectID(sha)]
        except KeyError:
            # dulwich looks in its packs, then in the loose files: a concurrent git gc or
            # repack that packed the object and deleted its loose file in between hides it
            # from both. Looked for again, as git does (reprepare_packed_git): dulwich then
            # finds the new pack.
            if attempt == _LOOKS - 1:
                raise
    raise AssertionError("unreachable")


def load_loose(store: BaseObjectStore, sha: bytes) -> tuple[int, bytes] | None:
    """``(type, content)`` of the loose object ``sha`` in ``store`` or an alternate, its
    bytes checked against the id and not parsed; None when no loose file is that object."""
    for path in _loose_paths(store, sha):
        found = inflate_loose(path)
        if found is not None and hashlib.sha1(found[1]).hexdigest().encode() == sha:
            return found[0], found[1][found[2] :]
    return None


def has(store: BaseObjectStore, sha: bytes) -> bool:
    """Whether ``store`` (or an alternate) holds ``sha``: a loose file's name first, as
    ``sha in store`` decides for a loose object, without dulwich's look through every pack
    (and the listing of each pack folder that a miss there costs) before it."""
    return any(os.path.isfile(p) for p in _loose_paths(store, sha)) or ObjectID(sha) in store


def _loose_paths(store: BaseObjectStore, sha: bytes) -> list[str]:
    """Where ``sha`` would be a loose file: the store's own folder, then its alternates'
    (dulwich reads that list once); none for another kind of store or id."""
    if not isinstance(store, DiskObjectStore) or len(sha) != 40:
        return []
    name = sha.decode("ascii")
    stores = [store, *(s for s in store.alternates if isinstance(s, DiskObjectStore))]
    return [os.path.join(os.fspath(s.path), name[:2], name[2:]) for s in stores]


def inflate_loose(path: str) -> tuple[int, bytes, int] | None:
    """``(type, inflated bytes, where the content starts)`` of the loose object file at
    ``path`` (the bytes begin with git's header, what the id is the SHA-1 of); None when
    it is absent or not a whole, well-formed object (zlib checks its own checksum)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, DEFAULT_LOOSE_OBJECT_SIZE_LIMIT + _HEADER_MAX)
    except (OSError, zlib.error):
        return None
    nul = data.find(b"\0", 0, _HEADER_MAX)
    kind, _, size = data[: max(nul, 0)].partition(b" ")
    type_num = _TYPES.get(kind)
    whole = inflater.eof and not inflater.unconsumed_tail
    if nul < 0 or type_num is None or not size.isdigit() or not whole:
        return None
    return (type_num, data, nul + 1) if int(size) == len(data) - nul - 1 else None
