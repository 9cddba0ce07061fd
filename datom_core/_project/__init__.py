"""Projects and connections: ``init_repo``, ``connect``, ``clone`` and :class:`Connection`.

A **developer** connection has a git clone and a store: it can write. A **reader**
connection has only the store and a project name: it lists, reads, shows history and
lineage, and refuses to write (:class:`ReadOnlyError`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from datom_core._arrow import OutputKind
from datom_core._errors import DatomError, GitError, InvalidNameError, NotFoundError, ReadOnlyError
from datom_core._git import MetadataRepo
from datom_core._names import validate_project_name, validate_table_name
from datom_core._project import _layout as L
from datom_core._project._documents import (
    ParentRef,
    assemble_manifest,
    dump,
    load,
    source_lineage_of,
)
from datom_core._project._records import (
    ProjectStatus,
    TableInfo,
    ValidationReport,
    VersionInfo,
    WriteResult,
)
from datom_core._store import Store, store_from_description

if TYPE_CHECKING:  # onboarding builds on projects: import it lazily, never at load time
    from datom_core._onboard import ScanRow, SyncRow

__all__ = ["Connection", "clone", "connect", "init_repo"]

try:
    from importlib.metadata import version as _pkg_version

    DATOM_VERSION = _pkg_version("datom")
except Exception:  # running from a source tree without an install
    DATOM_VERSION = "0.0.0"


class Connection:
    """A handle on one datom project (see the module docstring for the two roles)."""

    def __init__(self, project_name: str, store: Store, repo: MetadataRepo | None = None) -> None:
        self.project_name = validate_project_name(project_name)
        self.store = store
        self._repo = repo
        self.datom_version = DATOM_VERSION

    def __repr__(self) -> str:
        where = f", clone={str(self._repo.path)!r}" if self._repo else ""
        return f"Connection({self.project_name!r}, {self.role}, store={self.store.url!r}{where})"

    @property
    def role(self) -> Literal["developer", "reader"]:
        return "developer" if self._repo is not None else "reader"

    @property
    def repo(self) -> MetadataRepo:
        """The git clone; a reader has none."""
        if self._repo is None:
            raise ReadOnlyError(
                f"this connection to {self.project_name!r} is a reader (store only): it cannot "
                "change the project. Open a clone to write (connect(<clone path>) / datom --repo <clone>), "
                "or make one with clone() / datom clone."
            )
        return self._repo

    @property
    def path(self) -> Path:
        return self.repo.path

    # -- writing ---------------------------------------------------------------------------

    def write(
        self,
        name: str,
        data: Any,
        message: str | None = None,
        parents: Sequence[ParentRef | str | Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        history_extra: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Record ``data`` as a new version of table ``name`` (derived).

        ``parents`` are the exact inputs: :class:`ParentRef` records (from :meth:`parent`,
        possibly of another project), table names (their current version here) or dicts
        ``{"table": ..., "version": ...}``. ``metadata`` is custom JSON stored under
        ``custom`` and part of the version's identity.
        """
        from datom_core._project._write import WriteRequest, write_table

        self.repo  # noqa: B018  (a reader fails here, before any work)
        validate_table_name(name)
        request = WriteRequest(
            table=name,
            message=message or f"Update {name}",
            parents=tuple(self._parent_refs(parents or ())),
            custom=metadata,
            history_extra=history_extra,
        )
        return write_table(self, request, data)

    def _parent_refs(
        self, parents: Sequence[ParentRef | str | Mapping[str, Any]]
    ) -> list[ParentRef]:
        refs = []
        for p in parents:
            if isinstance(p, ParentRef):
                refs.append(_checked_parent(p))
            elif isinstance(p, str):
                refs.append(self.parent(p))
            elif isinstance(p, Mapping) and "table" in p:
                refs.append(self.parent(p["table"], p.get("version")))
            else:
                raise InvalidNameError(
                    f"parent {p!r} is not a ParentRef, a table name or a dict with 'table' (and 'version')"
                )
        return refs

    # -- reading ---------------------------------------------------------------------------

    def read(
        self,
        name: str,
        version: str | None = None,
        columns: Sequence[str] | None = None,
        as_: OutputKind = "pandas",
    ) -> Any:
        """The data of a version (current by default) as pandas, ``"arrow"`` or ``"polars"``."""
        from datom_core._project._read import read_table

        return read_table(self, name, version, columns, as_)

    def metadata(self, name: str, version: str | None = None) -> dict[str, Any]:
        """The metadata document of a version (current by default), verified."""
        from datom_core._project._read import read_metadata

        return read_metadata(self, name, version)

    def history(self, name: str) -> list[VersionInfo]:
        """Every version of ``name``, newest first."""
        from datom_core._project._read import read_history

        return read_history(self, name)

    def tables(self) -> list[TableInfo]:
        """Every table with its current version (one manifest read)."""
        from datom_core._project._read import list_tables

        return list_tables(self)

    def resolve(self, name: str, version: str | None = None) -> str:
        """The full version id for a prefix (or the current version)."""
        from datom_core._project._read import resolve_version

        return resolve_version(self, name, version)

    def parent(self, name: str, version: str | None = None) -> ParentRef:
        """A parent record for a version of ``name`` in this project, for another write."""
        metadata = self.metadata(name, version)
        from datom_core._identity._canonical import metadata_sha

        lineage = source_lineage_of(metadata)
        return ParentRef(
            source=self.project_name,
            table=name,
            version=metadata_sha(metadata),
            data_sha=metadata["data_sha"],
            source_lineage=tuple(lineage),
        )

    def lineage(
        self, name: str, version: str | None = None, depth: Literal["source", "parents"] = "source"
    ) -> Any:
        """``depth="source"``: the raw sources (leaves); ``"parents"``: the tree of versions."""
        from datom_core._project._lineage import lineage

        return lineage(self, name, version, depth)

    def parquet_key(self, name: str, data_sha: str) -> str:
        """The store key of a table's data (content-addressed by ``data_sha``)."""
        from datom_core._names import validate_version

        validate_table_name(name)
        validate_version(data_sha)
        return L.store_parquet(name, data_sha)

    def commit_of(self, name: str, version: str | None = None) -> str | None:
        """The git commit that recorded ``version`` of ``name`` (current by default).

        The newest commit of ``<name>/metadata.json`` whose document is that version; None
        when git has no such commit (a reader has no git: :class:`ReadOnlyError`).
        """
        from datom_core._identity._canonical import metadata_sha

        wanted = self.resolve(name, version)
        path = L.git_metadata(validate_table_name(name))
        for commit in self.repo.log(path):
            raw = self.repo.read_at(commit.id, path)
            if raw is not None and metadata_sha(load(raw, key=path)) == wanted:
                return commit.id
        return None

    def store_manifest(self) -> dict[str, Any]:
        """The manifest as mirrored in the store."""
        try:
            raw = self.store.read_bytes(L.STORE_MANIFEST)
        except NotFoundError as e:
            raise NotFoundError(
                f"{self.store.url} holds no datom project (no {L.STORE_MANIFEST}); check the store "
                "location, or create a project (init_repo() / datom init)"
            ) from e
        return load(raw, key=L.STORE_MANIFEST)

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
            tables = len(self.store_manifest().get("tables", {}))
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

    def validate(self, fix: bool = False, *, verify_data: bool = True) -> ValidationReport:
        """Compare repo and store; with ``fix=True`` repair from git what can be repaired."""
        from datom_core._project._validate import validate

        return validate(self, fix=fix, verify_data=verify_data)

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
        from datom_core._onboard import scan_inbox

        return scan_inbox(self, path, storage_options=storage_options)

    def sync(
        self,
        manifest: Sequence[ScanRow | Mapping[str, Any]] | None = None,
        continue_on_error: bool = True,
        *,
        path: str | os.PathLike[str] | None = None,
        tables: Sequence[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> list[SyncRow]:
        """Onboard the ``new`` and ``changed`` rows of a scan (``None``: scan ``path`` first,
        the clone's ``input_files/`` by default, limited to ``tables`` when given).

        One imported version (one commit) per table; per-row results ``synced``,
        ``skipped`` or ``error`` (a failing file never stops the others unless
        ``continue_on_error=False``).
        """
        from datom_core._onboard import sync

        return sync(
            self,
            manifest,
            continue_on_error,
            path=path,
            tables=tables,
            storage_options=storage_options,
        )


def _checked_parent(p: ParentRef) -> ParentRef:
    from datom_core._names import validate_version

    validate_table_name(p.table)
    validate_project_name(p.source)
    for value in (p.version, p.data_sha):
        validate_version(value)
        if len(value) != 64:
            raise InvalidNameError(
                f"parent {p.table!r}: {value!r} is not a full SHA-256 (64 hex characters)"
            )
    return p


def init_repo(
    path: str | os.PathLike[str],
    project_name: str,
    store: Store,
    remote: str | os.PathLike[str] | None = None,
    *,
    token_env: str = "DATOM_GIT_TOKEN",
) -> Connection:
    """Create a project: a git clone at ``path`` pushed to ``remote``, and its store mirror.

    ``remote=None`` is the embedded default: a bare repository next to ``path``
    (``<path>.remote.git``), no server and no account needed.
    """
    validate_project_name(project_name)
    store.check_access()
    if store.exists(L.STORE_MANIFEST):
        existing = load(store.read_bytes(L.STORE_MANIFEST), key=L.STORE_MANIFEST).get(
            "project_name"
        )
        raise DatomError(
            f"{store.url} already holds project {existing!r}; use a different store or prefix, "
            "or clone that project (clone() / datom clone)"
        )
    repo = MetadataRepo.init(path, remote, token_env=token_env)
    if repo.fetch_and_reset() is not None:
        raise GitError(
            f"remote {repo.remote_url} already holds commits; clone it to join that project "
            "(clone() / datom clone)"
        )
    manifest = dump(assemble_manifest(project_name, {}))
    files = {
        L.PROJECT_YAML: _project_yaml(project_name, store, repo.remote_url),
        L.MANIFEST: manifest,
        ".gitignore": L.GITIGNORE.encode(),
    }
    repo.commit(files, f"Initialise datom project {project_name}")
    repo.push()
    (repo.path / L.INBOX).mkdir(exist_ok=True)
    store.write_bytes(L.STORE_MANIFEST, manifest)
    return Connection(project_name, store, repo)


def _project_yaml(project_name: str, store: Store, remote: str) -> bytes:
    doc = {
        "project_name": project_name,
        "datom_version": DATOM_VERSION,
        "storage": store.describe(),
        "repo": {"remote": remote},
    }
    return yaml.safe_dump(doc, sort_keys=False).encode("utf-8")


def connect(
    path: str | os.PathLike[str] | None = None,
    *,
    store: Store | None = None,
    project_name: str | None = None,
    token_env: str = "DATOM_GIT_TOKEN",
    **credentials: Any,
) -> Connection:
    """Open a project.

    * ``connect(path)``: a developer connection from an existing clone; the store comes from
      ``.datom/project.yaml`` (credentials from the environment or ``credentials``), or
      ``store=`` overrides it.
    * ``connect(store=..., project_name=...)``: a reader connection, from the store alone.
    """
    if path is None:
        if store is None or project_name is None:
            raise DatomError(
                "a reader connection needs store= and project_name=; a developer one needs a clone path"
            )
        conn = Connection(project_name, store)
        found = conn.store_manifest().get("project_name")
        if found != project_name:
            raise NotFoundError(f"{store.url} holds project {found!r}, not {project_name!r}")
        return conn
    return _developer(MetadataRepo.open(path, token_env=token_env), store, credentials)


def _developer(
    repo: MetadataRepo, store: Store | None, credentials: Mapping[str, Any]
) -> Connection:
    raw = repo.read(L.PROJECT_YAML)
    if raw is None:
        raise NotFoundError(
            f"{repo.path} is a git repository but not a datom project (no {L.PROJECT_YAML})"
        )
    config = yaml.safe_load(raw)
    if store is None:
        store = store_from_description(config["storage"], **credentials)
    (repo.path / L.INBOX).mkdir(exist_ok=True)
    return Connection(config["project_name"], store, repo)


def clone(
    remote: str | os.PathLike[str],
    path: str | os.PathLike[str],
    store: Store | None = None,
    *,
    token_env: str = "DATOM_GIT_TOKEN",
    **credentials: Any,
) -> Connection:
    """Join a project as a second developer: clone its metadata remote into ``path``."""
    repo = MetadataRepo.clone(remote, path, token_env=token_env)
    return _developer(repo, store, credentials)
