"""Inbox folders: listing the files to onboard, and knowing their SHA-256 cheaply.

An inbox is a local folder (the clone's ``input_files/`` by default) or a prefix on any
fsspec filesystem (``s3://bucket/prefix``). It is flat: one file is one table, and
sub-folders are reported, never entered. Names starting with ``.`` (``.DS_Store``,
``.gitkeep``) and Office lock files (``~$dm.xlsx``) are not data and are left out.

**The SHA cache.** Hashing every file on every scan would read the whole inbox each
time. :class:`ShaCache` remembers, per file, a *fingerprint* of its state and the SHA-256
of its bytes, so an unchanged file costs one ``stat`` (or one listing entry) instead of a
full read. It lives in the clone's git directory (``.git/datom-inbox-cache.json``): local
to one machine, never committed, never pushed; deleting it only costs re-hashing.

* Local files: the fingerprint is ``(size, mtime_ns, inode)``. As in git's index, a file
  modified within :data:`RACY_WINDOW_NS` of being hashed may still be changing inside one
  timestamp tick, so its hash is not cached (it is re-hashed on the next scan).
* Remote files: the fingerprint is ``(size, ETag)``; every new upload gets a new ETag. A
  filesystem that reports no ETag is never cached: every scan hashes its files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datom_core._errors import DatomError, NotFoundError, OnboardingError, StoreError

__all__ = ["Inbox", "InboxEntry", "ShaCache", "RACY_WINDOW_NS", "locate"]

#: A local file modified this recently before hashing is not cached (FAT has 2 s ticks).
RACY_WINDOW_NS = 2_000_000_000

_CHUNK = 8 << 20
_CACHE_FILE = "datom-inbox-cache.json"
_CACHE_FORMAT = 1

Fingerprint = tuple[Any, ...]


@dataclass(frozen=True)
class InboxEntry:
    """One item of an inbox listing.

    ``location`` is what users see and what rows carry: an absolute local path, or the
    full URL of a remote file. ``path`` is the same file as its filesystem names it.
    """

    name: str
    location: str
    path: str
    is_dir: bool
    fingerprint: Fingerprint | None
    modified: float | None = None  # last modification, POSIX seconds (None: not known)


class Inbox:
    """A flat folder of files to onboard: local, or on an fsspec filesystem."""

    def __init__(self, location: str | os.PathLike[str], fs: Any = None, root: str = "") -> None:
        self.fs = fs  # None: the local disk
        self.root = root if fs is not None else os.path.abspath(os.fspath(location))
        self.location = self.root if fs is None else str(location).rstrip("/")

    @classmethod
    def open(
        cls, location: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
    ) -> Inbox:
        """The inbox at a local path or an fsspec URL (``storage_options`` for the latter)."""
        fs, root = locate(location, storage_options)
        return cls(location, fs, root)

    def entries(self) -> list[InboxEntry]:
        """Every visible file and sub-folder, sorted by name; a missing inbox is refused."""
        raw = self._list_local() if self.fs is None else self._list_remote()
        return sorted((e for e in raw if _visible(e.name)), key=lambda e: e.name)

    def _list_local(self) -> list[InboxEntry]:
        if not os.path.isdir(self.root):
            if os.path.exists(self.root):
                raise OnboardingError(
                    f"inbox {self.root!r} is a file, not a folder: give the folder that holds it"
                )
            raise NotFoundError(f"inbox folder {self.root!r} does not exist; check the path")
        out = []
        with os.scandir(self.root) as it:
            for item in it:
                modified = None
                try:
                    is_dir = item.is_dir()
                    fp = None if is_dir else _local_fingerprint(item.stat())
                    modified = None if is_dir else item.stat().st_mtime
                except OSError:  # a dangling symlink: listed, and its hash will fail clearly
                    is_dir, fp = False, None
                out.append(InboxEntry(item.name, item.path, item.path, is_dir, fp, modified))
        return out

    def _list_remote(self) -> list[InboxEntry]:
        fs = self.fs
        try:
            fs.invalidate_cache(self.root)  # listings are cached per filesystem instance
            if not fs.isdir(self.root):
                raise NotFoundError(
                    f"inbox {self.location!r} is not a folder (no objects under that prefix)"
                )
            listing = fs.ls(self.root, detail=True)
        except DatomError:
            raise
        except Exception as e:  # each fsspec backend raises its own errors
            raise StoreError(f"cannot list inbox {self.location!r}: {e}") from e
        out = []
        for info in listing:
            path = str(info["name"]).rstrip("/")
            if path == self.root.rstrip("/"):
                continue  # some backends list a folder marker as its own child
            name = path.rsplit("/", 1)[-1]
            is_dir = info.get("type") == "directory"
            location = f"{self.location}/{name}"
            fp = None if is_dir else remote_fingerprint(info)
            modified = None if is_dir else remote_modified(info)
            out.append(InboxEntry(name, location, path, is_dir, fp, modified))
        return out

    def fingerprint(self, path: str) -> Fingerprint | None:
        """The current fingerprint of one file (a fresh ``stat`` or ``info``)."""
        return file_fingerprint(self.fs, path)

    def sha256(self, path: str) -> str:
        """SHA-256 of a file's bytes, streamed in constant memory."""
        return file_sha256(self.fs, path)


def locate(
    location: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> tuple[Any, str]:
    """``(filesystem, path)`` for a local path (filesystem ``None``) or an fsspec URL."""
    text = os.fspath(location)
    if "://" not in text or text.startswith("file://"):
        return None, os.path.abspath(text.removeprefix("file://"))
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
    except (ImportError, ValueError) as e:
        raise StoreError(f"cannot open {text!r}: {e}") from e
    return fs, path


def file_fingerprint(fs: Any, path: str) -> Fingerprint | None:
    """A file's fingerprint now; ``None`` when it cannot be had (the file is then hashed)."""
    try:
        if fs is None:
            return _local_fingerprint(os.stat(path))
        fs.invalidate_cache(path)
        return remote_fingerprint(fs.info(path))
    except Exception:  # a missing file: the read that follows reports it properly
        return None


def file_modified(fs: Any, path: str) -> float | None:
    """A file's last modification time now (POSIX seconds); ``None`` when not known."""
    try:
        return os.stat(path).st_mtime if fs is None else remote_modified(fs.info(path))
    except Exception:  # a missing file: the read that follows reports it properly
        return None


def remote_modified(info: Mapping[str, Any]) -> float | None:
    """The modification time in an fsspec ``info`` (S3's LastModified, others' mtime)."""
    for key in ("LastModified", "last_modified", "mtime", "updated", "modified"):
        value = info.get(key)
        if isinstance(value, dt.datetime):
            return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()
    return None


def remote_fingerprint(info: Mapping[str, Any]) -> Fingerprint | None:
    etag = next((v for k, v in info.items() if k.lower() == "etag" and v), None)
    return None if etag is None else ("etag", int(info.get("size") or 0), str(etag))


def file_sha256(fs: Any, path: str) -> str:
    """Streaming SHA-256 of a local file (``fs=None``) or a file on an fsspec filesystem."""
    try:
        if fs is None:
            with open(path, "rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        digest = hashlib.sha256()
        with fs.open(path, "rb", block_size=_CHUNK) as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()
    except FileNotFoundError as e:
        raise OnboardingError(f"cannot hash {path!r}: the file no longer exists") from e
    except Exception as e:  # OSError locally, backend errors remotely
        raise OnboardingError(f"cannot read {path!r} to hash it: {e}") from e


def _local_fingerprint(st: os.stat_result) -> Fingerprint:
    return ("stat", st.st_size, st.st_mtime_ns, st.st_ino)


def _visible(name: str) -> bool:
    return not (name.startswith(".") or name.startswith("~$"))


class ShaCache:
    """``location -> (fingerprint, sha256)``, kept in the clone's git directory.

    ``ShaCache(None)`` caches nothing (a reader connection has no clone). Load errors
    (a truncated or foreign file) start an empty cache: the cache is never the truth.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] = {}
        # Hashes taken through this instance (a scan and the sync that follows it in one
        # call): trusted while the fingerprint holds, even inside the racy window that
        # keeps them out of the on-disk cache.
        self._recent: dict[str, tuple[Fingerprint, str]] = {}
        self._dirty = False
        if path is not None:
            self._entries = _load_cache(path)

    @classmethod
    def in_clone(cls, clone: Path | None) -> ShaCache:
        """The cache of a clone (``None``: no clone, no cache)."""
        if clone is None or not (clone / ".git").is_dir():
            return cls(None)
        return cls(clone / ".git" / _CACHE_FILE)

    def lookup(self, location: str, fingerprint: Fingerprint | None) -> str | None:
        """The cached SHA of ``location`` if its fingerprint is unchanged."""
        if fingerprint is None:
            return None
        recent = self._recent.get(location)
        if recent is not None and recent[0] == fingerprint:
            return recent[1]
        entry = self._entries.get(location)
        if entry is None:
            return None
        return entry["sha"] if tuple(entry["fp"]) == fingerprint else None

    def remember(
        self, location: str, fingerprint: Fingerprint | None, sha: str, hashed_at_ns: int
    ) -> None:
        """Record a hash taken at ``hashed_at_ns`` (``time.time_ns()`` before reading)."""
        if fingerprint is None:
            return
        self._recent[location] = (fingerprint, sha)
        if self.path is None:
            return
        if fingerprint[0] == "stat" and fingerprint[2] > hashed_at_ns - RACY_WINDOW_NS:
            # Racily fresh: the on-disk cache trusts it only after a re-hash.
            if self._entries.pop(location, None) is not None:
                self._dirty = True
            return
        self._entries[location] = {"fp": list(fingerprint), "sha": sha}
        self._dirty = True

    def forget(self, locations: Iterable[str]) -> None:
        for location in locations:
            self._recent.pop(location, None)
            if self._entries.pop(location, None) is not None:
                self._dirty = True

    def prune(self, folder: str, present: Iterable[str]) -> None:
        """Drop entries of files directly in ``folder`` that are no longer listed."""
        keep = set(present)
        prefix = folder.rstrip("/" + os.sep)
        gone = [loc for loc in self._entries if _parent(loc) == prefix and loc not in keep]
        self.forget(gone)

    def save(self) -> None:
        """Write the cache atomically if it changed; failures are ignored (it is a cache)."""
        if self.path is None or not self._dirty:
            return
        doc = {"format": _CACHE_FORMAT, "entries": self._entries}
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{time.time_ns()}.tmp")
        try:
            temp.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
            os.replace(temp, self.path)
            self._dirty = False
        except OSError:
            temp.unlink(missing_ok=True)


def _parent(location: str) -> str:
    cut = max(location.rfind("/"), location.rfind(os.sep))
    return location[:cut] if cut > 0 else ""


def _load_cache(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("format") != _CACHE_FORMAT:
        return {}
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {
        loc: e
        for loc, e in entries.items()
        if isinstance(e, dict) and isinstance(e.get("fp"), list) and isinstance(e.get("sha"), str)
    }
