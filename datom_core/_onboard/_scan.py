"""Scanning an inbox: classify every file against the project, writing nothing.

See the package docstring for the statuses and the cost of a scan.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from datom_core._errors import DatomError, InvalidNameError, OnboardingError, ReadOnlyError
from datom_core._names import validate_table_name
from datom_core._onboard._inbox import Inbox, InboxEntry, ShaCache, file_sha256
from datom_core._onboard._readers import detect_format, unsupported_recourse
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._model import HistoryEntry, ManifestEntry
from datom_core._project._parse import parse_history, parse_manifest, parse_metadata
from datom_core._project._read import read_manifest
from datom_core._project._stale import is_stale, stale_message

__all__ = ["ScanRow", "ScanStatus", "file_sha_cached", "scan_inbox", "stem_of"]

ScanStatus = Literal[
    "new",
    "changed",
    "stale",
    "unchanged",
    "unsupported_format",
    "invalid_name",
    "refused",
    "error",
]


@dataclass(frozen=True)
class ScanRow:
    """One inbox file and what ``Connection.sync`` would do with it.

    ``status`` is one of ``new`` (no table of that name yet), ``changed`` (the file's bytes
    differ from the current version's source file; an older extract dropped again is
    ``changed`` too), ``unchanged`` (the current version's source file), ``unsupported_format``,
    ``invalid_name`` (rename the file), ``refused`` (a sub-folder, two files for one table,
    or a name taken by a derived table) or ``error`` (the file could not be read); ``message``
    says what to do.

    ``name`` is the table the file becomes; ``file`` its absolute path or URL; ``format``
    the lowercase extension (``None`` for a folder or a file without one);
    ``original_file_sha`` the SHA-256 of its bytes (only for files datom can onboard).
    """

    name: str
    file: str
    format: str | None
    original_file_sha: str | None
    status: ScanStatus
    message: str = ""


# -- scan ----------------------------------------------------------------------------------


def scan_inbox(
    ctx: ProjectContext,
    path: str | os.PathLike[str] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    cache: ShaCache | None = None,
    defer_new: bool = False,
) -> list[ScanRow]:
    """Classify every file of an inbox (default: the clone's ``input_files/``), writing nothing.

    ``path`` may be any local folder or an fsspec URL such as ``s3://bucket/prefix``
    (``storage_options`` go to its filesystem). Rows are sorted by file name. ``cache``
    is the hash cache to use (:func:`sync` shares one with its own scan, so that a file
    is hashed once per call). ``defer_new`` leaves files of tables that do not exist yet
    unhashed (``original_file_sha`` None): :func:`sync` hashes them while reading them.

    A developer's scan compares against the clone as last fetched (no network): after
    another developer onboarded files, ``pull()`` first for exact statuses. :func:`sync`
    itself always writes on top of the fresh remote state, so a stale scan never records
    a duplicate. A reader connection compares against the store's manifest.
    """
    if path is None and ctx.role == "reader":
        raise ReadOnlyError(
            f"this connection to {ctx.project_name!r} is a reader (store only) and has no "
            "inbox; pass path= (a folder or an s3:// prefix) to scan one"
        )
    location = ctx.require_repo().path / L.INBOX if path is None else path
    if path is None and not Path(location).is_dir():
        return []  # the default inbox appears with the clone; nothing dropped yet
    inbox = Inbox.open(location, storage_options)
    entries = inbox.entries()
    catalog = _Catalog(ctx)
    if cache is None:
        cache = ShaCache.in_clone(ctx.require_repo().path if ctx.role == "developer" else None)
    stems = Counter(stem_of(e.name) for e in entries if not e.is_dir and detect_format(e.name))
    rows = [_classify(entry, inbox, catalog, cache, stems, entries, defer_new) for entry in entries]
    cache.prune(inbox.location, (e.location for e in entries))
    cache.save()
    return rows


def _classify(
    entry: InboxEntry,
    inbox: Inbox,
    catalog: _Catalog,
    cache: ShaCache,
    stems: Counter[str],
    entries: Sequence[InboxEntry],
    defer_new: bool = False,
) -> ScanRow:
    stem, extension = stem_of(entry.name), _extension(entry.name)
    if entry.is_dir:
        return ScanRow(
            entry.name,
            entry.location,
            None,
            None,
            "refused",
            f"{entry.name}/ is a sub-folder; the inbox is flat (one file per table). Move its "
            "files into the inbox itself, or scan that folder on its own with scan_inbox(path=...)",
        )
    fmt = detect_format(entry.name)
    if fmt is None:
        message = unsupported_recourse(extension)
        return ScanRow(stem, entry.location, extension or None, None, "unsupported_format", message)
    try:
        validate_table_name(stem)
    except InvalidNameError as e:
        message = f"{e}. Rename the file to <table name>.{fmt}"
        return ScanRow(stem, entry.location, fmt, None, "invalid_name", message)
    if stems[stem] > 1:
        others = [e.name for e in entries if stem_of(e.name) == stem and detect_format(e.name)]
        message = (
            f"{' and '.join(others)} would all become table {stem!r}: keep one of them in the "
            "inbox, or rename the others"
        )
        return ScanRow(stem, entry.location, fmt, None, "refused", message)
    if defer_new and stem not in catalog.tables:
        return ScanRow(stem, entry.location, fmt, None, "new")
    try:
        sha = file_sha_cached(inbox.fs, entry.path, entry.location, entry.fingerprint, cache)
    except OnboardingError as e:
        return ScanRow(stem, entry.location, fmt, None, "error", str(e))
    status, message = catalog.classify(stem, sha, entry.name, entry.modified)
    return ScanRow(stem, entry.location, fmt, sha, status, message)


class _Catalog:
    """The project's tables as one manifest read lists them, plus on-demand history."""

    def __init__(self, ctx: ProjectContext) -> None:
        self._ctx = ctx
        if ctx.repo is not None:
            raw = ctx.repo.read(L.MANIFEST)
            manifest = parse_manifest(raw, key=L.MANIFEST) if raw is not None else None
        else:
            manifest = read_manifest(ctx)
        self.tables: Mapping[str, ManifestEntry] = manifest.artifacts if manifest else {}

    def classify(
        self, name: str, sha: str, filename: str, modified: float | None = None
    ) -> tuple[ScanStatus, str]:
        entry = self.tables.get(name)
        if entry is None:
            return "new", ""
        if entry.kind != "table":
            return "refused", (
                f"{name!r} is a {entry.kind} in this project, not a table; rename the file "
                "to onboard it as a table"
            )
        current = entry.original_file_sha
        if current == sha:
            return "unchanged", ""
        if not current and self._table_type(name) == "derived":
            return "refused", (
                f"table {name!r} already exists as a derived table; onboarding {filename} would "
                "replace it with an imported one. Rename the file to onboard it as another table"
            )
        earlier = next((h for h in self._history(name) if h.original_file_sha == sha), None)
        if earlier is not None and is_stale(modified, entry):
            return "stale", stale_message(name, filename, earlier.version, entry)
        if earlier is not None:
            return "changed", (
                f"an earlier extract of {name!r} (version {earlier.version[:12]}); "
                "sync makes that version current again, without a new history entry"
            )
        return "changed", f"a new extract of {name!r}"

    def _history(self, name: str) -> tuple[HistoryEntry, ...]:
        key, raw = self._document(L.git_history(name), L.store_history(name))
        try:
            return parse_history(raw, key=key) if raw is not None else ()
        except DatomError:
            return ()  # unreadable: a plain change; the write reports the damage

    def _table_type(self, name: str) -> str | None:
        key, raw = self._document(L.git_metadata(name), L.store_metadata(name))
        try:
            return parse_metadata(raw, key=key).table_type if raw is not None else None
        except DatomError:
            return None

    def _document(self, git_key: str, store_key: str) -> tuple[str, bytes | None]:
        ctx = self._ctx
        if ctx.repo is not None:
            return git_key, ctx.repo.read(git_key)
        try:
            return store_key, ctx.store.read_bytes(store_key)
        except DatomError:
            return store_key, None


def file_sha_cached(fs: Any, path: str, location: str, fingerprint: Any, cache: ShaCache) -> str:
    cached = cache.lookup(location, fingerprint)
    if cached is not None:
        return cached
    started = time.time_ns()
    sha = file_sha256(fs, path)
    cache.remember(location, fingerprint, sha, started)
    return sha


def stem_of(filename: str) -> str:
    stem, dot, _ = filename.rpartition(".")
    return stem if dot and stem else filename


def _extension(filename: str) -> str:
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""
