"""The connection facade, :class:`Connection` (opened by :mod:`datom_core._open`).

A **developer** connection has a git clone and a store: it can write. A **reader**
connection has only the store and a project name: it lists, reads, shows history and
lineage, and refuses to write (:class:`ReadOnlyError`). Every method delegates with the
connection's :class:`~datom_core._project.ProjectContext` to ``_project``, ``_onboard`` or
``_sets`` (the set methods, :class:`SetMethods`); nothing below imports this module."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from datom_core._arrow import OutputKind
from datom_core._errors import DatomError, InvalidArgumentError
from datom_core._git import MetadataRepo
from datom_core._names import validate_project_name, validate_table_name, validate_version
from datom_core._onboard import ScanRow, SyncRow, scan_inbox, sync
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext, Role
from datom_core._project._diff import TableDiff, diff_versions, previous_version
from datom_core._project._lineage import checked_parent, lineage
from datom_core._project._mirror import newest_commit_of
from datom_core._project._model import ParentRef, TableMetadata
from datom_core._project._read import (
    list_tables,
    read_history,
    read_manifest,
    read_table,
    resolve_version,
    store_manifest,
    version_of,
)
from datom_core._project._records import (
    ProjectStatus,
    TableInfo,
    ValidationReport,
    VersionInfo,
    WriteResult,
)
from datom_core._project._validate import validate
from datom_core._project._verify import Verify
from datom_core._project._write import WriteRequest, write_table
from datom_core._sets._methods import SetMethods
from datom_core._sets._validate import validate_sets
from datom_core._store import Store
from datom_core._version import DATOM_VERSION

__all__ = ["Connection"]


class Connection(SetMethods):
    """A handle on one datom project, opened by :func:`init_repo`, :func:`connect` or
    :func:`clone`.

    A **developer** connection has a git clone and a store: it can write. A **reader**
    connection has only the store and a project name: it lists, reads, shows history and
    lineage, and refuses to write (:class:`ReadOnlyError`).
    """

    def __init__(self, project_name: str, store: Store, repo: MetadataRepo | None = None) -> None:
        self._ctx = ProjectContext(validate_project_name(project_name), store, repo)
        self.datom_version = DATOM_VERSION

    @classmethod
    def _of(cls, ctx: ProjectContext) -> Connection:
        return cls(ctx.project_name, ctx.store, ctx.repo)

    @property
    def context(self) -> ProjectContext:
        """What the project layer's operations take: project name, store, clone or None."""
        return self._ctx

    @property
    def project_name(self) -> str:
        """The project's name, as recorded in every version."""
        return self._ctx.project_name

    @property
    def store(self) -> Store:
        """The data store: parquet objects and the mirror of the metadata."""
        return self._ctx.store

    @property
    def _repo(self) -> MetadataRepo | None:
        return self._ctx.repo

    def __repr__(self) -> str:
        where = f", clone={str(self._repo.path)!r}" if self._repo else ""
        return f"Connection({self.project_name!r}, {self.role}, store={self.store.url!r}{where})"

    @property
    def role(self) -> Role:
        """``"developer"`` (a clone and a store: can write) or ``"reader"`` (the store only)."""
        return self._ctx.role

    @property
    def repo(self) -> MetadataRepo:
        """The git clone; a reader has none (:class:`ReadOnlyError`)."""
        return self._ctx.require_repo()

    @property
    def path(self) -> Path:
        """The clone's folder (a developer connection; a reader has none: :class:`ReadOnlyError`)."""
        return self.repo.path

    # -- writing ---------------------------------------------------------------------------

    def write(
        self,
        name: str,
        data: Any,
        message: str | None = None,
        parents: Sequence[ParentRef | str | Mapping[str, Any]] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        history_extra: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Record ``data`` as a new version of table ``name`` (derived).

        ``parents`` are the exact inputs: :class:`ParentRef` records (from :meth:`parent`,
        possibly of another project), table names (their current version here; a single
        name is one parent), :class:`TableMetadata` records (from :meth:`version`) or dicts
        ``{"table": ..., "version": ...}``. ``metadata`` is custom JSON stored under
        ``custom`` and part of the version's identity. The result carries the recorded
        metadata record and commit (for ``none``: the current version's).
        """
        self.repo  # noqa: B018  (a reader fails here, before any work)
        validate_table_name(name)
        if message is not None and not isinstance(message, str):
            raise InvalidArgumentError(f"table {name!r}: message= must be text, not {message!r}")
        request = WriteRequest(
            table=name,
            message=message or f"Update {name}",
            parents=tuple(
                self._parent_refs([parents] if isinstance(parents, str) else parents or ())
            ),
            custom=metadata,
            history_extra=history_extra,
        )
        return write_table(self._ctx, request, data)

    def _parent_refs(self, parents: Any) -> list[ParentRef]:
        if not isinstance(parents, Sequence):
            raise InvalidArgumentError(
                f"parents= must be a list of parents (ParentRef, table names, dicts), not {parents!r}"
            )
        refs = []
        for p in parents:
            if isinstance(p, ParentRef):
                refs.append(checked_parent(p))
            elif isinstance(p, str):
                refs.append(self.parent(p))
            elif isinstance(p, Mapping) and "table" in p:
                refs.append(self.parent(p["table"], p.get("version")))
            else:
                raise InvalidArgumentError(
                    f"parent {p!r} is not a ParentRef, a table name or a dict with 'table' (and 'version')"
                )
        return refs

    # -- reading ---------------------------------------------------------------------------

    def version(self, name: str, version_or_prefix: str | None = None) -> TableMetadata:
        """The verified metadata record of a version of ``name`` (current by default).

        At most one history read (only for a prefix) plus one document read; pass the
        record to :meth:`read`, :meth:`parent` or :meth:`diff` to skip resolving again.
        """
        if isinstance(version_or_prefix, TableMetadata):
            return version_or_prefix
        return version_of(self._ctx, name, version_or_prefix)

    def read(
        self,
        name: str,
        version: str | TableMetadata | None = None,
        columns: Sequence[str] | None = None,
        as_: OutputKind = "pandas",
        verify: Verify = "bytes",
    ) -> Any:
        """The data of a version (current by default) as pandas, ``"arrow"`` or ``"polars"``.

        ``version``: an id, a unique prefix, or a record from :meth:`version`.
        ``verify="content"`` also re-hashes the table against ``data_sha`` (bytes: parquet_sha).
        """
        if columns is not None and (isinstance(columns, str) or not isinstance(columns, Sequence)):
            raise InvalidArgumentError(f"columns= must be a list of column names, not {columns!r}")
        if as_ not in ("pandas", "arrow", "polars"):
            raise InvalidArgumentError(f'as_= must be "pandas", "arrow" or "polars", not {as_!r}')
        return read_table(self._ctx, name, version, columns, as_, verify)

    def metadata(self, name: str, version: str | TableMetadata | None = None) -> TableMetadata:
        """The metadata record of a version (current by default), verified (as :meth:`version`)."""
        return self.version(name, version)  # type: ignore[arg-type]

    def history(self, name: str) -> list[VersionInfo]:
        """Every version of ``name``, newest first."""
        return read_history(self._ctx, name)

    def tables(self) -> list[TableInfo]:
        """Every table with its current version (one manifest read)."""
        return list_tables(self._ctx)

    def resolve(self, name: str, version: str | None = None) -> str:
        """The full version id for a prefix (or the current version)."""
        return resolve_version(self._ctx, name, version)

    def parent(self, name: str, version: str | TableMetadata | None = None) -> ParentRef:
        """A parent record for a version of ``name`` in this project, for another write."""
        md = self.version(name, version)  # type: ignore[arg-type]
        return ParentRef(
            source=md.project or self.project_name,
            table=name,
            version=md.version,
            data_sha=md.data_sha,
            source_lineage=tuple(md.source_lineage or ()),
        )

    def diff(
        self,
        name: str,
        v1: str | TableMetadata | None = None,
        v2: str | TableMetadata | None = None,
        *,
        key: Sequence[str] | str | None = None,
    ) -> TableDiff:
        """What changed from ``v1`` to ``v2`` of ``name`` (see :class:`TableDiff`).

        ``v2`` defaults to the current version, ``v1`` to the version before ``v2``.
        Columns come from the parquet footers (no data read); with ``key`` (column names
        identifying rows) the rows added, removed and changed are counted, reading both.
        """
        after = self.version(name, v2)  # type: ignore[arg-type]
        if v1 is None:
            previous = previous_version(self._ctx, name, after.version)
            before = self.version(name, previous) if previous else None
        else:
            before = self.version(name, v1)  # type: ignore[arg-type]
        keys = [key] if isinstance(key, str) else key
        if keys is not None and (
            not isinstance(keys, Sequence) or not keys or not all(isinstance(k, str) for k in keys)
        ):
            raise InvalidArgumentError(f"key= must name one or more columns, not {key!r}")
        return diff_versions(self._ctx, name, before, after, keys)

    def lineage(
        self, name: str, version: str | None = None, depth: Literal["source", "parents"] = "source"
    ) -> Any:
        """``depth="source"``: the raw sources (leaves); ``"parents"``: the tree of versions."""
        return lineage(self._ctx, name, version, depth)

    def parquet_key(self, name: str, data_sha: str) -> str:
        """The store key of a table's data (content-addressed by ``data_sha``)."""
        validate_table_name(name)
        validate_version(data_sha)
        return L.store_parquet(name, data_sha)

    def commit_of(self, name: str, version: str | None = None) -> str | None:
        """The git commit that recorded ``version`` of ``name`` (current by default).

        The newest commit of ``<name>/metadata.json`` whose document is that version; None
        when git has no such commit (a reader has no git: :class:`ReadOnlyError`).
        """
        repo = self._ctx.require_repo("finding the git commit of a version")
        return newest_commit_of(repo, validate_table_name(name), self.resolve(name, version))

    def store_manifest(self) -> dict[str, Any]:
        """The manifest as mirrored in the store."""
        return store_manifest(self._ctx)

    # -- housekeeping ----------------------------------------------------------------------

    def pull(self) -> None:
        """Fast-forward the clone to its remote."""
        self.repo.pull()

    def status(self) -> ProjectStatus:
        """Where this connection points, and whether the clone is in step with its remote."""
        repo = self._repo
        inbox = repo.path / L.INBOX if repo else None
        files = sum(1 for p in inbox.iterdir() if p.is_file()) if inbox and inbox.is_dir() else 0
        try:
            tables = len(read_manifest(self._ctx).tables)
        except DatomError:
            tables = 0
        return ProjectStatus(
            project_name=self.project_name,
            role=self.role,
            store=self.store.url,
            remote=repo.remote_url if repo else None,
            head=repo.head() if repo else None,
            unpushed_commits=repo.has_unpushed_commits() if repo else False,
            tables=tables,
            inbox_files=files,
        )

    def validate(
        self, fix: bool = False, *, verify_data: bool | Verify = True, grace_s: float = 3600
    ) -> ValidationReport:
        """Compare repo and store (fetching first); ``fix=True`` repairs what git can restore.

        Tables and sets alike: a set's payload, current snapshot and mirrors are checked
        against git (its members' data is :meth:`verify_set`'s to check).
        ``verify_data``: ``"bytes"`` (or True), ``"content"`` (re-hash each table) or False.
        Killed writers' temp objects, and parquets and snapshots no recorded version names
        (left by failed or killed writes: ``orphaned_object``), older than ``grace_s``
        seconds are reported (and removed by the fix; a younger one may be a write in
        flight). Without ``fix`` a read-only clone is checked as it is (not fetched).
        """
        report = validate(self._ctx, fix=fix, verify_data=verify_data, grace_s=grace_s)
        sets = validate_sets(self._ctx, fix=fix)
        return ValidationReport(report.problems + tuple(sets), report.fetched, report.remote)

    # -- onboarding ------------------------------------------------------------------------

    def scan_inbox(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        storage_options: Mapping[str, Any] | None = None,
    ) -> list[ScanRow]:
        """One row per inbox file: ``new``, ``changed``, ``unchanged``, ``unsupported_format``...

        ``path``: the clone's ``input_files/`` by default, or any local folder or fsspec URL
        (``s3://bucket/prefix``, with ``storage_options``). Writes nothing.
        """
        return scan_inbox(self._ctx, path, storage_options=storage_options)

    def sync(
        self,
        manifest: Sequence[ScanRow | Mapping[str, Any]] | None = None,
        continue_on_error: bool = True,
        *,
        path: str | os.PathLike[str] | None = None,
        tables: Sequence[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        revert: bool = False,
        encoding: str | None = None,
    ) -> list[SyncRow]:
        """Onboard the ``new`` and ``changed`` rows of a scan (``None``: scan ``path`` first,
        the clone's ``input_files/`` by default, limited to ``tables`` when given).

        One imported version (one commit) per table; per-row results ``synced``,
        ``skipped`` or ``error`` (a failing file never stops the others unless
        ``continue_on_error=False``). A ``stale`` file (an earlier version's, left behind
        by a newer version) is skipped; ``revert=True`` makes its version current again.
        ``encoding`` names the encoding of the files' text
        (csv, SAS, SPSS, Stata; see :func:`read_extract`); without it a SAS/SPSS/Stata
        file whose text is not valid in its declared encoding is read as Windows-1252
        (then Latin-1), and the row's ``message`` says so.
        """
        return sync(
            self._ctx,
            manifest,
            continue_on_error,
            path=path,
            tables=tables,
            storage_options=storage_options,
            revert=revert,
            encoding=encoding,
        )
