"""The clone's git index, updated entry by entry (an accelerator of the git layer;
switched off by ``DATOM_PLAIN=1``, see :mod:`datom_core._plain`).

Contract: after :meth:`FastIndex.update` the index names, for every path, the blob and
mode dulwich's own update would give it, with the file's stat, so ``git status`` is as
quiet as after dulwich's update. Measured (issue 30): dulwich's update is ~9x slower end
to end at 6,000 entries. Plain path (beside it, in ``_internals.update_index``): dulwich's
``Repo.open_index()``, entries set, ``Index.write()``.

datom keeps ``.git/index`` in step with HEAD so that ``git status`` in a clone is quiet,
but never needs it itself (commits are built from the parent tree). dulwich parses and
re-serialises every entry on each update (over a second at 6,000 entries), so this module
reads the index once per handle, keeps the entries' fixed-size headers as bytes, patches
the entries that changed and writes the file back in one ``join``.

Only version 2/3 indexes without extended entries are handled; extensions (the cache tree,
untracked cache, ...) are dropped on write, which git accepts (it rebuilds them). A version
4 index raises :class:`UnsupportedIndex`, and the caller falls back to dulwich; so does a
split one (``link``), though a clone using one is refused before any write
(``_settings.check_index``: dulwich cannot read it either). Bytes that are no index
(truncated, overwritten) raise :class:`ValueError`: the clone is then refused by
``WorkTree.check_readable`` before anything changes.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from pathlib import Path

from dulwich.file import FileLocked

__all__ = ["FastIndex", "UnsupportedIndex"]


_HEADER = struct.Struct(">4sLL")
_ENTRY = struct.Struct(">10L20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
_FIXED = _ENTRY.size  # 62
_MASK = 0xFFFFFFFF
_EXTENDED = 0x4000
FILE_MODE = 0o100644


class UnsupportedIndex(Exception):
    """An index this module does not rewrite (split, version 4, extended entries)."""


def _padded(path: bytes) -> bytes:
    return path + b"\0" * (8 - (_FIXED + len(path)) % 8)


def entry_header(st: os.stat_result, sha_hex: bytes, mode: int = FILE_MODE) -> bytes:
    """The fixed part of an index entry (without its flags) for a file with stat ``st``
    and git mode ``mode`` (a plain file, an executable, a symbolic link)."""
    return _ENTRY.pack(
        int(st.st_ctime) & _MASK,
        st.st_ctime_ns % 1_000_000_000,
        int(st.st_mtime) & _MASK,
        st.st_mtime_ns % 1_000_000_000,
        st.st_dev & _MASK,
        st.st_ino & _MASK,
        mode,
        st.st_uid & _MASK,
        st.st_gid & _MASK,
        st.st_size & _MASK,
        bytes.fromhex(sha_hex.decode()),
        0,  # flags: the name length is filled in on write
    )[:-2]


class FastIndex:
    """``.git/index`` as its serialized entries, with where each one starts; re-read only
    when the file changed. A write that changes existing entries (the common case: the
    same documents rewritten) patches those bytes in place; one that adds or removes a
    path re-sorts and re-joins them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[bytes, bytes] | None = None  # path -> the whole entry's bytes
        self._body: bytearray | None = None  # the entries, sorted, as the file holds them
        self._at: dict[bytes, int] = {}  # path -> where its entry starts in _body
        self._stamp: tuple[int, int, int] | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def entries(self) -> dict[bytes, bytes]:
        stamp = self._stat()
        if self._entries is None or stamp != self._stamp:
            self._entries = {} if stamp is None else _parse(self.path.read_bytes())
            self._body, self._stamp = None, stamp
        return self._entries

    def update(
        self,
        root: Path,
        changes: Mapping[bytes, bytes | None],
        modes: Mapping[bytes, int] | None = None,
    ) -> None:
        """Set ``path -> blob sha`` (from the file's current stat; ``modes``: git's mode of
        those that are not plain files) or drop ``path -> None``."""
        entries = self.entries()
        reorder = self._body is None
        patched: list[bytes] = []
        for path, sha in changes.items():
            if sha is None:
                reorder |= entries.pop(path, None) is not None
            else:
                reorder |= path not in entries
                mode = modes.get(path, FILE_MODE) if modes else FILE_MODE
                header = entry_header(os.lstat(root / os.fsdecode(path)), sha, mode)
                flags = min(len(path), 0xFFF).to_bytes(2, "big")
                entries[path] = header + flags + _padded(path)
                patched.append(path)
        if reorder or self._body is None:
            self._rejoin(entries)
        else:
            for path in patched:
                at = self._at[path]
                self._body[at : at + _FIXED] = entries[path][:_FIXED]  # same name, same size
        self._write(len(entries))

    def _rejoin(self, entries: dict[bytes, bytes]) -> None:
        at, pos = {}, 0
        order = sorted(entries)
        for path in order:
            at[path] = pos
            pos += len(entries[path])
        self._body, self._at = bytearray(b"".join([entries[p] for p in order])), at

    def _write(self, count: int) -> None:
        assert self._body is not None
        header = _HEADER.pack(b"DIRC", 2, count)
        digest = hashlib.sha1(header)
        digest.update(self._body)
        # git's own protocol: write index.lock exclusively, then rename it over the index.
        lock = self.path.with_name("index.lock")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(lock, flags, 0o644)
        except FileExistsError:
            raise FileLocked(str(self.path), str(lock)) from None  # whose: _gitlocks decides
        try:
            with os.fdopen(fd, "wb", buffering=0) as f:
                for part in (header, self._body, digest.digest()):
                    view = memoryview(part)
                    while view:
                        view = view[f.write(view) :]
            os.replace(lock, self.path)
        except BaseException:
            lock.unlink(missing_ok=True)
            self._entries = self._body = None  # re-read what is on disk next time
            raise
        self._stamp = self._stat()


def _parse(data: bytes) -> dict[bytes, bytes]:
    """The entries of an index; :class:`ValueError` for bytes git does not read as one
    either (truncated, not an index), :class:`UnsupportedIndex` for a form left to dulwich."""
    end = len(data) - 20  # the checksum
    if end < _HEADER.size or data[:4] != b"DIRC":
        raise ValueError("not an index, or truncated")
    _, version, count = _HEADER.unpack_from(data)
    if version == 4:
        raise UnsupportedIndex("index version 4")
    if version not in (2, 3):
        raise ValueError(f"index version {version}")
    entries: dict[bytes, bytes] = {}
    pos = _HEADER.size
    for _ in range(count):
        flags = int.from_bytes(data[pos + _FIXED - 2 : pos + _FIXED], "big")
        if flags & _EXTENDED or flags & 0x3000:
            raise UnsupportedIndex("extended or conflicted entries")
        name_start = pos + _FIXED
        name_end = data.find(b"\0", name_start, end)
        if name_end < 0:
            raise ValueError("truncated")
        path = data[name_start:name_end]
        size = _FIXED + len(path) + (8 - (_FIXED + len(path)) % 8)
        entries[path] = data[pos : pos + size]
        pos += size
    while pos + 8 <= end:  # extensions: refuse the one that changes the meaning (split index)
        signature = data[pos : pos + 4]
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        if signature == b"link":
            raise UnsupportedIndex("split index")
        pos += 8 + size
    return entries
