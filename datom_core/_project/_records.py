"""The records datom operations return: frozen, typed, printable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from datom_core._project._model import HistoryEntry, ManifestEntry, TableMetadata
from datom_core._project._parse import parse_history

__all__ = [
    "Change",
    "LineageNode",
    "Problem",
    "ProjectStatus",
    "TableInfo",
    "ValidationReport",
    "VersionInfo",
    "WriteResult",
]

Change = Literal["none", "metadata_only", "full"]


@dataclass(frozen=True)
class WriteResult:
    """What a write did. ``change`` is ``none`` (nothing recorded), ``metadata_only`` (a new
    version over the same data, nothing uploaded) or ``full`` (new data). ``metadata`` is
    the recorded version's record; ``replaced`` the record of the version it made
    non-current, as the tip it was committed on held it (a concurrent writer's version when
    one landed first; None for a new table and for ``none``)."""

    table: str
    change: Change
    version: str
    data_sha: str
    parquet_sha: str
    commit: str | None  # the commit that recorded the version (for ``none``: the current one's)
    uploaded: bool = False  # whether parquet bytes were sent to the store
    metadata: TableMetadata | None = field(default=None, repr=False, compare=False)
    # The version this write made non-current (None: a new table, or a ``none`` write).
    replaced: TableMetadata | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class VersionInfo:
    """One entry of a table's version history (newest first)."""

    version: str
    data_sha: str
    parquet_sha: str | None
    timestamp: str
    author: str
    commit_message: str
    original_file_sha: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    commit_sha: str | None = None  # the commit that produced it (the store's history records it)

    @classmethod
    def from_entry(cls, h: HistoryEntry) -> VersionInfo:
        """From a parsed history entry (``author`` as ``Name <email>``)."""
        return cls(
            version=h.version,
            data_sha=h.data_sha,
            parquet_sha=h.parquet_sha,
            timestamp=h.timestamp,
            author=h.author,
            commit_message=h.commit_message,
            original_file_sha=h.original_file_sha,
            extra=dict(h.extra),
            commit_sha=h.commit_sha,
        )

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VersionInfo:
        """From a history entry as JSON (parsed by the one parser, R's shapes included)."""
        return cls.from_entry(parse_history([d], key="history entry")[0])


@dataclass(frozen=True)
class TableInfo:
    """A table as the manifest lists it."""

    name: str
    current_version: str
    current_data_sha: str
    last_updated: str | None
    size_bytes: int
    version_count: int
    original_file_sha: str | None = None
    original_format: str | None = None

    @classmethod
    def from_entry(cls, e: ManifestEntry) -> TableInfo:
        """From a parsed manifest entry."""
        return cls(
            name=e.name,
            current_version=e.current_version,
            current_data_sha=e.current_data_sha or "",
            last_updated=e.last_updated,
            size_bytes=int(e.size_bytes or 0),
            version_count=e.version_count,
            original_file_sha=e.original_file_sha,
            original_format=e.original_format,
        )

    @classmethod
    def from_manifest(cls, name: str, d: Mapping[str, Any]) -> TableInfo:
        """From a manifest entry ``d`` of the table ``name``."""
        return cls(
            name=name,
            current_version=d["current_version"],
            current_data_sha=d["current_data_sha"],
            last_updated=d.get("last_updated"),
            size_bytes=int(d.get("size_bytes") or 0),
            version_count=int(d.get("version_count") or 0),
            original_file_sha=d.get("original_file_sha"),
            original_format=d.get("original_format"),
        )


@dataclass(frozen=True)
class LineageNode:
    """A table version and the versions it was derived from (``parents`` depth)."""

    project: str
    table: str
    version: str | None
    data_sha: str
    parents: tuple[LineageNode, ...] = ()
    resolved: bool = True  # False when the parent lives in a project this connection cannot read


@dataclass(frozen=True)
class ProjectStatus:
    """Where a connection points and whether the clone is in step with its remote."""

    project_name: str
    role: Literal["developer", "reader"]
    store: str
    remote: str | None
    head: str | None
    unpushed_commits: bool
    tables: int
    inbox_files: int


@dataclass(frozen=True)
class Problem:
    """One finding of :meth:`Connection.validate`."""

    # missing_parquet, parquet_mismatch, content_mismatch, missing_mirror, stale_mirror,
    # missing_snapshot, altered_snapshot, forged_snapshot, corrupt_git_document,
    # manifest_drift, temp_object, orphaned_object (a parquet or snapshot no recorded
    # version names, older than the grace period); for a set also missing_payload,
    # payload_mismatch
    kind: str
    table: str | None
    key: str
    detail: str
    fixable: bool
    fixed: bool = False


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of :meth:`Connection.validate`; ``ok`` when nothing (left) is wrong."""

    problems: tuple[Problem, ...]
    fetched: bool = False  # whether the clone caught up with its remote first
    remote: str = ""  # what was fetched, or why it could not be

    @property
    def ok(self) -> bool:
        """Whether no problem is left (none found, or every one fixed)."""
        return all(p.fixed for p in self.problems)

    def __str__(self) -> str:
        if not self.problems:
            return "ok: repo and store agree" + (f" ({self.remote})" if self.remote else "")
        lines = [self.remote] if self.remote else []
        for p in self.problems:
            state = "fixed" if p.fixed else ("fixable" if p.fixable else "NOT fixable")
            lines.append(f"{p.kind:<18} {p.key:<60} {state}: {p.detail}")
        return "\n".join(lines)
