"""The write protocol of STORE.md, step by step (documents in format 2, FORMAT2.md).

0. the write door (``_door``): refuse a repo this build cannot account for;
1. validate the name and parents, hash the table (nothing changed anywhere yet);
2. read the remote's tip in place (the clone does not move), build the metadata and
   classify the change against it;
3. for a ``full`` change, reuse a recorded parquet for the same data or upload a new one,
   and put the version's snapshot (self-certifying, named by nothing yet) in the store,
   so that a writer killed right after its push leaves a version that reads by id (a new
   parquet and the snapshot go at once on a network store: ``_upload``);
4. record it (``MetadataRepo.commit_and_push`` of ``_build``'s cheap, pure rebuild of the
   table's documents and the manifest: a push rejected by a concurrent writer is rebuilt
   on the new remote tip, never re-hashed or re-uploaded);
5. mirror the documents into the store once the clone is on the pushed commit
   (``_mirror.PushedMirror``).

Every step is safe to interrupt: re-running the same write converges (see ``_mirror``).
The commit becomes local only once it is pushed, so the ``committed`` and ``pushed``
checkpoints both mark the point just after ``commit_and_push``; the clone moves once, to
that commit (a ``none`` write moves it to the tip it classified on, when it is behind).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, IntegrityError
from datom_core._identity import prepare_table
from datom_core._identity._cv1 import TableHash, hash_arrow_table
from datom_core._interrupt import terminate_as_interrupt
from datom_core._names import check_no_case_twin, validate_table_name
from datom_core._project import _layout as L
from datom_core._project._build import MANIFEST_MOVED, TableUpdate
from datom_core._project._columns import remember_digests
from datom_core._project._context import HasContext, ProjectContext
from datom_core._project._custom import check_custom
from datom_core._project._documents import build_metadata, dump, history_entry, union_lineage
from datom_core._project._door import check_write_door
from datom_core._project._group import record as record_grouped
from datom_core._project._history_text import HistoryText, history_text
from datom_core._project._manifest_text import learn_manifest
from datom_core._project._mirror import PushedMirror, converge_mirror, newest_commit_of
from datom_core._project._mirror_puts import learn_copies
from datom_core._project._model import ParentRef, SourceRef, TableMetadata
from datom_core._project._outcome import Put, after_failed_push, undo_unpushed
from datom_core._project._parse import parse_metadata
from datom_core._project._records import Change, WriteResult
from datom_core._project._stale import refuse_stale_revert
from datom_core._project._tip import TreeReader
from datom_core._project._upload import recorded_parquet, store_version
from datom_core._version import WRITTEN_BY

__all__ = ["WriteRequest", "write_table"]


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
    original_format: str | None = None
    history_extra: Mapping[str, Any] | None = None  # e.g. the source file, the orchestrator run
    # An onboarded file: source_lineage is this table's own data (its data_sha is only
    # known once the table is hashed, inside the write).
    self_lineage: bool = False
    # An onboarded file's modification time (POSIX seconds): it may not make an earlier
    # version current again when the current one was recorded after it (_stale).
    file_modified: float | None = None


@dataclass(frozen=True)
class _Current:
    metadata: TableMetadata | None
    history: HistoryText | None  # None: no history yet

    @property
    def versions(self) -> frozenset[str]:
        return self.history.versions if self.history is not None else frozenset()


def write_table(ctx: ProjectContext | HasContext, request: WriteRequest, data: Any) -> WriteResult:
    """Record ``data`` as the new version of ``request.table`` (see the module docstring).

    ``ctx`` may also be a connection (anything with a ``context``), as callers of the
    previous release passed one.
    """
    ctx = ctx if isinstance(ctx, ProjectContext) else ctx.context
    with terminate_as_interrupt():
        return _write_table(ctx, request, data)


def _write_table(ctx: ProjectContext, request: WriteRequest, data: Any) -> WriteResult:
    validate_table_name(request.table)
    check_custom(request.table, request.custom)
    repo = ctx.require_repo()
    check_write_door(repo, [request.table], manifest=False)  # the tip's is checked later
    table = prepare_table(data, table=request.table)
    table_hash = hash_arrow_table(table)
    remember_digests(table_hash)  # a change summary of this version reads no footer
    checkpoint("hashed")
    return _record(ctx, request, table, table_hash)


def _record(
    ctx: ProjectContext,
    req: WriteRequest,
    table: pa.Table,
    th: TableHash,
    recent: bool = True,
) -> WriteResult:
    """Steps 2 to 5: classify on the remote's tip, upload once, commit and push, mirror."""
    repo = ctx.require_repo()
    # The one look at the remote, read in place: the clone moves once, to the commit it
    # pushes (a rejected push rebuilds on the new tip). Over HTTP(S) the look the last
    # push or settling made, a few seconds old, may stand in (``recent``): the push's
    # compare-and-swap checks it; a write refused or recording nothing looks again.
    tip = repo.remote_tip(recent=recent)
    try:
        learn_manifest(tip.read(L.MANIFEST))  # another writer's, grown from one kept here
        check_write_door(tip, [req.table])
        current = _read_current(tip, req.table)
        if current.metadata is None:  # a new table: one folder per name on every filesystem
            names = {p.name for p in repo.path.iterdir() if p.is_dir()}
            check_no_case_twin(req.table, names.union(tip.directories()))
        draft = parse_metadata(_metadata(ctx, req, table, th, None, None), key="draft")
        unchanged = current.metadata is not None and current.metadata.version == draft.version
        if draft.version in current.versions and not unchanged:  # made current again
            refuse_stale_revert(tip, req.table, draft.version, req.file_modified)
    except DatomError:
        if tip.kept:
            return _record(ctx, req, table, th, recent=False)
        raise
    if unchanged and tip.kept:
        return _record(ctx, req, table, th, recent=False)
    if current.metadata is not None and current.metadata.version == draft.version:
        repo.catch_up(tip.commit)  # nothing when the clone is there already
        # A recorded version whose parquet a failed write's undo removed (before its
        # outcome was asked of the remote) gets its bytes back from the same data.
        if current.metadata.parquet_sha and not ctx.store.exists(
            L.store_parquet(req.table, th.data_sha)
        ):
            recorded_parquet(ctx, req.table, table, th, current.metadata.parquet_sha)
        return _unchanged(ctx, req.table, th, current.metadata)

    same_data = current.metadata is not None and current.metadata.data_sha == th.data_sha
    looks = learn_copies(ctx, req.table)  # while the parquet goes up (PushedMirror waits)
    stored = store_version(  # a failure there removes what it put
        ctx, req.table, table, th, current.history, current.metadata,
        draft.version if draft.version in current.versions else None,
        lambda sha, size: dump(_metadata(ctx, req, table, th, sha, size)),
    )  # fmt: skip
    parquet_sha, uploaded = stored.parquet_sha, stored.uploaded
    metadata_bytes, snapshot_put = stored.metadata, stored.snapshot_put
    try:  # a failure from here to the push removes the parquet this write put
        metadata = parse_metadata(metadata_bytes, key=L.git_metadata(req.table))
        author = repo.default_author()
        entry = history_entry(
            metadata,
            author=(author.name, author.email),
            commit_message=req.message,
            extra=req.history_extra,
        )
        update = TableUpdate(ctx.project_name, req.table, metadata_bytes, metadata, entry)
        checkpoint("snapshotted")
    except BaseException as e:
        undo_unpushed(ctx, req.table, Put(th.data_sha if uploaded else None, None), e)
        raise
    mirror = PushedMirror(ctx, req.table, metadata_bytes, metadata.version, looks)
    try:
        commit = record_grouped(  # with the writes waiting on this clone (_group)
            repo, update, req.message, author, mirror
        )
    except BaseException as e:
        mirror.abandon()
        if mirror.started:  # a version the remote holds keeps its parquet and snapshot
            raise
        put = Put(th.data_sha if uploaded else None, metadata.version if snapshot_put else None)
        landed = after_failed_push(ctx, req.table, metadata.version, put, e)
        if landed is None or not isinstance(e, Exception):
            if landed is not None:  # an interrupt: it stops here, saying what is recorded
                e.add_note(f"table {req.table!r}: version {metadata.version} is recorded")
            raise
        commit = _landed(ctx, req.table, metadata.version, landed.commit, e)
    if commit is None:  # the tip already holds this version: a concurrent twin recorded it
        return _unchanged(ctx, req.table, th, metadata)
    checkpoint("committed")
    checkpoint("pushed")
    if update.converted_v1:
        warnings.warn(MANIFEST_MOVED, stacklevel=4)
    try:
        mirror.finish()
    except DatomError as e:
        e.add_note(
            f"table {req.table!r}: version {metadata.version} is recorded (commit {commit}); "
            "only the store's copy of its documents may lag: the next write of the table, "
            "or validate(fix=True), brings it up to date"
        )
        raise
    checkpoint("mirrored")
    change: Change = "metadata_only" if same_data else "full"
    return WriteResult(
        req.table,
        change,
        metadata.version,
        th.data_sha,
        parquet_sha or "",
        commit,
        uploaded,
        metadata,
        _replaced(update),
    )


def _landed(ctx: ProjectContext, table: str, version: str, tip: str | None, e: Exception) -> str:
    """The commit that recorded ``version``, a push whose answer was lost: the clone
    moves to the tip that records it, the store is brought in step with it."""
    repo = ctx.require_repo()
    try:
        repo.catch_up(tip)
        converge_mirror(ctx, table)
        return newest_commit_of(repo, table, version) or repo.head() or ""
    except DatomError as later:
        e.add_note(
            f"table {table!r}: version {version} is recorded (the remote's tip {tip} holds "
            f"it) though the push's answer was lost; bringing the clone and the store in step "
            f"with it failed ({later}): pull, or write the same data again (a 'none' write)"
        )
        raise e from e.__cause__


def _replaced(update: TableUpdate) -> TableMetadata | None:
    """The version the pushed commit made non-current, as the tip it was built on held it."""
    raw = update.replaced
    try:
        return parse_metadata(raw, key=L.git_metadata(update.table)) if raw else None
    except DatomError:  # a hand-broken predecessor: the summary looks it up instead
        return None


def _unchanged(ctx: ProjectContext, table: str, th: TableHash, md: TableMetadata) -> WriteResult:
    """A ``none`` write: ``md`` (the version the remote's tip holds for this data) is
    reported, with the commit that recorded it; the store is brought in step with the
    clone. The clone may have moved past ``md`` meanwhile (another process sharing it
    wrote): the commit is then looked up, never taken from the newer version."""
    repo = ctx.require_repo()
    converged = converge_mirror(ctx, table)
    raw = repo.read(L.git_metadata(table))
    now = parse_metadata(raw, key=L.git_metadata(table)) if raw is not None else None
    if now is not None and now.version == md.version:
        commit = converged.commit or repo.last_commit_touching(L.git_metadata(table))
    else:
        commit = newest_commit_of(repo, table, md.version)
    parquet_sha = md.parquet_sha or ""
    return WriteResult(table, "none", md.version, th.data_sha, parquet_sha, commit, False, md)


def _metadata(
    ctx: ProjectContext,
    req: WriteRequest,
    table: pa.Table,
    th: TableHash,
    parquet_sha: str | None,
    size_bytes: int | None,
) -> dict[str, Any]:
    lineage: Sequence[SourceRef] | None
    if req.self_lineage:
        lineage = (SourceRef(ctx.project_name, req.table, th.data_sha),)
    elif req.source_lineage is not None:
        lineage = req.source_lineage
    elif req.parents:
        lineage = union_lineage(req.parents)  # written as [] when the parents carry none
    else:
        lineage = None
    return build_metadata(
        table_hash=th,
        colnames=table.column_names,
        parquet_sha=parquet_sha,
        table_type=req.table_type,
        datom_version=WRITTEN_BY,
        project=ctx.project_name,
        parents=req.parents,
        source_lineage=lineage,
        original_file_sha=req.original_file_sha,
        original_format=req.original_format,
        size_bytes=size_bytes if size_bytes is not None else 0,
        custom=req.custom,
    )


def _read_current(tip: TreeReader, table: str) -> _Current:
    raw_meta = tip.read(L.git_metadata(table))
    raw_hist = tip.read(L.git_history(table))
    metadata = parse_metadata(raw_meta, key=L.git_metadata(table)) if raw_meta is not None else None
    if metadata is not None and raw_hist is None:
        # Starting a one-entry history would silently drop every earlier version.
        raise IntegrityError(
            f"table {table!r}: {L.git_history(table)} is missing from the clone while "
            f"{L.git_metadata(table)} exists; nothing was written. Restore it from git "
            "(git checkout / git revert of the commit that removed it) or from the store "
            "(validate(fix=True) / datom validate --fix), then write again",
            key=L.git_history(table),
            expected="a version history",
            actual="no file",
        )
    key = L.git_history(table)
    return _Current(metadata, history_text(raw_hist, key=key) if raw_hist is not None else None)
