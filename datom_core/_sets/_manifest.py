"""The keys of a set, its manifest entry in a version-2 manifest, and the write door.

The write door (FORMAT2.md §6) runs before anything is hashed or written: a project that
a newer datom wrote, or documents holding fields this build cannot place, stop the write
with the field, the file and the remedy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from datom_core._errors import IntegrityError
from datom_core._git import MetadataRepo
from datom_core._sets._documents import set_version
from datom_core._sets._errors import ArtifactKindError, NewerFormatError

__all__ = [
    "KNOWN_METADATA_KEYS",
    "MANIFEST",
    "PROJECT_YAML",
    "STORE_MANIFEST",
    "WRITER_FORMAT_VERSION",
    "check_manifest",
    "check_metadata",
    "check_project_config",
    "dump_document",
    "git_history",
    "git_metadata",
    "git_payload",
    "manifest_with_set",
    "store_history",
    "store_metadata",
    "store_payload",
    "store_snapshot",
    "set_version_of",
    "upgrade_manifest",
    "write_door",
]

PROJECT_YAML = ".datom/project.yaml"
MANIFEST = ".datom/manifest.json"
STORE_MANIFEST = ".metadata/manifest.json"

#: The R datom release whose formats this build implements.
WRITER_FORMAT_VERSION = "0.2.0"

KNOWN_METADATA_KEYS = frozenset(
    {
        "colnames", "custom", "data_sha", "hash_algo", "kind", "ncol", "nrow",
        "original_file_sha", "parents", "source_lineage", "table_type", "column_hashes",
        "created_at", "datom_version", "document_sha", "original_format", "parquet_sha",
        "project", "schema_version", "size_bytes",
    }
)  # fmt: skip
_MANIFEST_KEYS = frozenset(
    {"artifacts", "project_name", "schema_version", "summary", "tables", "updated_at"}
)
_ENTRY_KEYS = frozenset(
    {
        "current_data_sha", "current_version", "kind", "last_updated", "member_count",
        "original_file_sha", "original_format", "size_bytes", "version_count",
    }
)  # fmt: skip
_REMEDY = "upgrade datom (pip install -U datom) before writing into this project"


def git_payload(name: str) -> str:
    return f"{name}/set.json"


def git_metadata(name: str) -> str:
    return f"{name}/metadata.json"


def git_history(name: str) -> str:
    return f"{name}/version_history.json"


def store_payload(name: str, data_sha: str) -> str:
    return f"{name}/{data_sha}.json"


def store_metadata(name: str) -> str:
    return f"{name}/.metadata/metadata.json"


def store_history(name: str) -> str:
    return f"{name}/.metadata/version_history.json"


def store_snapshot(name: str, version: str) -> str:
    return f"{name}/.metadata/{version}.json"


def dump_document(doc: Any) -> bytes:
    """A metadata, history or manifest document (pretty, UTF-8, final newline)."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def check_project_config(raw: bytes | None) -> None:
    """Refuse a ``project.yaml`` this build cannot write into: a ``min_writer_version``
    above its formats (or not a version), or a newer ``schema_version``."""
    try:
        config = yaml.safe_load(raw or b"") or {}
    except yaml.YAMLError as e:
        raise NewerFormatError(f"{PROJECT_YAML} does not parse ({e})") from e
    if not isinstance(config, Mapping):
        raise NewerFormatError(f"{PROJECT_YAML} is not a mapping; {_REMEDY}")
    floor = config.get("min_writer_version")
    if floor is not None:
        if not isinstance(floor, str) or not re.fullmatch(r"\d+(\.\d+)*", floor):
            raise NewerFormatError(
                f"{PROJECT_YAML}: min_writer_version {floor!r} is not a version string; {_REMEDY}"
            )
        if _version_tuple(floor) > _version_tuple(WRITER_FORMAT_VERSION):
            raise NewerFormatError(
                f"{PROJECT_YAML}: min_writer_version {floor} is above {WRITER_FORMAT_VERSION}, "
                f"the format this datom writes; {_REMEDY}"
            )
    schema = config.get("schema_version", 1)
    if isinstance(schema, bool) or not isinstance(schema, int) or schema > 1:
        raise NewerFormatError(f"{PROJECT_YAML}: schema_version {schema!r} is newer; {_REMEDY}")


def write_door(repo: MetadataRepo, name: str) -> None:
    """Refuse a set write this build cannot account for (FORMAT2.md §6), before anything
    is hashed: the other kind under ``name``, a newer manifest, unknown fields."""
    current = _parsed(repo.read(git_metadata(name)), git_metadata(name))
    check_metadata(current, name=name, expected_kind="set", key=git_metadata(name))
    manifest = _parsed(repo.read(MANIFEST), MANIFEST)
    if manifest is not None:
        check_manifest(manifest)


def _parsed(raw: bytes | None, key: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IntegrityError(
            f"{key} in the clone is not valid JSON ({e}); restore it from git "
            "(validate(fix=True)) before writing",
            key=key,
        ) from e


def check_manifest(doc: Any, *, key: str = MANIFEST) -> None:
    """Refuse a manifest this build cannot write into (newer format, unknown fields)."""
    if not isinstance(doc, Mapping):
        raise NewerFormatError(f"{key} is not a JSON object; {_REMEDY}")
    schema = doc.get("schema_version", 1)
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1 or schema > 2:
        raise NewerFormatError(f"{key}: schema_version {schema!r} is not 1 or 2; {_REMEDY}")
    unknown = sorted(set(doc) - _MANIFEST_KEYS)
    if unknown:
        raise NewerFormatError(f"{key} holds field(s) {unknown} this datom cannot place; {_REMEDY}")
    entries = doc.get("artifacts", doc.get("tables"))
    if not isinstance(entries, Mapping):
        raise NewerFormatError(f"{key} has no 'artifacts' this datom can read; {_REMEDY}")
    for name, entry in entries.items():
        extra = sorted(set(entry) - _ENTRY_KEYS) if isinstance(entry, Mapping) else ["<entry>"]
        if extra:
            raise NewerFormatError(
                f"{key}: the entry of {name!r} holds field(s) {extra} this datom cannot place; "
                f"{_REMEDY}"
            )


def check_metadata(doc: Any, *, name: str, expected_kind: str, key: str) -> None:
    """Refuse writing over the other kind of artifact, or over unknown metadata fields."""
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise NewerFormatError(f"{key} is not a JSON object; {_REMEDY}")
    unknown = sorted(set(doc) - KNOWN_METADATA_KEYS)
    if unknown:
        raise NewerFormatError(f"{key} holds field(s) {unknown} this datom cannot place; {_REMEDY}")
    schema = doc.get("schema_version", 1)
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > 2:
        raise NewerFormatError(f"{key}: schema_version {schema} is newer; {_REMEDY}")
    found = doc.get("kind", "table")
    if found != expected_kind:
        verb = "write_set()" if found == "set" else "write()"
        raise ArtifactKindError(
            f"{name!r} already exists in this project as a {found}: one name is one artifact. "
            f"Write the existing {found} with {verb}, or pick another name."
        )


def upgrade_manifest(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest in version-2 shape: a version-1 one converted in memory as R converts it."""
    if "artifacts" in doc:
        return {k: v for k, v in doc.items()}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "tables":
            out["artifacts"] = {
                n: {"kind": "table", **{k: v for k, v in e.items() if k != "kind"}}
                for n, e in value.items()
            }
        else:
            out[key] = value
    out["schema_version"] = 2
    return out


def manifest_with_set(
    raw: bytes | None, project_name: str, name: str, entry: Mapping[str, Any], updated_at: str
) -> tuple[bytes, bool]:
    """The clone's manifest with set ``name``'s entry replaced (other entries as recorded),
    and whether it was converted from format 1."""
    doc = _parsed(raw, MANIFEST)
    converted = isinstance(doc, Mapping) and "artifacts" not in doc
    if doc is None:
        manifest: dict[str, Any] = {"schema_version": 2, "project_name": project_name}
        manifest["artifacts"] = {}
    else:
        manifest = upgrade_manifest(doc)
    artifacts = dict(manifest.get("artifacts") or {})
    previous = artifacts.get(name) or {}
    merged = dict(entry)
    # A field this build cannot place survives on the entry it was found on.
    merged.update({k: v for k, v in previous.items() if k not in _ENTRY_KEYS})
    artifacts[name] = merged  # an existing entry keeps its place; a new one is appended, as R does
    manifest["artifacts"] = artifacts
    tables = [e for e in artifacts.values() if isinstance(e, Mapping) and e.get("kind") == "table"]
    manifest["summary"] = {
        "total_tables": len(tables),
        "total_size_bytes": sum(int(e.get("size_bytes") or 0) for e in tables),
        "total_versions": sum(int(e.get("version_count") or 0) for e in tables),
        "total_sets": sum(
            1 for e in artifacts.values() if isinstance(e, Mapping) and e.get("kind") == "set"
        ),
    }
    manifest["updated_at"] = updated_at
    return dump_document(manifest), converted


def set_version_of(metadata: Mapping[str, Any]) -> str:
    """The version id of an artifact's metadata document (format-2 allowlist)."""
    return set_version(metadata)
