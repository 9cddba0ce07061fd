"""Syncing an inbox: onboard the ``new`` and ``changed`` rows of a scan, one write each.

See the package docstring for what an onboarded table records.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any, Literal

from datom_core._errors import DatomError, OnboardingError, OnboardingWarning, ProjectConfigError
from datom_core._names import validate_table_name
from datom_core._onboard._inbox import ShaCache, file_fingerprint, file_modified, locate
from datom_core._onboard._readers import detect_format, read_file
from datom_core._onboard._scan import ScanRow, file_sha_cached, scan_inbox
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._parse import parse_project_config
from datom_core._project._records import Change
from datom_core._project._recover import converge_tables, finish_interrupted
from datom_core._project._write import WriteRequest, write_table

__all__ = ["SyncRow", "SyncStatus", "sync"]

SyncStatus = Literal["synced", "skipped", "error"]

_TO_ONBOARD = frozenset({"new", "changed"})
_FAILED = frozenset({"invalid_name", "refused", "error"})


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


# -- sync ----------------------------------------------------------------------------------


def sync(
    ctx: ProjectContext,
    rows: Iterable[ScanRow | Mapping[str, Any]] | None = None,
    continue_on_error: bool = True,
    *,
    path: str | os.PathLike[str] | None = None,
    tables: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    revert: bool = False,
    encoding: str | None = None,
) -> list[SyncRow]:
    """Onboard the ``new`` and ``changed`` rows of a scan (default: scan the inbox first).

    ``rows`` are :class:`ScanRow` records (or dicts with their fields, e.g. a reviewed
    scan with a table renamed). Without them, the inbox at ``path`` (default: the clone's
    ``input_files/``) is scanned here, limited to ``tables`` when given. With
    ``continue_on_error=True`` a failing row is reported as ``error`` and the others go
    on; with ``False`` the first failure raises, and a scan that already holds failed
    rows raises before anything is written.

    A ``stale`` row (an earlier version's file, left behind by a newer version) is left
    alone, and a ``changed`` row whose file turns out stale against the remote is refused;
    ``revert=True`` onboards them, making the earlier version current again in place of
    the newer one (each such row's message names both versions).
    ``encoding`` is the encoding of the files' text (see
    :func:`~datom_core.read_extract`); a fallback encoding datom had to use is named in the
    row's ``message``.
    """
    repo = ctx.require_repo()  # a reader connection fails here, before any work
    _refuse_product_mode(repo.read(L.PROJECT_YAML))
    cache = ShaCache.in_clone(repo.path)
    # An interrupted earlier write is finished first, so that its file is not "unchanged".
    finish_interrupted(ctx)
    if rows is None:
        rows = scan_inbox(ctx, path, storage_options=storage_options, cache=cache, defer_new=True)
    todo = [_as_scan_row(r) for r in rows]
    onboard = _TO_ONBOARD | {"stale"} if revert else _TO_ONBOARD
    if tables is not None:
        wanted = set(tables)
        todo = [r for r in todo if r.name in wanted]
    if not continue_on_error:
        _refuse_failed(todo)
    converge_tables(ctx, [r.name for r in todo if r.status == "unchanged"])
    results = []
    try:
        for row in todo:
            if row.status not in onboard:
                results.append(_not_onboarded(row))
                continue
            try:
                results.append(_onboard(ctx, row, cache, storage_options, revert, encoding))
            except Exception as e:  # one bad file must never stop its siblings
                if not continue_on_error:
                    raise
                results.append(SyncRow(row.name, row.file, "error", message=_describe(e)))
    finally:
        cache.save()
    return results


def _onboard(
    ctx: ProjectContext,
    row: ScanRow,
    cache: ShaCache,
    storage_options: Mapping[str, Any] | None,
    revert: bool,
    encoding: str | None,
) -> SyncRow:
    validate_table_name(row.name)
    fs, path = locate(row.file, storage_options)
    fmt = row.format or detect_format(row.file)
    filename = path.replace("\\", "/").rsplit("/", 1)[-1]
    before = file_fingerprint(fs, path)
    modified = None if revert else file_modified(fs, path)
    # Hash the bytes while the reader parses them (both mostly release the GIL).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="datom-file-sha") as pool:
        sha_job = pool.submit(file_sha_cached, fs, path, row.file, before, cache)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OnboardingWarning)
            table = read_file(path, format=fmt, filesystem=fs, encoding=encoding)
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
        original_format=fmt,
        file_modified=modified,
    )
    result = write_table(ctx, request, table)
    notes = [str(w.message) for w in caught if issubclass(w.category, OnboardingWarning)]
    replaced = result.replaced
    if row.status == "stale" and replaced is not None:
        notes.append(
            f"reverted: version {result.version[:12]} (an earlier extract) is current again "
            f"in place of version {replaced.version[:12]}"
        )
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


def _refuse_product_mode(raw: bytes | None) -> None:
    if raw is not None and parse_project_config(raw, key=L.PROJECT_YAML).mode == "product":
        raise ProjectConfigError(
            f"this project is in product mode ({L.PROJECT_YAML}: mode: product): it builds "
            "sets and derived tables and refuses file onboarding. Onboard the files in the "
            "project that holds the raw data"
        )


def _not_onboarded(row: ScanRow) -> SyncRow:
    if row.status == "unchanged":
        return SyncRow(row.name, row.file, "skipped", "none", message="unchanged")
    if row.status in ("unsupported_format", "stale"):
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
