"""Large loose objects: their stored form, written while their id is computed (private to
the git layer).

A loose object of :data:`STORED_FROM` bytes or more (a big project's manifest, a deep
table's history) is written as a zlib stream of stored blocks (see :mod:`._loose`): no
deflate, yet still an Adler-32 over every byte and a megabyte written, as much again as the
SHA-1 that names it. None of that needs the name. So :func:`staged_blob` hands the bytes to
this process's worker thread as soon as they exist: it writes them under a temporary name
in the store's objects folder while the writing thread hashes them (SHA-1, Adler-32 and
``writev`` all run without the GIL), builds the trees and takes the writers' turn.
``write_loose`` then renames the file into place (:meth:`Staged.take`); an object that is
not written after all (unchanged, a push rejected, an error) loses its file in
:func:`release`, which every builder of a commit calls when it is done with it.

A process killed meanwhile leaves a ``tmp_obj_*`` file in the objects folder, which git
ignores, as it does its own; a compaction removes those over an hour old
(:func:`drop_stale_files`: a live writer's lasts milliseconds).
"""

from __future__ import annotations

import os
import secrets
import time
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import Future

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import Blob, ShaFile

from .._checkpoint import checkpoint
from .._worker import ProcessWorker

__all__ = [
    "STORED_FROM",
    "LargeBlob",
    "Staged",
    "drop_stale_files",
    "release",
    "staged_blob",
    "stored_form",
    "write_parts",
]

STORED_FROM = 64 << 10  # raw bytes from which a loose object is written uncompressed
_BLOCK = 0xFFFF  # the most a stored deflate block holds
_MAX_PARTS = 512  # buffers in one writev (the system's limit is at least 1,024)
_WRITER = ProcessWorker("datom-loose")
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_PREFIX = "tmp_obj_"
STALE_AFTER = 3600.0  # seconds after which a staged file is a killed writer's


def stored_form(header: bytes, chunks: Iterable[bytes]) -> list[bytes | memoryview]:
    """The loose form of an object (``header``, then its content in ``chunks``) as a zlib
    stream of stored blocks, built directly (zlib's own level 0 still runs every byte
    through its deflate loop): the header and each slice of the content in a block of its
    own, an empty final block, the Adler-32 of it all."""
    parts: list[bytes | memoryview] = [b"\x78\x01", _block_head(len(header)), header]
    check = zlib.adler32(header)
    for chunk in chunks:
        view = memoryview(chunk)
        check = zlib.adler32(view, check)
        for start in range(0, len(view), _BLOCK):
            piece = view[start : start + _BLOCK]
            parts += [_block_head(len(piece)), piece]
    parts += [_block_head(0, final=True), check.to_bytes(4, "big")]
    return parts


def _block_head(size: int, final: bool = False) -> bytes:
    """A stored deflate block's header: BFINAL and BTYPE 00 (byte-aligned), LEN, NLEN."""
    return bytes((final,)) + size.to_bytes(2, "little") + (size ^ 0xFFFF).to_bytes(2, "little")


def write_parts(fd: int, parts: Sequence[bytes | memoryview]) -> None:
    """One ``writev`` where possible: a large object's parts are never joined in memory
    (a fresh megabyte costs as much to fault in as to hash)."""
    done = os.writev(fd, parts) if len(parts) <= _MAX_PARTS else 0
    rest = memoryview(b"".join(parts))[done:] if done < sum(map(len, parts)) else None
    while rest:
        rest = rest[os.write(fd, rest) :]


class Staged:
    """The loose form of one large blob, being written to a temporary file in ``folder``
    (a store's objects folder) by the worker thread."""

    def __init__(self, folder: str, blob: Blob) -> None:
        self.folder = folder
        self._pid = os.getpid()  # a forked child has not the thread writing it
        self.tmp = os.path.join(folder, f"{_PREFIX}{self._pid}_{secrets.token_hex(4)}")
        header, chunks = blob._header(), blob.as_raw_chunks()
        self._job: Future[None] | None = _WRITER.executor().submit(_write, self.tmp, header, chunks)

    def take(self, folder: str, final: str) -> bool:
        """Move the file to ``final``, the object's path in ``folder``; False when it was
        staged for another store, or taken or discarded already, or could not be written
        (its file is then gone): the caller writes the object itself, and meets the error
        again if it lasts."""
        job = self._job
        if job is None or folder != self.folder or os.getpid() != self._pid:
            return False
        self._job = None
        try:
            job.result()
            try:
                os.replace(self.tmp, final)
            except FileNotFoundError:  # the object's fan-out folder is new
                os.makedirs(os.path.dirname(final), exist_ok=True)
                os.replace(self.tmp, final)
        except Exception:
            _unlink(self.tmp)
            return False
        return True

    def discard(self) -> None:
        """Remove the file unless it was taken (waiting for the worker if it is writing
        it: removed earlier, it would be made again)."""
        if os.getpid() != self._pid:
            return  # the parent's to discard
        job, self._job = self._job, None
        if job is None or job.cancel():
            return
        try:
            job.result()
        except Exception:
            pass  # _write removed what it made
        _unlink(self.tmp)


class LargeBlob(Blob):
    """A blob whose loose form is being written ahead (:func:`staged_blob`)."""

    __slots__ = ("staged",)
    staged: Staged


def staged_blob(store: BaseObjectStore, raw: bytes) -> Blob:
    """The blob of ``raw``; when it is large and ``store`` is on disk, its loose form is
    already being written there. Call it before asking the blob's ``id``: computing the id
    is what the writing overlaps."""
    if len(raw) < STORED_FROM or not isinstance(store, DiskObjectStore):
        return Blob.from_string(raw)
    blob = LargeBlob.from_string(raw)
    blob.staged = Staged(os.fspath(store.path), blob)
    return blob


def release(objects: Iterable[ShaFile]) -> None:
    """Discard what was staged for ``objects`` and not taken."""
    for obj in objects:
        if isinstance(obj, LargeBlob):
            obj.staged.discard()


def drop_stale_files(
    folder: str | os.PathLike[str], now: float | None = None, prefix: str = _PREFIX
) -> int:
    """Remove the files named ``prefix``... in ``folder`` older than :data:`STALE_AFTER`
    (left by killed writers: staged objects, a loose object's or a pack's temporary file);
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


def _write(tmp: str, header: bytes, chunks: list[bytes]) -> None:
    fd = os.open(tmp, _NEW_FILE, 0o444)
    try:
        write_parts(fd, stored_form(header, chunks))
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    checkpoint("git:stage:written")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
