"""The store abstraction: bytes under a datom root, over any fsspec filesystem.

A store knows nothing about tables or JSON. Keys are ``/``-separated paths relative to the
datom root ``<root>/<prefix>/datom/`` (``dm/<data_sha>.parquet``, ``.metadata/manifest.json``).
Every key is validated before it reaches a path, and every backend error is translated
into :class:`~datom_core.NotFoundError` or :class:`~datom_core.StoreError`, naming the key,
the store and what to do next, with any credential scrubbed from the message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np

from datom_core._errors import DatomError, IntegrityError, NotFoundError, StoreError
from datom_core._store._paths import TEMP_NAME, check_source, split_source, validate_key
from datom_core._store._reader import TranslatingReader

__all__ = ["CHUNK_SIZE", "Document", "Staged", "Store", "uninitialised_buffer"]

logger = logging.getLogger("datom_core.store")

CHUNK_SIZE = 1 << 20
"""Bytes per read when hashing or copying: memory stays constant whatever the object size."""
# (key, bytes, exclusive): what Store.write_in_order stores, exclusive ones only if absent
Document = tuple[str, bytes, bool]

# For these actions "not found" means the key is absent; otherwise (write, list...) it
# means the bucket or directory itself is missing: a store problem, not a missing object.
_READ_ACTIONS = frozenset({"read", "open", "inspect"})


class Store:
    """Bytes under one datom root, over one fsspec filesystem.

    Subclasses only say how to build the filesystem (:meth:`_make_fs`) and how to describe
    themselves; :class:`LocalStore` also replaces the writes with crash-safe ones. The
    filesystem is built lazily and rebuilt after a fork, because async fsspec filesystems
    (s3fs) are bound to the event loop of the process that created them.
    """

    url: str
    """The datom root as a URL, e.g. ``s3://bucket/proj/datom``. Never holds secrets."""

    def __init__(self, url: str, root: str) -> None:
        self.url = url
        self._root = root.rstrip("/")
        self._fs_cache: Any = None
        self._fs_pid: int | None = None

    # -- construction hooks -------------------------------------------------------------

    def _make_fs(self) -> Any:
        """Build the fsspec filesystem (called lazily, once per process)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What ``project.yaml`` records to find this store again. Never secrets."""
        raise NotImplementedError

    def _secrets(self) -> tuple[str, ...]:
        """Credential strings that must never appear in a message."""
        return ()

    def _backend_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types of the backend that mean "the store failed" (translated)."""
        return (OSError,)

    def _remedy(self) -> str:
        """What to check when the store fails, appended to error messages."""
        return "check that the store location exists and is readable/writable"

    def _remedy_for(self, error: BaseException) -> str:
        """What to check for ``error``: a full disk, a quota or a read-only filesystem
        named as such (else :meth:`_remedy`)."""
        code = next((c.errno for c in _chain(error) if isinstance(c, OSError) and c.errno), None)
        if code == errno.ENOSPC:
            return f"the disk holding store {self.url} is full (ENOSPC): free space, then retry"
        if code == errno.EDQUOT:
            return f"the disk quota of store {self.url} is used up (EDQUOT): free space, retry"
        if code == errno.EROFS:
            return f"store {self.url} is on a read-only filesystem (EROFS): mount it writable"
        return self._remedy()

    def _open_kwargs(self) -> dict[str, Any]:
        """Extra arguments for ``fs.open`` when reading (e.g. a bounded block size)."""
        return {}

    # -- plumbing -----------------------------------------------------------------------

    @property
    def _fs(self) -> Any:
        pid = os.getpid()
        if self._fs_cache is None or self._fs_pid != pid:
            self._fs_cache = self._make_fs()
            self._fs_pid = pid
        return self._fs_cache

    def __getstate__(self) -> dict[str, Any]:
        # A live filesystem (event loop, sockets) cannot cross a process boundary.
        state = self.__dict__.copy()
        state["_fs_cache"] = None
        state["_fs_pid"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _path(self, key: str) -> str:
        return f"{self._root}/{validate_key(key)}"

    def _redact(self, text: str) -> str:
        for secret in self._secrets():
            if secret:
                text = text.replace(secret, "***")
        return text

    def _detail(self, error: BaseException) -> str:
        text = str(error) or type(error).__name__
        return self._redact(f"{type(error).__name__}: {text}")

    @contextlib.contextmanager
    def _translated(self, action: str, key: str) -> Iterator[None]:
        """Turn backend errors raised inside the block into datom errors."""
        try:
            yield
        except DatomError:
            raise
        except FileNotFoundError as e:
            if action not in _READ_ACTIONS:
                raise StoreError(
                    f"could not {action} {key!r} in store {self.url}: its location is missing "
                    f"({self._detail(e)}); {self._remedy_for(e)}"
                ) from e
            raise NotFoundError(f"{key!r} not found in store {self.url} ({self._detail(e)})") from e
        except PermissionError as e:
            raise StoreError(
                f"access denied while trying to {action} {key!r} in store {self.url} "
                f"({self._detail(e)}); {self._remedy_for(e)}"
            ) from e
        except self._backend_errors() as e:
            raise StoreError(
                f"could not {action} {key!r} in store {self.url} ({self._detail(e)}); "
                f"{self._remedy_for(e)}"
            ) from e

    def _info(self, key: str) -> dict[str, Any] | None:
        """The backend's info for an object at ``key``, or None if there is none."""
        path = self._path(key)
        with self._translated("inspect", key):
            try:
                info = self._fs.info(path)
            except FileNotFoundError:
                return None
        return info if info.get("type") == "file" else None

    # -- reading ------------------------------------------------------------------------

    def read_bytes(self, key: str) -> bytes:
        """The whole object at ``key``. :class:`NotFoundError` if there is none."""
        path = self._path(key)
        with self._translated("read", key):
            return bytes(self._fs.cat_file(path))

    def read_if_present(self, key: str) -> bytes | None:
        """The whole object at ``key``; None if there is none."""
        try:
            return self.read_bytes(key)
        except NotFoundError:
            return None

    def read_verified(self, key: str, expected_sha: str) -> memoryview:
        """The whole object at ``key``, handed out only if its SHA-256 is ``expected_sha``.

        The bytes are hashed as they arrive (no second pass over them), so whatever parses
        the result never sees unverified bytes. :class:`IntegrityError` naming the key, the
        expected and the actual digest when they differ; :class:`NotFoundError` if there is
        no object.
        """
        path = self._path(key)
        with self._translated("read", key):
            data, actual = self._read_hashing(path)
        if actual != expected_sha.lower():
            raise IntegrityError(
                f"{key} in store {self.url} does not match its expected SHA-256 "
                f"(expected {expected_sha}, actual {actual}): the stored bytes were altered "
                "or damaged. Nothing was parsed.",
                key=key,
                expected=expected_sha,
                actual=actual,
            )
        return data

    def _read_hashing(self, path: str) -> tuple[memoryview, str]:
        """All bytes at ``path`` and their hex SHA-256, hashed chunk by chunk as read."""
        digest = hashlib.sha256()
        data = bytearray()
        with self._fs.open(path, "rb", **self._open_kwargs()) as stream:
            while chunk := stream.read(CHUNK_SIZE):
                digest.update(chunk)
                data += chunk
        return memoryview(data).toreadonly(), digest.hexdigest()

    def open_read(self, key: str) -> BinaryIO:
        """A seekable binary stream over the object at ``key`` (close it, or use ``with``).

        Errors while reading are translated like those of :meth:`read_bytes`.
        """
        path = self._path(key)
        with self._translated("open", key):
            if self._info(key) is None:
                raise FileNotFoundError(path)
            handle = self._fs.open(path, "rb", **self._open_kwargs())
        return TranslatingReader(handle, self._translated, key)  # type: ignore[return-value]

    def exists(self, key: str) -> bool:
        """Whether an object (not a directory) exists at ``key``."""
        return self._info(key) is not None

    def size(self, key: str) -> int:
        """Size in bytes of the object at ``key``. :class:`NotFoundError` if there is none."""
        info = self._info(key)
        if info is None:
            raise NotFoundError(f"{key!r} not found in store {self.url}")
        return int(info["size"])

    def modified(self, key: str) -> float | None:
        """When the object at ``key`` was last written, in seconds since the epoch (None:
        the backend does not say). :class:`NotFoundError` if there is none."""
        info = self._info(key)
        if info is None:
            raise NotFoundError(f"{key!r} not found in store {self.url}")
        for name in ("mtime", "LastModified", "last_modified", "created"):
            value = info.get(name)
            if isinstance(value, dt.datetime):
                return value.timestamp()
            if isinstance(value, int | float):
                return float(value)
        return None

    def sha256(self, key: str) -> str:
        """Hex SHA-256 of the object at ``key``, streamed in 1 MiB chunks."""
        digest = hashlib.sha256()
        with self.open_read(key) as stream:
            while chunk := stream.read(CHUNK_SIZE):
                digest.update(chunk)
        return digest.hexdigest()

    def list(self, prefix: str = "") -> list[str]:
        """Sorted keys of every object below ``prefix`` (recursive; ``""`` is everything).

        ``prefix`` is a directory-like key: ``"dm"`` lists ``dm/...``, not ``dm2/...``.
        A prefix with nothing under it gives an empty list.
        """
        prefix = validate_key(prefix, prefix=True)
        base = f"{self._root}/{prefix}" if prefix else self._root
        with self._translated("list", prefix or "/"):
            self._fs.invalidate_cache(base)
            found = self._fs.find(base, withdirs=False)
        strip = self._fs._strip_protocol(self._root).rstrip("/") + "/"
        keys = []
        for path in found:
            if not path.startswith(strip) or path.endswith("/"):
                continue
            key = path[len(strip) :]
            if prefix and not key.startswith(prefix + "/"):
                continue
            if TEMP_NAME.match(key.rsplit("/", 1)[-1]):
                continue
            keys.append(key)
        return sorted(keys)

    # -- writing ------------------------------------------------------------------------

    def write_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` at ``key``, replacing any object already there."""
        path = self._path(key)
        with self._translated("write", key):
            self._fs.pipe_file(path, bytes(data))

    def upload_file(self, local_path: str | os.PathLike[str], key: str) -> None:
        """Stream a local file to ``key``, replacing any object already there."""
        path = self._path(key)
        source = check_source(local_path, key)
        with self._translated("upload", key):
            self._fs.put_file(source, path)

    def put_if_absent(self, key: str, data: bytes | str | os.PathLike[str]) -> bool:
        """Store ``data`` (bytes, or a local file path) at ``key`` unless an object is there.

        Returns True if this call wrote the object, False if one already existed (whose
        bytes are left untouched). Used for content-addressed parquet, so a pinned object is
        never overwritten. This generic version checks, then writes with fsspec's
        ``mode="create"``; how atomic that is depends on the filesystem.
        """
        path = self._path(key)
        source, payload = split_source(data, key)
        if self.exists(key):
            return False
        with self._translated("write", key):
            try:
                if source is not None:
                    self._fs.put_file(source, path, mode="create")
                else:
                    self._fs.pipe_file(path, payload, mode="create")
            except FileExistsError:
                return False
        return True

    def put_content_named(self, key: str, data: bytes) -> bool:
        """:meth:`put_if_absent` of a document named after its content (any object already
        at ``key`` holds these bytes), which an object store does in one request."""
        return self.put_if_absent(key, data)

    def write_in_order(
        self, documents: Sequence[Document], after: Callable[[int], None] | None = None
    ) -> None:
        """Store each ``(key, data, exclusive)`` in turn: an exclusive one only where no
        object is (as :meth:`put_if_absent`), the others replacing (:meth:`write_bytes`).
        Readers meet them in this order; ``after(i)`` runs once the ``i``-th is in place."""
        self.stage_in_order(documents).publish(after)

    def stage_in_order(self, documents: Sequence[Document]) -> Staged:
        """Prepare :meth:`write_in_order` of ``documents`` (a local store writes and syncs
        their bytes now), naming none of them before ``publish()``."""
        return _WrittenOnPublish(self, documents)

    def delete(self, key: str) -> None:
        """Remove the object at ``key`` (repair and tests only). Missing is not an error."""
        with self._translated("delete", key), contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(self._path(key))

    def check_access(self) -> None:
        """Cheap probe of the store; :class:`StoreError` with the remedy if it fails."""
        with self._translated("reach", "/"):
            try:
                self._fs.info(self._root)
            except FileNotFoundError:
                pass  # nothing written yet: reachable is all we can ask

    def prepare(self) -> None:
        """Build the filesystem and reach the store once, beside other work (``clone``
        runs it while the metadata downloads). Best effort: a failure is left for the
        first real operation to report."""
        with contextlib.suppress(Exception):
            self.check_access()


class Staged:
    """Documents a store has prepared (:meth:`Store.stage_in_order`): ``publish(after)``
    names them in order (see :meth:`Store.write_in_order`), ``discard()`` drops them
    unnamed."""

    def publish(self, after: Callable[[int], None] | None = None) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        raise NotImplementedError


class _WrittenOnPublish(Staged):
    """A store that prepares nothing ahead: publishing writes each document in turn."""

    def __init__(self, store: Store, documents: Sequence[Document]) -> None:
        self._store, self._documents = store, list(documents)

    def publish(self, after: Callable[[int], None] | None = None) -> None:
        for i, (key, data, exclusive) in enumerate(self._documents):
            if exclusive:
                self._store.put_if_absent(key, data)
            else:
                self._store.write_bytes(key, data)
            if after is not None:
                after(i)

    def discard(self) -> None:
        self._documents = []


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and its causes (``__cause__``, else ``__context__``), outermost first."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def uninitialised_buffer(size: int) -> memoryview:
    """A writable buffer of ``size`` bytes, not zeroed first (every byte gets overwritten)."""
    return np.empty(size, dtype=np.uint8).data
