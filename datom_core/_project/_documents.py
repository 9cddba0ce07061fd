"""Building the JSON documents of a project, in format 2 (FORMAT2.md), as R writes them.

Pure functions: table metadata (R's key order), history entries, manifest entries and the
manifest. Documents are serialised once (:func:`dump`); the same bytes go to git and to
the store (the store's history alone adds ``commit_sha``, see ``_mirror``). Parsing is
``_parse``'s job; ``load`` here is its JSON reader.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from datom_core._identity._cv1 import HASH_ALGO, TableHash
from datom_core._project._model import HistoryEntry, ParentRef, SourceRef, TableMetadata
from datom_core._project._parse import load_json, records
from datom_core._project._pretty import pretty_json

__all__ = [
    "ParentRef",
    "SourceRef",
    "assemble_manifest",
    "build_manifest",
    "build_metadata",
    "dump",
    "history_entry",
    "load",
    "manifest_doc",
    "manifest_entry",
    "summary_weight",
    "utc_now",
]

SCHEMA_VERSION = 2


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
    parquet_sha: str | None,
    table_type: str,
    datom_version: str,
    project: str,
    parents: Sequence[ParentRef] = (),
    source_lineage: Sequence[SourceRef] | None = None,
    original_file_sha: str | None = None,
    original_format: str | None = None,
    size_bytes: int | None = None,
    custom: Mapping[str, Any] | None = None,
    created_at: str | None = None,
) -> dict[str, Any]:
    """A table version's ``metadata.json``, keys in R's order (FORMAT2.md §2).

    Optional keys are omitted when absent, never null. ``source_lineage`` is written when
    given, also as ``[]`` (R writes it so for a derived table whose parents carry none).
    No column digests: they live in the parquet footer (§3).
    """
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "table",
        "data_sha": table_hash.data_sha,
        "hash_algo": HASH_ALGO,
    }
    if parquet_sha:
        doc["parquet_sha"] = parquet_sha
    doc.update(
        {
            "table_type": table_type,
            "nrow": table_hash.nrow,
            "ncol": table_hash.ncol,
            "colnames": list(colnames),
            "created_at": created_at or utc_now(),
            "datom_version": datom_version,
            "project": project,
        }
    )
    if original_file_sha:
        doc["original_file_sha"] = original_file_sha
    if original_format:
        doc["original_format"] = original_format
    if parents:
        doc["parents"] = [p.to_json() for p in parents]
    if source_lineage is not None:
        doc["source_lineage"] = [s.to_json() for s in source_lineage]
    if size_bytes is not None:
        doc["size_bytes"] = int(size_bytes)
    if custom:
        doc["custom"] = dict(custom)
    return doc


def history_entry(
    metadata: TableMetadata,
    *,
    author: tuple[str, str],
    commit_message: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``version_history.json`` entry for ``metadata``, as R writes it (FORMAT2.md §5).

    ``author`` is ``(name, email)``; ``extra`` fields (the orchestrator run, the source
    file) follow and are never hashed. ``commit_sha`` is added to the store's copy only.
    """
    entry: dict[str, Any] = {
        "version": metadata.version,
        "data_sha": metadata.data_sha,
        "timestamp": metadata.created_at or utc_now(),
        "author": {"name": author[0], "email": author[1]},
        "commit_message": commit_message,
    }
    if metadata.parquet_sha:
        entry["parquet_sha"] = metadata.parquet_sha
    if metadata.original_file_sha:
        entry["original_file_sha"] = metadata.original_file_sha
    for key, value in (extra or {}).items():
        if value is not None:
            entry.setdefault(key, value)
    return entry


def manifest_entry(
    metadata: TableMetadata, history: Sequence[HistoryEntry], *, last_updated: str | None = None
) -> dict[str, Any]:
    """A table's manifest entry (FORMAT2.md §4, keys in order), from its documents.

    ``last_updated`` is when the entry is rewritten (a write's clock); no document
    records it, so a rebuild uses the version's ``created_at``, as R does.
    """
    current = next((h for h in history if h.version == metadata.version), None)
    entry: dict[str, Any] = {
        "kind": metadata.kind,
        "current_version": metadata.version,
        "current_data_sha": metadata.data_sha,
        "last_updated": last_updated
        or metadata.created_at
        or (current.timestamp if current else None),
        "size_bytes": int(metadata.size_bytes or 0),
        "version_count": len(history),
    }
    original_format = metadata.original_format or (
        current.extra.get("original_format") if current else None
    )
    if metadata.original_file_sha:
        entry["original_file_sha"] = metadata.original_file_sha
        if original_format:
            entry["original_format"] = original_format
    return entry


def summary_weight(entry: Any) -> tuple[int, int, int, int]:
    """What one artifact entry adds to the summary: (tables, size_bytes, versions, sets)."""
    kind = entry.get("kind") if isinstance(entry, Mapping) else None
    if kind == "table":
        return 1, int(entry.get("size_bytes") or 0), int(entry.get("version_count") or 0), 0
    return (0, 0, 0, 1) if kind == "set" else (0, 0, 0, 0)


def manifest_doc(
    project_name: str,
    artifacts: dict[str, Any],
    totals: tuple[int, int, int, int],
    updated_at: str,
    *,
    base: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest around ``artifacts`` (in name order) and their summed
    :func:`summary_weight`; ``base``'s key order and other top-level fields kept."""
    doc: dict[str, Any] = dict(base) if base else {}
    doc.setdefault("schema_version", SCHEMA_VERSION)
    doc.setdefault("project_name", project_name)
    doc["artifacts"] = artifacts
    doc["summary"] = {
        "total_tables": totals[0],
        "total_size_bytes": totals[1],
        "total_versions": totals[2],
        "total_sets": totals[3],
    }
    doc["updated_at"] = updated_at
    return doc


def assemble_manifest(
    project_name: str,
    entries: Mapping[str, Mapping[str, Any]],
    *,
    updated_at: str | None = None,
    base: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The format-2 manifest over artifact entries (see :func:`manifest_entry`).

    ``base`` is the manifest being updated (already converted to format 2): its key order
    and any top-level field are kept; ``entries`` replace its ``artifacts``.
    """
    artifacts = {name: dict(entries[name]) for name in sorted(entries)}
    totals = (0, 0, 0, 0)
    for entry in artifacts.values():
        w = summary_weight(entry)
        totals = (totals[0] + w[0], totals[1] + w[1], totals[2] + w[2], totals[3] + w[3])
    return manifest_doc(project_name, artifacts, totals, updated_at or utc_now(), base=base)


def build_manifest(
    project_name: str,
    tables: Mapping[str, tuple[TableMetadata, Sequence[HistoryEntry]]],
    *,
    updated_at: str | None = None,
) -> dict[str, Any]:
    """Rebuild the manifest from each table's ``(metadata, history)``: it is derived data."""
    entries = {name: manifest_entry(meta, hist) for name, (meta, hist) in tables.items()}
    return assemble_manifest(project_name, entries, updated_at=updated_at)


def dump(doc: Any) -> bytes:
    """The one serialisation of a document (pretty, UTF-8, stable key order, final newline):
    ``json.dumps(doc, indent=2, ensure_ascii=False)``, by the faster :func:`pretty_json`."""
    return (pretty_json(doc) + "\n").encode("utf-8")


def load(raw: bytes, *, key: str) -> Any:
    """Parse a stored JSON document; a truncated or corrupt one fails loudly naming ``key``."""
    return load_json(raw, key=key)


def colnames_of(metadata: Mapping[str, Any]) -> list[str]:
    """``colnames`` as a list (R writes a single column name as a bare string)."""
    names = metadata.get("colnames", [])
    return [names] if isinstance(names, str) else list(names)


def parents_of(metadata: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return _records(metadata.get("parents"))


def source_lineage_of(metadata: Mapping[str, Any]) -> list[SourceRef]:
    return [SourceRef.from_json(d) for d in _records(metadata.get("source_lineage"))]


def _records(value: Any) -> list[Mapping[str, Any]]:
    return records(value, "metadata", "records")
