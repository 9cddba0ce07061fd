"""A store in a local directory, with crash-safe writes."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from datom_core._errors import StoreError
from datom_core._store._base import CHUNK_SIZE, Document, Staged, Store, uninitialised_buffer
from datom_core._store._paths import (
    TEMP_MARKER,
    TEMP_NAME,
    check_encodable,
    check_source,
    normalise_prefix,
)

__all__ = ["LocalStore"]

# Bytes read and hashed per step by read_verified: a slice this small is still in the CPU's
# cache when the hash reads it (4 MiB slices cost ~5 ms more on a 19 MB object).
_READ_CHUNK = 256 << 10

# errno values meaning "this filesystem cannot hard-link": fall back to check-then-replace.
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EMLINK}
# A key with this folder in it is a mirror of documents git holds (STORE.md: the manifest,
# each table's or set's metadata, history and version snapshots): `validate --fix` rebuilds
# it from git, so a power cut may take back its last rename (see _publish).
_MIRROR_SEGMENT = ".metadata"


class LocalStore(Store):
    """A datom root in a local directory: ``<root>/<prefix>/datom/``.

    Directories are created on the first write. Every write goes to a temp file in the
    target's directory, is fsynced, then renamed into place, so a crash leaves either the
    old object or the new one, never a torn file. :meth:`put_if_absent` publishes with a
    hard link, which fails atomically if the name is taken. Reads, ``exists`` and ``size``
    are plain system calls (no filesystem layer to import or build in a fresh process).
    """

    def __init__(self, root: str | os.PathLike[str], prefix: str | None = None) -> None:
        check_encodable(root, "store folder")
        try:
            base = Path(os.fspath(root)).expanduser().absolute()
        except RuntimeError as e:  # "~" with no HOME and no password entry
            raise StoreError(
                f"store folder {os.fspath(root)!r} names a home directory this process does "
                "not have (HOME is unset): give an absolute path"
            ) from e
        self.root = str(base)
        self.prefix = normalise_prefix(prefix)
        datom_root = (base / self.prefix if self.prefix else base) / "datom"
        super().__init__(url=datom_root.as_uri(), root=datom_root.as_posix())

    def _make_fs(self) -> Any:
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem()

    def describe(self) -> dict[str, Any]:
        """``{"type": "local", "root": ..., "prefix": ...}``."""
        return {"type": "local", "root": self.root, "prefix": self.prefix}

    def _remedy(self) -> str:
        return f"check that {self.root} exists and that this user may read and write it"

    # -- crash-safe writes --------------------------------------------------------------

    def write_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` at ``key`` atomically, replacing any object already there."""
        payload = bytes(data)
        self._publish(key, lambda out: out.write(payload), exclusive=False)

    def upload_file(self, local_path: str | os.PathLike[str], key: str) -> None:
        """Copy a local file to ``key`` atomically, replacing any object already there."""
        source = check_source(local_path, key)
        self._publish(key, _copier(source), exclusive=False)

    def put_if_absent(self, key: str, data: bytes | str | os.PathLike[str]) -> bool:
        """Store ``data`` (bytes or a local file path) at ``key`` unless an object is there.

        Atomic: of several concurrent callers exactly one gets True, and an existing object
        is never replaced. A file :meth:`open_staging` made in ``key``'s folder is linked.
        """
        if isinstance(data, str | os.PathLike):
            source = check_source(data, key)
            if _staged_beside(Path(source), Path(self._path(key))):
                return self._link_staged(Path(source), key)
            writer = _copier(source)
        else:
            payload = bytes(data)

            def writer(out: BinaryIO) -> None:
                out.write(payload)

        if self.exists(key):
            return False
        return self._publish(key, writer, exclusive=True)

    def open_staging(self, folder: str) -> tuple[Path, int]:
        """A new empty file in the store's ``folder`` key, open for writing (its path and
        descriptor): named as a temp file (``TEMP_NAME``, hidden from listings), it is
        linked into place, not copied, when given to :meth:`put_if_absent` for a key of
        that folder. The caller closes it, and deletes it after."""
        path = Path(self._path(folder)) / f".parquet{TEMP_MARKER}{secrets.token_hex(8)}"
        with self._translated("write", folder):
            return path, _create(path)

    def _link_staged(self, source: Path, key: str) -> bool:
        """:meth:`put_if_absent` of a file staged beside ``key``: synced, then linked."""
        final = Path(self._path(key))
        with self._translated("write", key):
            fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)  # the bytes are on disk before their name appears
            finally:
                os.close(fd)
            wrote = _link_or_replace(source, final, exclusive=True)
            if wrote:
                _fsync_dir(final.parent)
            return wrote

    def stage_in_order(self, documents: Sequence[Document]) -> Staged:
        """Every document's bytes written and synced now, none named before ``publish()``
        (as :meth:`_publish` does one by one), in one journal commit: each temp file's
        writeback is started first, so the first ``fsync`` commits the blocks of all of
        them and the later ones only wait for their own (on ext4: one commit, not four).
        """
        staged = _LocalStaged(self)
        try:
            for key, data, exclusive in documents:
                staged.add(key, data, exclusive)
            staged.sync()
        except BaseException:
            staged.discard()
            raise
        return staged

    def read_bytes(self, key: str) -> bytes:
        """The whole object at ``key``. :class:`NotFoundError` if there is none."""
        path = self._path(key)
        with self._translated("read", key), open(path, "rb") as f:
            return f.read()

    def _info(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        with self._translated("inspect", key):
            try:
                st = os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return {"type": "file", "size": st.st_size, "mtime": st.st_mtime}

    def _read_hashing(self, path: str) -> tuple[memoryview, str]:
        # One buffer of the file's size, filled in place and hashed slice by slice while
        # each slice is still in cache: no intermediate copies, no second pass.
        digest = hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            data = uninitialised_buffer(os.fstat(f.fileno()).st_size)
            filled = 0
            while filled < len(data):
                got = f.readinto(data[filled : filled + _READ_CHUNK])
                if not got:
                    break  # the file shrank while reading: the digest will say so
                digest.update(data[filled : filled + got])
                filled += got
        return data[:filled].toreadonly(), digest.hexdigest()

    def delete(self, key: str) -> None:
        """Remove the object at ``key`` (repair and tests only). Missing is not an error."""
        path = self._path(key)
        with self._translated("delete", key):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def check_access(self) -> None:
        """The datom root (or, before the first write, its nearest ancestor) is a directory."""
        probe = Path(self._root)
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            raise StoreError(
                f"store {self.url} is not usable: {probe} is not a directory; "
                f"point the store at a directory"
            )
        if not os.access(probe, os.R_OK | os.X_OK):
            raise StoreError(f"store {self.url} is not readable: {self._remedy()}")

    def _publish(self, key: str, writer: Callable[[BinaryIO], object], *, exclusive: bool) -> bool:
        """Write via a synced temp file, then rename (or, if ``exclusive``, hard-link) it.

        Against a killed process the temp file and the rename suffice (the old object or
        the new one, never a torn one). The two fsyncs are for a power cut: the file's
        bytes are synced before its name appears, so no object is ever seen empty or torn;
        the directory is synced after the rename so that the name itself survives, which
        the parquet a version pins needs (it must outlive the push that records it). A
        mirror document (``.metadata/`` keys) skips that second sync: a cut may take back
        its last rename, leaving the previous document, the state a kill before the rename
        leaves, which the next write's mirror or ``validate --fix`` rewrites from git.
        """
        final = Path(self._path(key))
        with self._translated("write", key):
            temp = final.with_name(f".{final.name}{TEMP_MARKER}{secrets.token_hex(8)}")
            try:
                fd = _create(temp)
                with os.fdopen(fd, "wb") as out:
                    writer(out)
                    out.flush()
                    os.fsync(out.fileno())
                wrote = _link_or_replace(temp, final, exclusive=exclusive)
                if _MIRROR_SEGMENT not in key.split("/"):
                    _fsync_dir(final.parent)
                return wrote
            finally:
                temp.unlink(missing_ok=True)


@dataclass
class _Temp:
    """One staged document: its temp file (None: an exclusive one already there), open
    until synced."""

    key: str
    final: Path
    exclusive: bool
    path: Path | None = None
    fd: int | None = None


class _LocalStaged(Staged):
    """Temp files beside their documents, synced, renamed into place by ``publish()``."""

    def __init__(self, store: LocalStore) -> None:
        self._local = store
        self._temps: list[_Temp] = []

    def add(self, key: str, data: bytes, exclusive: bool) -> None:
        item = _Temp(key, Path(self._local._path(key)), exclusive)
        self._temps.append(item)
        if exclusive and self._local.exists(key):
            return
        item.path = item.final.with_name(f".{item.final.name}{TEMP_MARKER}{secrets.token_hex(8)}")
        with self._local._translated("write", key):
            item.fd = _create(item.path)
            _write_all(item.fd, bytes(data))
            _start_writeback(item.fd)

    def sync(self) -> None:
        for item in self._temps:
            if item.fd is not None:
                with self._local._translated("write", item.key):
                    os.fsync(item.fd)
                _close(item)

    def publish(self, after: Callable[[int], None] | None = None) -> None:
        try:
            for i, item in enumerate(self._temps):
                if item.path is not None:
                    with self._local._translated("write", item.key):
                        _link_or_replace(item.path, item.final, exclusive=item.exclusive)
                        if _MIRROR_SEGMENT not in item.key.split("/"):
                            _fsync_dir(item.final.parent)
                if after is not None:
                    after(i)
        finally:
            self.discard()

    def discard(self) -> None:
        for item in self._temps:
            _close(item)
            if item.path is not None:
                item.path.unlink(missing_ok=True)
        self._temps = []


def _close(item: _Temp) -> None:
    if item.fd is not None:
        fd, item.fd = item.fd, None
        os.close(fd)


def _create(temp: Path) -> int:
    """Open a new temp file; its folder is made only when the first try says it is missing
    (it exists for every write but a table's first)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(temp, flags, 0o666)
    except FileNotFoundError:
        temp.parent.mkdir(parents=True, exist_ok=True)
        return os.open(temp, flags, 0o666)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _start_writeback(fd: int) -> None:
    """Start writing the file's dirty pages out, without waiting (Linux; a no-op elsewhere)."""
    if _sync_file_range is not None:
        _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)


def _load_sync_file_range() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: Any = _load_sync_file_range()


def _staged_beside(source: Path, final: Path) -> bool:
    """Whether ``source`` is a temp file in ``final``'s folder (see ``open_staging``)."""
    return source.parent == final.parent and TEMP_NAME.match(source.name) is not None


def _copier(source: str) -> Callable[[BinaryIO], None]:
    def copy(out: BinaryIO) -> None:
        with open(source, "rb") as src:
            if not _sendfile(src, out):
                shutil.copyfileobj(src, out, CHUNK_SIZE)

    return copy


def _sendfile(src: BinaryIO, out: BinaryIO) -> bool:
    """Copy in the kernel (no round trip through Python buffers); False if unsupported."""
    out.flush()
    size, offset = os.fstat(src.fileno()).st_size, 0
    try:
        while offset < size:
            sent = os.sendfile(out.fileno(), src.fileno(), offset, size - offset)
            if sent == 0:
                break
            offset += sent
    except OSError:
        if offset:
            raise  # a partial copy cannot be resumed by the fallback
        return False
    if offset != size:
        raise OSError(f"short copy: {offset} of {size} bytes (the source changed while copying)")
    out.seek(offset)
    return True


def _link_or_replace(temp: Path, final: Path, *, exclusive: bool) -> bool:
    if not exclusive:
        os.replace(temp, final)
        return True
    try:
        os.link(temp, final)
        return True
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in _NO_LINK:
            raise
    # No hard links here: a check-then-rename leaves a tiny window for a concurrent
    # writer of the same key; both write the same content-addressed name, so the loser's
    # bytes replace the winner's. Only reachable on filesystems without link(2).
    if final.exists():
        return False
    os.replace(temp, final)
    return True


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not possible on every platform (e.g. Windows).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
