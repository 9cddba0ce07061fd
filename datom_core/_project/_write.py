"""The write protocol of STORE.md, step by step.

1. validate the name and parents, hash the table (nothing changed anywhere yet);
2. build the metadata and classify the change against the current version;
3. for a ``full`` change, reuse a recorded parquet for the same data or upload a new one;
4. write the documents, commit, push (a rejected push is redone on the new remote state);
5. mirror the documents into the store.

Every step is safe to interrupt: re-running the same write converges (see ``_mirror``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, GitError, IntegrityError, PushRejectedError
from datom_core._identity import prepare_table
from datom_core._identity._canonical import canonical_json, metadata_sha
from datom_core._identity._cv1 import ColumnHash, TableHash, hash_arrow_table
from datom_core._names import validate_table_name
from datom_core._project import _layout as L
from datom_core._project._context import HasContext, ProjectContext
from datom_core._project._documents import (
    ParentRef,
    SourceRef,
    build_metadata,
    dump,
    history_entry,
    load,
    union_lineage,
)
from datom_core._project._mirror import (
    TableDocuments,
    converge_mirror,
    manifest_with,
    mirror_table,
)
from datom_core._project._parquet import BackgroundParquet, read_verified, serialized
from datom_core._project._records import WriteResult
from datom_core._version import DATOM_VERSION

__all__ = ["WriteRequest", "write_table"]

_MAX_ATTEMPTS = 20
_FIRST_BACKOFF_S = 0.01
_MAX_BACKOFF_S = 1.0


@dataclass(frozen=True)
class WriteRequest:
    """Everything a write records besides the data."""

    table: str
    message: str
    table_type: str = "derived"
    parents: tuple[ParentRef, ...] = ()
    source_lineage: tuple[SourceRef, ...] | None = None  # None: derived from the parents
    custom: Mapping[str, Any] | None = None
    original_file_sha: str | None = None
    history_extra: Mapping[str, Any] | None = None  # e.g. original_format, the orchestrator run
    # An onboarded file: source_lineage is this table's own data (its data_sha is only
    # known once the table is hashed, inside the write).
    self_lineage: bool = False


@dataclass(frozen=True)
class _Current:
    metadata: dict[str, Any] | None
    history: list[dict[str, Any]]


def write_table(ctx: ProjectContext | HasContext, request: WriteRequest, data: Any) -> WriteResult:
    """Record ``data`` as the new version of ``request.table`` (see the module docstring).

    ``ctx`` may also be a connection (anything with a ``context``), as callers of the
    previous release passed one.
    """
    ctx = ctx if isinstance(ctx, ProjectContext) else ctx.context
    validate_table_name(request.table)
    _check_custom(request)
    table = prepare_table(data, table=request.table)
    with _EarlyParquet(table, _current_metadata(ctx, request.table)) as early:
        table_hash = hash_arrow_table(table, on_column=early.on_column)
        checkpoint("hashed")
        repo = ctx.require_repo()
        with repo.lock():
            for attempt in range(_MAX_ATTEMPTS):
                if attempt:
                    _backoff(attempt)
                repo.fetch_and_reset()
                result = _attempt(ctx, request, table, table_hash, early.background)
                if result is not None:
                    return result
    raise PushRejectedError(
        f"table {request.table!r}: the remote kept moving; gave up after {_MAX_ATTEMPTS} attempts. "
        "Nothing was recorded; retry the write."
    )


def _backoff(attempt: int) -> None:
    """Randomised exponential backoff, so that racing writers stop colliding in step."""
    time.sleep(random.uniform(0, min(_MAX_BACKOFF_S, _FIRST_BACKOFF_S * 2**attempt)))


class _EarlyParquet:
    """Serialises the parquet in the background once the data is known to be new.

    New data needs a parquet file; an unchanged table must not pay for one. The current
    version's ``column_hashes`` tell as soon as the first column is hashed: a table that
    does not exist yet, a different shape, or one differing column digest starts the
    serialisation, which then overlaps the hashing of the other columns.
    """

    def __init__(self, table: pa.Table, current: Mapping[str, Any] | None) -> None:
        self._table = table
        self.background: BackgroundParquet | None = None
        recorded = (current or {}).get("column_hashes") or []
        self._expected = {i: (c.get("name"), c.get("sha")) for i, c in enumerate(recorded)}
        if (
            current is None
            or current.get("nrow") != table.num_rows
            or len(recorded) != table.num_columns
        ):
            self._start()

    def on_column(self, index: int, column: ColumnHash) -> None:
        if self.background is None and self._expected.get(index) != (column.name, column.sha):
            self._start()

    def _start(self) -> None:
        self.background = BackgroundParquet(self._table)

    def __enter__(self) -> _EarlyParquet:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.background is not None:
            self.background.close()


def _current_metadata(ctx: ProjectContext, table: str) -> dict[str, Any] | None:
    """The clone's current metadata of ``table``: only a hint (the lock is not held yet)."""
    try:
        raw = ctx.require_repo().read(L.git_metadata(table))
        return load(raw, key=L.git_metadata(table)) if raw is not None else None
    except DatomError:
        return None


def _attempt(
    ctx: ProjectContext,
    req: WriteRequest,
    table: pa.Table,
    th: TableHash,
    early: BackgroundParquet | None,
) -> WriteResult | None:
    """One try on top of the freshly fetched remote state; None when the push lost a race."""
    repo = ctx.require_repo()
    current = _read_current(ctx, req.table)
    draft = _metadata(ctx, req, table, th, parquet_sha="", size_bytes=None)
    version = metadata_sha(draft)
    if current.metadata is not None and metadata_sha(current.metadata) == version:
        converge_mirror(ctx, req.table)
        return WriteResult(
            req.table, "none", version, th.data_sha, current.metadata.get("parquet_sha", ""), None
        )

    same_data = current.metadata is not None and current.metadata["data_sha"] == th.data_sha
    if same_data:
        parquet_sha = current.metadata.get("parquet_sha", "")
        size, uploaded = current.metadata.get("size_bytes"), False
    else:
        parquet_sha, size, uploaded = _store_parquet(
            ctx, req.table, table, th, current.history, early
        )
    checkpoint("uploaded")

    known = next((h for h in current.history if h.get("version") == version), None)
    metadata_bytes = _known_snapshot(ctx, req.table, version) if known else None
    if metadata_bytes is None:
        final = _metadata(ctx, req, table, th, parquet_sha=parquet_sha, size_bytes=size)
        metadata_bytes = dump(final)
    metadata = load(metadata_bytes, key=L.git_metadata(req.table))
    history = current.history
    if known is None:  # the dedup guard: a version appears in the history once
        author = str(repo.default_author())
        entry = history_entry(
            metadata,
            author=author,
            commit_message=req.message,
            extra=req.history_extra,
        )
        history = [entry, *history]
    history_bytes = dump(history)
    manifest_bytes = manifest_with(ctx, req.table, metadata, history)
    files = {
        L.git_metadata(req.table): metadata_bytes,
        L.git_history(req.table): history_bytes,
        L.MANIFEST: manifest_bytes,
    }
    commit = repo.commit(files, req.message)
    checkpoint("committed")
    try:
        repo.push()
    except PushRejectedError:
        return None
    except GitError:
        _undo(ctx, req.table, th.data_sha, uploaded)
        raise
    checkpoint("pushed")
    mirror_table(ctx, TableDocuments(req.table, metadata_bytes, history_bytes, manifest_bytes))
    checkpoint("mirrored")
    change = "metadata_only" if same_data else "full"
    return WriteResult(req.table, change, version, th.data_sha, parquet_sha, commit, uploaded)


def _metadata(
    ctx: ProjectContext,
    req: WriteRequest,
    table: pa.Table,
    th: TableHash,
    *,
    parquet_sha: str,
    size_bytes: int | None,
) -> dict[str, Any]:
    if req.self_lineage:
        lineage: Sequence[SourceRef] = (SourceRef(ctx.project_name, req.table, th.data_sha),)
    elif req.source_lineage is not None:
        lineage = req.source_lineage
    else:
        lineage = union_lineage(req.parents)
    return build_metadata(
        table_hash=th,
        colnames=table.column_names,
        parquet_sha=parquet_sha,
        table_type=req.table_type,
        datom_version=DATOM_VERSION,
        parents=req.parents,
        source_lineage=lineage,
        original_file_sha=req.original_file_sha,
        size_bytes=size_bytes,
        custom=req.custom,
    )


def _read_current(ctx: ProjectContext, table: str) -> _Current:
    raw_meta = ctx.require_repo().read(L.git_metadata(table))
    raw_hist = ctx.require_repo().read(L.git_history(table))
    metadata = load(raw_meta, key=L.git_metadata(table)) if raw_meta is not None else None
    history = load(raw_hist, key=L.git_history(table)) if raw_hist is not None else []
    return _Current(metadata, list(history))


def _store_parquet(
    ctx: ProjectContext,
    table_name: str,
    table: pa.Table,
    th: TableHash,
    history: Sequence[Mapping[str, Any]],
    early: BackgroundParquet | None,
) -> tuple[str, int | None, bool]:
    """Step 3: (parquet_sha, size_bytes, uploaded) for new data."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    recorded = next(
        (h for h in history if h.get("data_sha") == th.data_sha and h.get("parquet_sha")), None
    )
    if recorded is not None:
        # Re-serialising could change the bytes and break that version's pin: reuse them.
        size = recorded.get("size_bytes")
        return recorded["parquet_sha"], size if size is not None else store.size(key), False
    with nullcontext(early.result()) if early else serialized(table) as sp:
        if store.put_if_absent(key, sp.path):
            return sp.parquet_sha, sp.size_bytes, True
    # An object nobody recorded (an interrupted or concurrent write): keep it if it holds our data.
    existing = store.sha256(key)
    stored = read_verified(store, key, existing)
    if hash_arrow_table(stored).data_sha != th.data_sha:
        raise IntegrityError(
            f"table {table_name!r}: {key} in {store.url} holds other data than its name says; "
            "no recorded version pins it. Delete that object and write again.",
            key=key,
            expected=th.data_sha,
            actual=hash_arrow_table(stored).data_sha,
        )
    return existing, store.size(key), False


def _known_snapshot(ctx: ProjectContext, table: str, version: str) -> bytes | None:
    """The stored bytes of a version already in the history (a revert), if intact."""
    try:
        raw = ctx.store.read_bytes(L.store_snapshot(table, version))
    except DatomError:
        return None
    try:
        return raw if metadata_sha(load(raw, key="snapshot")) == version else None
    except IntegrityError:
        return None


def _undo(ctx: ProjectContext, table: str, data_sha: str, uploaded: bool) -> None:
    """A push the remote refused: leave git and the store as they were before this write."""
    ctx.require_repo().fetch_and_reset()
    if uploaded:
        ctx.store.delete(L.store_parquet(table, data_sha))


def _check_custom(req: WriteRequest) -> None:
    if req.custom is None:
        return
    if not isinstance(req.custom, Mapping):
        raise DatomError(
            f"table {req.table!r}: metadata= must be a dict of JSON values, not {type(req.custom).__name__}"
        )
    try:
        canonical_json({"custom": req.custom})
    except TypeError as e:
        raise DatomError(f"table {req.table!r}: metadata= is not JSON: {e}") from e
