"""Reading a project from its store alone: versions, data, history and the table list.

Nothing here needs git or a token: a reader with read access to the store can do all of it.
Stored bytes are verified before they are trusted (parquet against ``parquet_sha``,
snapshots against their own name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datom_core._arrow import OutputKind, from_arrow
from datom_core._errors import AmbiguousVersionError, IntegrityError, NotFoundError
from datom_core._identity._canonical import metadata_sha
from datom_core._names import validate_table_name, validate_version
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import colnames_of, load
from datom_core._project._parquet import read_verified
from datom_core._project._records import TableInfo, VersionInfo

__all__ = [
    "list_tables",
    "read_history",
    "read_metadata",
    "read_table",
    "resolve_version",
    "store_manifest",
]


def store_manifest(ctx: ProjectContext) -> dict[str, Any]:
    """The manifest as mirrored in the store."""
    try:
        raw = ctx.store.read_bytes(L.STORE_MANIFEST)
    except NotFoundError as e:
        raise NotFoundError(
            f"{ctx.store.url} holds no datom project (no {L.STORE_MANIFEST}); check the store "
            "location, or create a project (init_repo() / datom init)"
        ) from e
    return load(raw, key=L.STORE_MANIFEST)  # type: ignore[no-any-return]


def list_tables(ctx: ProjectContext) -> list[TableInfo]:
    """Every table with its current version: one manifest read."""
    manifest = store_manifest(ctx)
    return [
        TableInfo.from_manifest(name, entry)
        for name, entry in sorted(manifest.get("tables", {}).items())
    ]


def read_history(ctx: ProjectContext, table: str) -> list[VersionInfo]:
    """The table's versions, newest first."""
    return [VersionInfo.from_json(d) for d in _history_docs(ctx, table)]


def _history_docs(ctx: ProjectContext, table: str) -> list[dict[str, Any]]:
    validate_table_name(table)
    key = L.store_history(table)
    try:
        raw = ctx.store.read_bytes(key)
    except NotFoundError as e:
        raise _unknown_table(ctx, table) from e
    history = load(raw, key=key)
    return [history] if isinstance(history, dict) else list(history)


def resolve_version(ctx: ProjectContext, table: str, version: str | None) -> str:
    """The full ``metadata_sha`` of ``version`` (a full id or unique prefix; None: current)."""
    if version is None:
        return metadata_sha(read_metadata(ctx, table))
    validate_version(version)
    matches = sorted(
        {h["version"] for h in _history_docs(ctx, table) if h["version"].startswith(version)}
    )
    if not matches:
        raise NotFoundError(
            f"table {table!r} has no version {version!r}; its history (history() / datom history) "
            "lists its versions"
        )
    if len(matches) > 1:
        raise AmbiguousVersionError(
            f"version prefix {version!r} of table {table!r} matches {len(matches)} versions: "
            + ", ".join(matches)
            + "; give more characters",
            candidates=tuple(matches),
        )
    return matches[0]


def read_metadata(ctx: ProjectContext, table: str, version: str | None = None) -> dict[str, Any]:
    """The metadata document of a version (current when ``version`` is None), verified."""
    validate_table_name(table)
    if version is None:
        key = L.store_metadata(table)
        try:
            raw = ctx.store.read_bytes(key)
        except NotFoundError as e:
            raise _unknown_table(ctx, table) from e
        return load(raw, key=key)
    full = resolve_version(ctx, table, version)
    key = L.store_snapshot(table, full)
    metadata = load(ctx.store.read_bytes(key), key=key)
    actual = metadata_sha(metadata)
    if actual != full:
        raise IntegrityError(
            f"snapshot {key} in {ctx.store.url} does not certify itself: its metadata_sha is "
            f"{actual}, its name says {full}. The snapshot was altered; repair it from git: "
            "validate(fix=True) / datom validate --fix.",
            key=key,
            expected=full,
            actual=actual,
        )
    return metadata


def read_table(
    ctx: ProjectContext,
    table: str,
    version: str | None = None,
    columns: Sequence[str] | None = None,
    as_: OutputKind = "pandas",
) -> Any:
    """The data of a version, verified against its ``parquet_sha`` before it is parsed."""
    metadata = read_metadata(ctx, table, version)
    if columns is not None:
        missing = [c for c in columns if c not in colnames_of(metadata)]
        if missing:
            raise NotFoundError(
                f"table {table!r} has no column(s) {missing}; its columns are {colnames_of(metadata)}"
            )
    key = L.store_parquet(table, metadata["data_sha"])
    arrow = read_verified(ctx.store, key, metadata.get("parquet_sha"), columns=columns)
    return from_arrow(arrow, as_)


def _unknown_table(ctx: ProjectContext, table: str) -> NotFoundError:
    return NotFoundError(
        f"project {ctx.project_name!r} has no table {table!r} in {ctx.store.url}; "
        "list its tables with tables() / datom list"
    )
