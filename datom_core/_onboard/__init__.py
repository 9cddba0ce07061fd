"""Onboarding: scan an inbox of raw extracts, then sync what is new or changed.

:func:`scan_inbox` classifies every file of an inbox (one file = one table, named after
the file's stem) without writing anything:

===================  ==============================================================
``new``              no table of that name yet
``changed``          the file's bytes differ from the current version's source file
                     (an older extract dropped again is ``changed`` too: it must become
                     current again; its message names the earlier version)
``unchanged``        the file is the current version's source file (same SHA-256)
``unsupported_format``  not one of the allowlisted formats (message: the recourse)
``invalid_name``     the stem is not a valid table name (message: rename the file)
``refused``          a sub-folder, two files for one table, or a name taken by a
                     derived table (message: what to do)
``error``            the file could not be read to hash it
===================  ==============================================================

Cost: ``unchanged`` needs one manifest read for the whole scan, plus a ``stat`` per file
(the SHA cache of ``_inbox`` spares re-hashing unchanged files). Only a file whose SHA
differs from the manifest's makes the scan read that table's history.

:func:`sync` onboards the ``new`` and ``changed`` rows, one write (one commit) per table,
through the core write protocol: ``table_type = "imported"``, the file's SHA-256 as
``original_file_sha``, ``original_format`` and ``original_file`` in the history entry,
no parents and a one-entry ``source_lineage`` pointing at the table's own data. A
re-export with new bytes but the same rows is a ``metadata_only`` version (nothing
uploaded); an old extract dropped again makes its old version current again, without a
second history entry (the write protocol's dedup guard).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from datom_core._errors import DatomError, InvalidNameError, OnboardingError, ReadOnlyError
from datom_core._names import validate_table_name
from datom_core._onboard._inbox import (
    Inbox,
    InboxEntry,
    ShaCache,
    file_fingerprint,
    file_sha256,
    locate,
)
from datom_core._onboard._readers import detect_format, read_file, unsupported_recourse
from datom_core._project import _layout as L
from datom_core._project._documents import load
from datom_core._project._records import Change

if TYPE_CHECKING:
    from datom_core._project import Connection

__all__ = ["ScanRow", "ScanStatus", "SyncRow", "SyncStatus", "scan_inbox", "sync"]

ScanStatus = Literal[
    "new", "changed", "unchanged", "unsupported_format", "invalid_name", "refused", "error"
]
SyncStatus = Literal["synced", "skipped", "error"]

_TO_ONBOARD = frozenset({"new", "changed"})
_FAILED = frozenset({"invalid_name", "refused", "error"})


@dataclass(frozen=True)
class ScanRow:
    """One inbox file and what :func:`sync` would do with it (see the module docstring).

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


@dataclass(frozen=True)
class SyncRow:
    """What :func:`sync` did with one row.

    ``status``: ``synced`` (a version was recorded), ``skipped`` (nothing to do: unchanged,
    unsupported format, or content already current) or ``error`` (``message`` says why;
    other rows were not affected). ``change`` and ``version`` are the write's
    (``none`` / ``metadata_only`` / ``full`` and the ``metadata_sha``), when there was one.
    """

    name: str
    file: str
    status: SyncStatus
    change: Change | None = None
    version: str | None = None
    message: str = ""


# -- scan ----------------------------------------------------------------------------------


def scan_inbox(
    conn: Connection,
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
    if path is None and conn.role == "reader":
        raise ReadOnlyError(
            f"this connection to {conn.project_name!r} is a reader (store only) and has no "
            "inbox; pass path= (a folder or an s3:// prefix) to scan one"
        )
    location = conn.path / L.INBOX if path is None else path
    if path is None and not Path(location).is_dir():
        return []  # the default inbox appears with the clone; nothing dropped yet
    inbox = Inbox.open(location, storage_options)
    entries = inbox.entries()
    catalog = _Catalog(conn)
    if cache is None:
        cache = ShaCache.in_clone(conn.path if conn.role == "developer" else None)
    stems = Counter(_stem(e.name) for e in entries if not e.is_dir and detect_format(e.name))
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
    stem, extension = _stem(entry.name), _extension(entry.name)
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
        others = [e.name for e in entries if _stem(e.name) == stem and detect_format(e.name)]
        message = (
            f"{' and '.join(others)} would all become table {stem!r}: keep one of them in the "
            "inbox, or rename the others"
        )
        return ScanRow(stem, entry.location, fmt, None, "refused", message)
    if defer_new and stem not in catalog.tables:
        return ScanRow(stem, entry.location, fmt, None, "new")
    try:
        sha = _file_sha(inbox.fs, entry.path, entry.location, entry.fingerprint, cache)
    except OnboardingError as e:
        return ScanRow(stem, entry.location, fmt, None, "error", str(e))
    status, message = catalog.classify(stem, sha, entry.name)
    return ScanRow(stem, entry.location, fmt, sha, status, message)


class _Catalog:
    """The project's tables as one manifest read lists them, plus on-demand history."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        if conn.role == "developer":
            raw = conn.repo.read(L.MANIFEST)
            manifest = load(raw, key=L.MANIFEST) if raw is not None else {}
        else:
            manifest = conn.store_manifest()
        self.tables: Mapping[str, Mapping[str, Any]] = manifest.get("tables") or {}

    def classify(self, name: str, sha: str, filename: str) -> tuple[ScanStatus, str]:
        entry = self.tables.get(name)
        if entry is None:
            return "new", ""
        current = entry.get("original_file_sha")
        if current == sha:
            return "unchanged", ""
        if not current and self._table_type(name) == "derived":
            return "refused", (
                f"table {name!r} already exists as a derived table; onboarding {filename} would "
                "replace it with an imported one. Rename the file to onboard it as another table"
            )
        earlier = next((h for h in self._history(name) if h.get("original_file_sha") == sha), None)
        if earlier is not None:
            return "changed", (
                f"an earlier extract of {name!r} (version {str(earlier.get('version'))[:12]}); "
                "sync makes that version current again, without a new history entry"
            )
        return "changed", f"a new extract of {name!r}"

    def _history(self, name: str) -> list[Mapping[str, Any]]:
        doc = self._document(L.git_history(name), L.store_history(name))
        if isinstance(doc, Mapping):  # R writes a one-entry history as a bare object
            return [doc]
        return list(doc or [])

    def _table_type(self, name: str) -> str | None:
        doc = self._document(L.git_metadata(name), L.store_metadata(name))
        return doc.get("table_type") if isinstance(doc, Mapping) else None

    def _document(self, git_key: str, store_key: str) -> Any:
        conn = self._conn
        try:
            if conn.role == "developer":
                raw = conn.repo.read(git_key)
                return load(raw, key=git_key) if raw is not None else None
            return load(conn.store.read_bytes(store_key), key=store_key)
        except DatomError:
            return None  # unreadable: classify as a plain change; the write reports damage


def _file_sha(fs: Any, path: str, location: str, fingerprint: Any, cache: ShaCache) -> str:
    cached = cache.lookup(location, fingerprint)
    if cached is not None:
        return cached
    started = time.time_ns()
    sha = file_sha256(fs, path)
    cache.remember(location, fingerprint, sha, started)
    return sha


# -- sync ----------------------------------------------------------------------------------


def sync(
    conn: Connection,
    rows: Iterable[ScanRow | Mapping[str, Any]] | None = None,
    continue_on_error: bool = True,
    *,
    path: str | os.PathLike[str] | None = None,
    tables: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[SyncRow]:
    """Onboard the ``new`` and ``changed`` rows of a scan (default: scan the inbox first).

    ``rows`` are :class:`ScanRow` records (or dicts with their fields, e.g. a reviewed
    scan with a table renamed). Without them, the inbox at ``path`` (default: the clone's
    ``input_files/``) is scanned here, limited to ``tables`` when given. With
    ``continue_on_error=True`` a failing row is reported as ``error`` and the others go
    on; with ``False`` the first failure raises, and a scan that already holds failed
    rows raises before anything is written.
    """
    conn.repo  # noqa: B018  (a reader connection fails here, before any work)
    cache = ShaCache.in_clone(conn.path)
    if rows is None:
        rows = scan_inbox(conn, path, storage_options=storage_options, cache=cache, defer_new=True)
    todo = [_as_scan_row(r) for r in rows]
    if tables is not None:
        wanted = set(tables)
        todo = [r for r in todo if r.name in wanted]
    if not continue_on_error:
        _refuse_failed(todo)
    results = []
    try:
        for row in todo:
            if row.status not in _TO_ONBOARD:
                results.append(_not_onboarded(row))
                continue
            try:
                results.append(_onboard(conn, row, cache, storage_options))
            except Exception as e:  # one bad file must never stop its siblings
                if not continue_on_error:
                    raise
                results.append(SyncRow(row.name, row.file, "error", message=_describe(e)))
    finally:
        cache.save()
    return results


def _onboard(
    conn: Connection, row: ScanRow, cache: ShaCache, storage_options: Mapping[str, Any] | None
) -> SyncRow:
    from datom_core._project._write import WriteRequest, write_table

    validate_table_name(row.name)
    fs, path = locate(row.file, storage_options)
    fmt = row.format or detect_format(row.file)
    filename = path.replace("\\", "/").rsplit("/", 1)[-1]
    before = file_fingerprint(fs, path)
    # Hash the bytes while the reader parses them (both mostly release the GIL).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="datom-file-sha") as pool:
        sha_job = pool.submit(_file_sha, fs, path, row.file, before, cache)
        table = read_file(path, format=fmt, filesystem=fs)
        sha = sha_job.result()
    if before is not None and file_fingerprint(fs, path) != before:
        cache.forget([row.file])
        raise OnboardingError(
            f"{row.file!r} changed while it was being onboarded; nothing was written for "
            f"table {row.name!r}. Wait until the file is complete, then sync again"
        )
    request = WriteRequest(
        table=row.name,
        message=f"Onboard {row.name} from {filename}",
        table_type="imported",
        original_file_sha=sha,
        self_lineage=True,
        history_extra={"original_format": fmt, "original_file": filename},
    )
    result = write_table(conn, request, table)
    notes = []
    if row.original_file_sha and sha != row.original_file_sha:
        notes.append("the file changed after the scan; its current content was onboarded")
    if result.change == "full" and not result.uploaded:
        notes.append("its data was already stored by an earlier version: nothing uploaded")
    if result.change == "none":
        notes.append(f"table {row.name!r} already holds this content as its current version")
        status: SyncStatus = "skipped"
    else:
        status = "synced"
    return SyncRow(row.name, row.file, status, result.change, result.version, "; ".join(notes))


def _not_onboarded(row: ScanRow) -> SyncRow:
    if row.status == "unchanged":
        return SyncRow(row.name, row.file, "skipped", "none", message="unchanged")
    if row.status == "unsupported_format":
        return SyncRow(row.name, row.file, "skipped", message=row.message)
    return SyncRow(row.name, row.file, "error", message=f"{row.status}: {row.message}")


def _refuse_failed(rows: Sequence[ScanRow]) -> None:
    failed = [r for r in rows if r.status in _FAILED]
    if failed:
        lines = "\n".join(f"  - {r.file}: {r.status}: {r.message}" for r in failed)
        raise OnboardingError(
            f"{len(failed)} inbox file(s) cannot be onboarded; nothing was written:\n{lines}\n"
            "Fix them, or sync with continue_on_error=True to onboard the others"
        )


def _as_scan_row(row: ScanRow | Mapping[str, Any]) -> ScanRow:
    if isinstance(row, ScanRow):
        return row
    if isinstance(row, Mapping):
        known = {f.name for f in fields(ScanRow)}
        missing = {"name", "file", "status"} - set(row)
        if not missing:
            return ScanRow(
                **{"format": None, "original_file_sha": None}
                | {k: v for k, v in row.items() if k in known}
            )
    raise OnboardingError(
        f"sync() takes the rows of scan_inbox() (ScanRow, or dicts with name, file and "
        f"status); got {row!r}"
    )


def _describe(error: BaseException) -> str:
    return str(error) if isinstance(error, DatomError) else f"{type(error).__name__}: {error}"


def _stem(filename: str) -> str:
    stem, dot, _ = filename.rpartition(".")
    return stem if dot and stem else filename


def _extension(filename: str) -> str:
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""
