"""Reading a project from its store alone: versions, data, history and the table list.

Nothing here needs git or a token: a reader with read access to the store can do all of it.
Stored bytes are verified before they are trusted (parquet against ``parquet_sha``,
snapshots against their own name). Documents are parsed once into records (``_model``).

Resolving a version costs at most one history read plus one snapshot read: the current
version is ``metadata.json`` (one read), a full id is its snapshot (one read), a prefix
is looked up in the history first.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

from datom_core._arrow import OutputKind, from_arrow
from datom_core._errors import AmbiguousVersionError, IntegrityError, NotFoundError
from datom_core._names import validate_table_name, validate_version
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._model import HistoryEntry, Manifest, TableMetadata
from datom_core._project._parquet import read_verified, without_footer_key
from datom_core._project._parse import parse_history, parse_manifest, parse_metadata
from datom_core._project._records import TableInfo, VersionInfo
from datom_core._project._verify import Verify, check_content, check_verify

__all__ = [
    "history_entries",
    "list_tables",
    "read_history",
    "read_manifest",
    "read_metadata",
    "read_table",
    "resolve_version",
    "store_manifest",
    "version_of",
]

_log = logging.getLogger("datom")
_SCHEMA_MAX = 2


def read_manifest(ctx: ProjectContext) -> Manifest:
    """The store's manifest (format 2; format 1 converted in memory, never written).

    An unreachable manifest (a newer format) is rebuilt from the store listing and each
    artifact's documents, with one warning; a manifest that does not parse fails loudly.
    """
    try:
        raw = ctx.store.read_bytes(L.STORE_MANIFEST)
    except NotFoundError as e:
        raise NotFoundError(
            f"{ctx.store.url} holds no datom project (no {L.STORE_MANIFEST}); check the store "
            "location, or create a project (init_repo() / datom init)"
        ) from e
    try:
        return parse_manifest(raw, key=L.STORE_MANIFEST)
    except IntegrityError as e:
        if e.expected != "reachable manifest":
            raise
        return _rebuilt_manifest(ctx, str(e))


def _rebuilt_manifest(ctx: ProjectContext, why: str) -> Manifest:
    message = f"{why}; listing the project from the store's documents instead (read only)"
    warnings.warn(message, stacklevel=3)
    _log.warning(message)
    artifacts: dict[str, Any] = {}
    for key in ctx.store.list():
        name, _, rest = key.partition("/")
        if rest != ".metadata/metadata.json":
            continue
        try:
            md = version_of(ctx, name)
            history = history_entries(ctx, name)
        except (IntegrityError, NotFoundError):
            continue
        artifacts[name] = {
            "kind": md.kind,
            "current_version": md.version,
            "current_data_sha": md.data_sha,
            "last_updated": md.created_at,
            "size_bytes": md.size_bytes or 0,
            "version_count": len(history),
        }
    return parse_manifest(
        {"schema_version": 2, "project_name": ctx.project_name, "artifacts": artifacts},
        key=L.STORE_MANIFEST,
    )


def store_manifest(ctx: ProjectContext) -> dict[str, Any]:
    """The store's manifest as a plain format-2 document."""
    return dict(read_manifest(ctx).raw)


def list_tables(ctx: ProjectContext) -> list[TableInfo]:
    """Every table with its current version: one manifest read."""
    return [TableInfo.from_entry(entry) for _, entry in sorted(read_manifest(ctx).tables.items())]


def history_entries(ctx: ProjectContext, table: str) -> tuple[HistoryEntry, ...]:
    """The store's history of ``table`` (newest first), parsed."""
    validate_table_name(table)
    key = L.store_history(table)
    try:
        raw = ctx.store.read_bytes(key)
    except NotFoundError as e:
        raise _unknown_table(ctx, table) from e
    return parse_history(raw, key=key)


def read_history(ctx: ProjectContext, table: str) -> list[VersionInfo]:
    """The table's versions, newest first."""
    return [VersionInfo.from_entry(h) for h in history_entries(ctx, table)]


def resolve_version(ctx: ProjectContext, table: str, version: str | None) -> str:
    """The full ``metadata_sha`` of ``version`` (a full id or unique prefix; None: current)."""
    if version is None:
        return version_of(ctx, table).version
    validate_version(version)
    return _match(ctx, table, version, history_entries(ctx, table))


def _match(ctx: ProjectContext, table: str, prefix: str, history: Sequence[HistoryEntry]) -> str:
    matches = sorted({h.version for h in history if h.version.startswith(prefix)})
    if not matches:
        raise NotFoundError(
            f"table {table!r} has no version {prefix!r}; its history (history() / datom history) "
            "lists its versions"
        )
    if len(matches) > 1:
        raise AmbiguousVersionError(
            f"version prefix {prefix!r} of table {table!r} matches {len(matches)} versions: "
            + ", ".join(matches)
            + "; give more characters",
            candidates=tuple(matches),
        )
    return matches[0]


def version_of(ctx: ProjectContext, table: str, version: str | None = None) -> TableMetadata:
    """The verified metadata record of a version (current when ``version`` is None)."""
    validate_table_name(table)
    if version is None:
        key = L.store_metadata(table)
        try:
            raw = ctx.store.read_bytes(key)
        except NotFoundError as e:
            raise _unknown_table(ctx, table) from e
        return _checked(parse_metadata(raw, key=key), key)
    validate_version(version)
    full = (
        version if len(version) == 64 else _match(ctx, table, version, history_entries(ctx, table))
    )
    key = L.store_snapshot(table, full)
    try:
        raw = ctx.store.read_bytes(key)
    except NotFoundError as e:
        if len(version) == 64:  # say whether the table or the version is unknown
            _match(ctx, table, version, history_entries(ctx, table))
        raise NotFoundError(
            f"snapshot {key} of version {full} is missing from {ctx.store.url}; restore it "
            "from git: validate(fix=True) / datom validate --fix"
        ) from e
    metadata = _checked(parse_metadata(raw, key=key), key)
    if metadata.version != full:
        raise IntegrityError(
            f"snapshot {key} in {ctx.store.url} does not certify itself: its metadata_sha is "
            f"{metadata.version}, its name says {full}. The snapshot was altered; repair it from "
            "git: validate(fix=True) / datom validate --fix.",
            key=key,
            expected=full,
            actual=metadata.version,
        )
    return metadata


def _checked(metadata: TableMetadata, key: str) -> TableMetadata:
    if metadata.schema_version is not None and metadata.schema_version > _SCHEMA_MAX:
        raise IntegrityError(
            f"{key} declares schema_version {metadata.schema_version}, newer than this datom "
            "reads; upgrade datom (pip install -U datom)",
            key=key,
            expected=f"schema_version <= {_SCHEMA_MAX}",
            actual=str(metadata.schema_version),
        )
    return metadata


def read_metadata(ctx: ProjectContext, table: str, version: str | None = None) -> TableMetadata:
    """Alias of :func:`version_of` (the name of the previous release)."""
    return version_of(ctx, table, version)


def read_table(
    ctx: ProjectContext,
    table: str,
    version: str | TableMetadata | None = None,
    columns: Sequence[str] | None = None,
    as_: OutputKind = "pandas",
    verify: Verify = "bytes",
) -> Any:
    """The data of a version, verified against its ``parquet_sha`` before it is parsed.

    ``version`` may be a record from :func:`version_of` (then only the data is read).
    ``verify="content"`` also re-hashes the whole decoded table against ``data_sha``
    (``_verify``): a read pinned to a version id is then tamper-evident end to end.
    """
    check_verify(verify)
    metadata = version if isinstance(version, TableMetadata) else version_of(ctx, table, version)
    if columns is not None:
        missing = [c for c in columns if c not in metadata.colnames]
        if missing:
            raise NotFoundError(
                f"table {table!r} has no column(s) {missing}; its columns are "
                f"{list(metadata.colnames)}"
            )
    key = L.store_parquet(table, metadata.data_sha)
    if verify == "bytes":
        arrow = read_verified(ctx.store, key, metadata.parquet_sha, columns=columns)
        return from_arrow(without_footer_key(arrow), as_)
    arrow = without_footer_key(read_verified(ctx.store, key, metadata.parquet_sha))
    check_content(table, metadata, key, arrow)
    return from_arrow(arrow.select(list(columns)) if columns is not None else arrow, as_)


def _unknown_table(ctx: ProjectContext, table: str) -> NotFoundError:
    return NotFoundError(
        f"project {ctx.project_name!r} has no table {table!r} in {ctx.store.url}; "
        "list its tables with tables() / datom list"
    )
