"""The JSON documents of a project: table metadata, version history and the manifest.

Pure functions over plain dicts. Documents are serialised once (:func:`dump`) and the same
bytes go to git and to the store, so the two copies are byte-identical by construction.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datom_core._errors import IntegrityError
from datom_core._identity._canonical import metadata_sha
from datom_core._identity._cv1 import HASH_ALGO, TableHash

__all__ = [
    "ParentRef",
    "SourceRef",
    "assemble_manifest",
    "build_manifest",
    "manifest_entry",
    "build_metadata",
    "dump",
    "history_entry",
    "load",
    "utc_now",
]


@dataclass(frozen=True)
class SourceRef:
    """A raw source at the leaves of lineage: an onboarded table's data."""

    project: str
    table: str
    version_sha: str  # the data_sha of the raw source

    def to_json(self) -> dict[str, str]:
        return {"project": self.project, "table": self.table, "version_sha": self.version_sha}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourceRef:
        return cls(d["project"], d["table"], d["version_sha"])


@dataclass(frozen=True)
class ParentRef:
    """An exact input of a derived version: ``(project, table, version, data_sha)``.

    ``source_lineage`` is the parent's own lineage, carried so that the child's lineage can
    be derived without another lookup; it is not written into the ``parents`` entry.
    """

    source: str
    table: str
    version: str
    data_sha: str
    source_lineage: tuple[SourceRef, ...] = ()

    def to_json(self) -> dict[str, str]:
        return {
            "source": self.source,
            "table": self.table,
            "version": self.version,
            "data_sha": self.data_sha,
        }


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def union_lineage(parents: Iterable[ParentRef]) -> list[SourceRef]:
    """De-duplicated union of the parents' source lineage, in first-seen order."""
    seen: dict[SourceRef, None] = {}
    for parent in parents:
        for ref in parent.source_lineage:
            seen.setdefault(ref, None)
    return list(seen)


def build_metadata(
    *,
    table_hash: TableHash,
    colnames: Sequence[str],
    parquet_sha: str,
    table_type: str,
    datom_version: str,
    parents: Sequence[ParentRef] = (),
    source_lineage: Sequence[SourceRef] = (),
    original_file_sha: str | None = None,
    size_bytes: int | None = None,
    custom: Mapping[str, Any] | None = None,
    created_at: str | None = None,
) -> dict[str, Any]:
    """A table version's ``metadata.json``, keys in the order the R package writes them.

    Optional keys are omitted when absent, never written as null.
    """
    doc: dict[str, Any] = {
        "data_sha": table_hash.data_sha,
        "hash_algo": HASH_ALGO,
        "parquet_sha": parquet_sha,
        "table_type": table_type,
        "nrow": table_hash.nrow,
        "ncol": table_hash.ncol,
        "colnames": list(colnames),
        "column_hashes": [{"name": c.name, "sha": c.sha} for c in table_hash.column_hashes],
        "created_at": created_at or utc_now(),
        "datom_version": datom_version,
    }
    if original_file_sha:
        doc["original_file_sha"] = original_file_sha
    if parents:
        doc["parents"] = [p.to_json() for p in parents]
    if source_lineage:
        doc["source_lineage"] = [s.to_json() for s in source_lineage]
    if size_bytes is not None:
        doc["size_bytes"] = int(size_bytes)
    if custom:
        doc["custom"] = dict(custom)
    return doc


def history_entry(
    metadata: Mapping[str, Any],
    *,
    author: str,
    commit_message: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``version_history.json`` entry for ``metadata``; ``extra`` fields are not hashed."""
    entry: dict[str, Any] = {
        "version": metadata_sha(metadata),
        "data_sha": metadata["data_sha"],
        "parquet_sha": metadata.get("parquet_sha"),
    }
    if metadata.get("original_file_sha"):
        entry["original_file_sha"] = metadata["original_file_sha"]
    entry.update(
        {
            "timestamp": metadata.get("created_at") or utc_now(),
            "author": author,
            "commit_message": commit_message,
        }
    )
    if metadata.get("size_bytes") is not None:
        entry["size_bytes"] = metadata["size_bytes"]
    for key, value in (extra or {}).items():
        if value is not None:
            entry.setdefault(key, value)
    return entry


def manifest_entry(
    metadata: Mapping[str, Any], history: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A table's manifest entry, derived from its current metadata and history."""
    current = metadata_sha(metadata)
    newest = next((h for h in history if h.get("version") == current), {})
    entry: dict[str, Any] = {"current_version": current, "current_data_sha": metadata["data_sha"]}
    if metadata.get("original_file_sha"):
        entry["original_file_sha"] = metadata["original_file_sha"]
    if newest.get("original_format"):
        entry["original_format"] = newest["original_format"]
    entry["last_updated"] = newest.get("timestamp") or metadata.get("created_at")
    entry["size_bytes"] = int(metadata.get("size_bytes") or 0)
    entry["version_count"] = len(history)
    return entry


def assemble_manifest(
    project_name: str, entries: Mapping[str, Mapping[str, Any]], *, updated_at: str | None = None
) -> dict[str, Any]:
    """The manifest document over per-table entries (see :func:`manifest_entry`)."""
    tables = {name: dict(entries[name]) for name in sorted(entries)}
    return {
        "project_name": project_name,
        "updated_at": updated_at or utc_now(),
        "tables": tables,
        "summary": {
            "total_tables": len(tables),
            "total_size_bytes": sum(int(e.get("size_bytes") or 0) for e in tables.values()),
            "total_versions": sum(int(e.get("version_count") or 0) for e in tables.values()),
        },
    }


def build_manifest(
    project_name: str,
    tables: Mapping[str, tuple[Mapping[str, Any], Sequence[Mapping[str, Any]]]],
    *,
    updated_at: str | None = None,
) -> dict[str, Any]:
    """Rebuild the manifest from each table's ``(metadata, history)``: it is derived data."""
    entries = {name: manifest_entry(meta, hist) for name, (meta, hist) in tables.items()}
    return assemble_manifest(project_name, entries, updated_at=updated_at)


def dump(doc: Any) -> bytes:
    """The one serialisation of a document (pretty, UTF-8, stable key order, final newline)."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def load(raw: bytes, *, key: str) -> Any:
    """Parse a stored document; a truncated or corrupt one fails loudly naming ``key``."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IntegrityError(
            f"{key} is not valid JSON ({e}); the document is truncated or corrupt. "
            "Repair it from git: validate(fix=True) / datom validate --fix.",
            key=key,
        ) from e


def colnames_of(metadata: Mapping[str, Any]) -> list[str]:
    """``colnames`` as a list (R writes a single column name as a bare string)."""
    names = metadata.get("colnames", [])
    return [names] if isinstance(names, str) else list(names)


def parents_of(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    return _records(metadata.get("parents"))


def source_lineage_of(metadata: Mapping[str, Any]) -> list[SourceRef]:
    return [SourceRef.from_json(d) for d in _records(metadata.get("source_lineage"))]


def _records(value: Any) -> list[dict[str, Any]]:
    # R may write a one-record array of objects as a bare object.
    if value is None:
        return []
    return [value] if isinstance(value, Mapping) else list(value)
