"""The one parser of project documents: JSON (or YAML) bytes to typed records.

It knows R's quirks: jsonlite writes a one-element array as a bare scalar (or a bare
object, for an array of records), and an ``author`` as an object where older writers put
a string. Every document is validated on parse: valid JSON of the wrong shape raises
:class:`IntegrityError` naming the document key and what was expected, never a raw
``TypeError``/``KeyError`` further down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from datom_core._errors import IntegrityError, ProjectConfigError
from datom_core._identity._canonical import metadata_sha
from datom_core._project._model import (
    ArtifactKind,
    ColumnDigest,
    HistoryEntry,
    Manifest,
    ManifestEntry,
    ParentRef,
    ProjectConfig,
    SourceRef,
    TableMetadata,
)
from datom_core._project._recent import Recent

__all__ = [
    "convert_manifest_v1",
    "load_json",
    "parse_history",
    "parse_manifest",
    "parse_metadata",
    "parse_project_config",
    "records",
]

# PyYAML's safe loader on libyaml where PyYAML was built with it (the wheels are): the same
# documents in a tenth of the time (a process's first write parses the project file).
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_REPAIR = "Repair it from git: validate(fix=True) / datom validate --fix."
_HISTORY_KNOWN = frozenset(
    {
        "version",
        "data_sha",
        "parquet_sha",
        "timestamp",
        "author",
        "commit_message",
        "original_file_sha",
        "commit_sha",
    }
)


def load_json(raw: bytes, *, key: str) -> Any:
    """Parse JSON bytes; a truncated or corrupt document fails loudly naming ``key``."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise IntegrityError(
            f"{key} is not valid JSON ({e}); the document is truncated or corrupt. {_REPAIR}",
            key=key,
        ) from e


def _doc(source: bytes | Any, key: str) -> Any:
    return load_json(bytes(source), key=key) if isinstance(source, bytes | bytearray) else source


def _wrong(key: str, what: str, value: Any) -> IntegrityError:
    shown = json.dumps(value, default=str)[:80] if value is not None else "nothing"
    return IntegrityError(
        f"{key}: expected {what}, found {shown}. The document is damaged or was edited. {_REPAIR}",
        key=key,
        expected=what,
    )


def _object(value: Any, key: str, what: str = "a JSON object") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _wrong(key, what, value)
    return value


def _text(d: Mapping[str, Any], name: str, key: str, *, required: bool = False) -> str | None:
    value = d.get(name)
    if value is None and not required:
        return None
    value = _scalar(value)
    if not isinstance(value, str):
        raise _wrong(key, f"{name!r} as text", value)
    return value


def _int(d: Mapping[str, Any], name: str, key: str, *, required: bool = False) -> int | None:
    value = _scalar(d.get(name))
    if value is None and not required:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(key, f"{name!r} as a whole number", value)
    return value


def _scalar(value: Any) -> Any:
    # jsonlite: a length-one vector may arrive as a one-element array.
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def records(value: Any, key: str, name: str) -> list[Mapping[str, Any]]:
    """An array of objects, also when R wrote a single one as a bare object."""
    if value is None:
        return []
    items = [value] if isinstance(value, Mapping) else value
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise _wrong(key, f"{name!r} as an array of objects", value)
    return items


def _strings(value: Any, key: str, name: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _wrong(key, f"{name!r} as an array of text", value)
    return tuple(items)


def _kind(d: Mapping[str, Any], key: str) -> ArtifactKind:
    kind = _text(d, "kind", key) or "table"
    if kind not in ("table", "set"):
        raise _wrong(key, '"kind" "table" or "set"', kind)
    return kind  # type: ignore[return-value]


_metadata: Recent[TableMetadata] = Recent(256)


def parse_metadata(source: bytes | Any, *, key: str) -> TableMetadata:
    """A version's ``metadata.json`` (table or set) as a :class:`TableMetadata`.

    Parsed bytes are remembered (the record is immutable and matched by the exact bytes,
    so a kept record cannot be stale): a write, a read and a Dagster input each meet the
    same few documents several times, and each parse recomputes the version id.
    """
    if not isinstance(source, bytes):
        return _parse_metadata(source, key)
    return _metadata.parsed(source, lambda raw: _parse_metadata(raw, key))


def _parse_metadata(source: bytes | Any, key: str) -> TableMetadata:
    d = _object(_doc(source, key), key, "a metadata object")
    kind = _kind(d, key)
    table = kind == "table"
    try:
        parents = tuple(
            ParentRef(
                source=_text(p, "source", key) or "",
                table=_text(p, "table", key, required=True) or "",
                version=_text(p, "version", key, required=True) or "",
                data_sha=_text(p, "data_sha", key, required=True) or "",
            )
            for p in records(d.get("parents"), key, "parents")
        )
        lineage = None
        if "source_lineage" in d:
            lineage = tuple(
                SourceRef(
                    _text(s, "project", key, required=True) or "",
                    _text(s, "table", key, required=True) or "",
                    _text(s, "version_sha", key, required=True) or "",
                )
                for s in records(d["source_lineage"], key, "source_lineage")
            )
        hashes = None
        if d.get("column_hashes") is not None:
            hashes = tuple(
                ColumnDigest(str(c.get("name")), str(c.get("sha")))
                for c in records(d["column_hashes"], key, "column_hashes")
            )
        custom = d.get("custom")
        if custom is not None and not isinstance(custom, Mapping):
            raise _wrong(key, '"custom" as an object', custom)
        return TableMetadata(
            raw=d,
            version=metadata_sha(d),
            data_sha=_text(d, "data_sha", key, required=True) or "",
            nrow=_int(d, "nrow", key, required=table) or 0,
            ncol=_int(d, "ncol", key, required=table) or 0,
            colnames=_strings(d.get("colnames", []), key, "colnames"),
            kind=kind,
            schema_version=_int(d, "schema_version", key),
            hash_algo=_text(d, "hash_algo", key),
            parquet_sha=_text(d, "parquet_sha", key) or None,
            table_type=_text(d, "table_type", key),
            created_at=_text(d, "created_at", key),
            datom_version=_text(d, "datom_version", key),
            project=_text(d, "project", key),
            original_file_sha=_text(d, "original_file_sha", key),
            original_format=_text(d, "original_format", key),
            parents=parents,
            source_lineage=lineage,
            size_bytes=_int(d, "size_bytes", key),
            custom=custom,
            column_hashes=hashes,
            document_sha=_text(d, "document_sha", key),
        )
    except TypeError as e:  # a value canonical JSON cannot encode
        raise _wrong(key, "JSON values only", str(e)) from e


def _author(value: Any, key: str) -> tuple[str, str | None]:
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if isinstance(value, Mapping):
        name, email = value.get("name"), value.get("email")
        if isinstance(name, str | None) and isinstance(email, str | None):
            return name or "", email
    raise _wrong(key, '"author" as text or {name, email}', value)


def parse_history(source: bytes | Any, *, key: str) -> tuple[HistoryEntry, ...]:
    """``version_history.json`` (newest first) as :class:`HistoryEntry` records."""
    doc = _doc(source, key)
    if not isinstance(doc, list | Mapping):
        raise _wrong(key, "an array of history entries", doc)
    out = []
    for entry in records(doc, key, "history entries"):
        name, email = _author(entry.get("author"), key)
        out.append(
            HistoryEntry(
                raw=entry,
                version=_text(entry, "version", key, required=True) or "",
                data_sha=_text(entry, "data_sha", key, required=True) or "",
                parquet_sha=_text(entry, "parquet_sha", key) or None,
                timestamp=_text(entry, "timestamp", key) or "",
                author_name=name,
                author_email=email,
                commit_message=_text(entry, "commit_message", key) or "",
                original_file_sha=_text(entry, "original_file_sha", key),
                commit_sha=_text(entry, "commit_sha", key),
                extra={k: v for k, v in entry.items() if k not in _HISTORY_KNOWN},
            )
        )
    return tuple(out)


def convert_manifest_v1(doc: Mapping[str, Any]) -> dict[str, Any]:
    """FORMAT2.md §4: ``tables`` renamed ``artifacts`` in place, ``kind`` first in each
    entry, ``schema_version: 2`` appended. A format-2 document is returned as it is."""
    if "schema_version" in doc or "tables" not in doc:
        return dict(doc)
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if k == "tables" and isinstance(v, Mapping):
            out["artifacts"] = {
                name: {"kind": "table", **{ek: ev for ek, ev in e.items() if ek != "kind"}}
                if isinstance(e, Mapping)
                else e
                for name, e in v.items()
            }
        else:
            out[k] = v
    out["schema_version"] = 2
    return out


def parse_manifest(source: bytes | Any, *, key: str) -> Manifest:
    """The manifest (either format) as a format-2 :class:`Manifest`.

    A manifest from a newer format, or without ``artifacts`` after conversion, is
    *unreachable*: :class:`IntegrityError` with ``expected="reachable manifest"``, which
    readers answer by rebuilding the index from the store listing.
    """
    doc = _object(_doc(source, key), key, "a manifest object")
    recorded = 1 if "schema_version" not in doc and "tables" in doc else None
    converted = convert_manifest_v1(doc)
    schema = _int(converted, "schema_version", key)
    if recorded is None:
        recorded = schema if schema is not None else 2
    artifacts = converted.get("artifacts")
    if (schema is not None and schema > 2) or not isinstance(artifacts, Mapping):
        raise IntegrityError(
            f"{key}: the manifest is unreachable (schema_version {schema!r}, "
            f"{'no' if not isinstance(artifacts, Mapping) else 'an'} 'artifacts' object); a "
            "newer datom may have written it: upgrade datom",
            key=key,
            expected="reachable manifest",
        )
    entries = {}
    for name, e in artifacts.items():
        e = _object(e, key, f"artifacts[{name!r}] as an object")
        entries[name] = ManifestEntry(
            raw=e,
            name=name,
            kind=_kind(e, key),
            current_version=_text(e, "current_version", key, required=True) or "",
            current_data_sha=_text(e, "current_data_sha", key),
            last_updated=_text(e, "last_updated", key),
            size_bytes=_int(e, "size_bytes", key),
            version_count=_int(e, "version_count", key) or 0,
            original_file_sha=_text(e, "original_file_sha", key),
            original_format=_text(e, "original_format", key),
            member_count=_int(e, "member_count", key),
        )
    return Manifest(
        raw=converted,
        project_name=_text(converted, "project_name", key),
        artifacts=entries,
        schema_version=schema or 2,
        recorded_format=recorded,
        updated_at=_text(converted, "updated_at", key),
    )


def parse_project_config(raw: bytes, *, key: str) -> ProjectConfig:
    """``.datom/project.yaml``, in R's shape or the previous release's."""
    try:
        doc = yaml.load(raw, Loader=_YAML_LOADER)
    except yaml.YAMLError as e:
        raise ProjectConfigError(f"{key} is not valid YAML ({e}); fix or restore it") from e
    if not isinstance(doc, Mapping) or not isinstance(doc.get("project_name"), str):
        raise ProjectConfigError(f"{key} must be a mapping with a project_name; fix or restore it")
    storage = doc.get("storage")
    r_shape = isinstance(storage, Mapping) and isinstance(storage.get("data"), Mapping)
    described = _storage_from_r(storage["data"]) if r_shape else storage  # type: ignore[index]
    repos, repo = doc.get("repos"), doc.get("repo")
    remote = None
    if isinstance(repos, Mapping) and isinstance(repos.get("data"), Mapping):
        remote = repos["data"].get("remote_url")
    elif isinstance(repo, Mapping):
        remote = repo.get("remote")
    schema = doc.get("schema_version")
    if schema is not None and (isinstance(schema, bool) or not isinstance(schema, int)):
        raise ProjectConfigError(f"{key}: schema_version must be a whole number, not {schema!r}")
    minimum = doc.get("min_writer_version")
    return ProjectConfig(
        raw=doc,
        project_name=doc["project_name"],
        storage=described if isinstance(described, Mapping) else None,
        remote_url=str(remote) if remote else None,
        schema_version=schema,
        mode=doc.get("mode"),
        set_name=doc.get("set"),
        min_writer_version=None if minimum is None else str(minimum),
        r_shape=r_shape,
    )


def _storage_from_r(data: Mapping[str, Any]) -> dict[str, Any]:
    """R's ``storage.data`` as a store description (an S3 ``root`` is the bucket)."""
    out = dict(data)
    if out.get("type") == "s3" and "bucket" not in out:
        out["bucket"] = out.pop("root", None)
    return out
