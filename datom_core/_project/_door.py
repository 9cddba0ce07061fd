"""The write door (FORMAT2.md §6): refuse, before anything changes, a repo this build
cannot account for. Reads limp, writes stop.

Every writing route (write, sync, mirroring, ``validate(fix=True)``, set writes) calls
:func:`check_write_door` on the clone before hashing, and again on each tip it commits on
(anything with ``read(path)``: the clone, or a commit's tree).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from datom_core._errors import DatomError, FormatError
from datom_core._identity._canonical import KNOWN_KEYS
from datom_core._project import _layout as L
from datom_core._project._parse import convert_manifest_v1, load_json
from datom_core._project._tip import TreeReader, load_manifest, load_project_config
from datom_core._version import WRITER_FORMAT_VERSION

__all__ = [
    "ENTRY_KEYS",
    "MANIFEST_KEYS",
    "accept_update",
    "check_project_config",
    "check_write_door",
    "version_tuple",
]

MANIFEST_KEYS = frozenset(
    {"artifacts", "project_name", "schema_version", "summary", "tables", "updated_at"}
)
ENTRY_KEYS = frozenset(
    {
        "current_data_sha",
        "current_version",
        "kind",
        "last_updated",
        "member_count",
        "original_file_sha",
        "original_format",
        "size_bytes",
        "version_count",
    }
)
_VERSION = re.compile(r"\d+(\.\d+)*")
_UPGRADE = "upgrade datom (pip install -U datom) to write into this project"


def version_tuple(text: str) -> tuple[int, ...] | None:
    """``"0.2.0"`` -> ``(0, 2, 0)``; None when ``text`` is not a version string."""
    return tuple(int(p) for p in text.split(".")) if _VERSION.fullmatch(text) else None


def _refuse(file: str, field: str, why: str) -> FormatError:
    return FormatError(f"{file}: {why}; nothing was changed. {_UPGRADE}", field=field, file=file)


def check_project_config(raw: bytes | None) -> None:
    """Rule 1 (``min_writer_version``) and project.yaml's ``schema_version``."""
    if raw is None:
        return
    config = load_project_config(raw)
    if config.schema_version is not None and config.schema_version > 1:
        raise _refuse(
            L.PROJECT_YAML,
            "schema_version",
            f"schema_version {config.schema_version} is newer than this datom reads (1)",
        )
    minimum = config.min_writer_version
    if minimum is None:
        return
    wanted, have = version_tuple(minimum), version_tuple(WRITER_FORMAT_VERSION)
    if wanted is None:
        raise _refuse(
            L.PROJECT_YAML, "min_writer_version", f"min_writer_version {minimum!r} is not a version"
        )
    if have is not None and wanted > have:
        raise _refuse(
            L.PROJECT_YAML,
            "min_writer_version",
            f"min_writer_version {minimum} is above the formats this datom writes "
            f"({WRITER_FORMAT_VERSION})",
        )


# Manifest documents found acceptable (newest last), with their artifacts: a parsed
# manifest is shared and never changed (see ``_tip``), so the same object needs no second
# look, and one a write printed from an accepted one is accepted by looking at what it
# changed (:func:`accept_update`).
_accepted: list[tuple[Any, Mapping[str, Any]]] = []
_ACCEPTED_KEPT = 16


def _accept(doc: Any, artifacts: Mapping[str, Any]) -> None:
    _accepted[:] = [a for a in _accepted if a[0] is not doc][-(_ACCEPTED_KEPT - 1) :]
    _accepted.append((doc, artifacts))


def _check_manifest(doc: Any) -> Mapping[str, Any]:
    for seen, artifacts in list(_accepted):
        if seen is doc:
            return artifacts
    artifacts = _check_manifest_now(doc)
    _accept(doc, artifacts)
    return artifacts


def accept_update(old: Any, new: Any, changed: Iterable[str]) -> None:
    """``new`` is the manifest ``old`` with the ``changed`` entries replaced (and its
    summary and top-level fields rewritten): accepted without a look at the others if
    ``old`` was, and if the top level and the changed entries pass the door."""
    if not any(seen is old for seen, _ in list(_accepted)):
        return
    try:
        _check_top(new)
        artifacts = new.get("artifacts")
        for name in changed:
            _check_entry(name, artifacts[name])
    except (FormatError, KeyError, TypeError):
        return  # the full look, when the door next meets it, says what is wrong
    _accept(new, artifacts)


def _check_manifest_now(doc: Any) -> Mapping[str, Any]:
    _check_top(doc)
    artifacts = convert_manifest_v1(doc).get("artifacts")
    if not isinstance(artifacts, Mapping):
        raise _refuse(
            L.MANIFEST, "artifacts", "the manifest has no 'artifacts' (or 'tables') object"
        )
    for name, entry in artifacts.items():
        _check_entry(name, entry)
    return artifacts


def _check_top(doc: Any) -> None:
    file = L.MANIFEST
    if not isinstance(doc, Mapping):
        raise _refuse(file, "(document)", "the manifest is not a JSON object")
    schema = doc.get("schema_version")
    if schema is not None and (
        isinstance(schema, bool) or not isinstance(schema, int) or schema < 1 or schema > 2
    ):
        raise _refuse(file, "schema_version", f"schema_version {schema!r} is not 1 or 2")
    _unknown(file, "", doc, MANIFEST_KEYS)


def _check_entry(name: str, entry: Any) -> None:
    if not isinstance(entry, Mapping):
        raise _refuse(L.MANIFEST, f"artifacts.{name}", "a manifest entry is not an object")
    _unknown(L.MANIFEST, f"artifacts.{name}.", entry, ENTRY_KEYS)


def _unknown(file: str, where: str, doc: Mapping[str, Any], vocabulary: frozenset[str]) -> None:
    if vocabulary.issuperset(doc):  # the common case, once per manifest entry: no sorting
        return
    extra = sorted(k for k in doc if k not in vocabulary)
    if extra:
        raise _refuse(
            file,
            where + extra[0],
            f"top-level field(s) {', '.join(map(repr, extra))} are not part of the format "
            "this datom writes (a newer datom wrote them)",
        )


def _check_metadata(repo: TreeReader, name: str, kind: str) -> None:
    file = L.git_metadata(name)
    raw = repo.read(file)
    if raw is None:
        return
    try:
        doc = load_json(raw, key=file)
    except DatomError:
        return  # damaged, not newer: the write reports it and validate repairs it
    if not isinstance(doc, Mapping):
        return
    _unknown(file, "", doc, KNOWN_KEYS)
    schema = doc.get("schema_version")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > 2:
        raise _refuse(file, "schema_version", f"schema_version {schema} is newer than 2")
    found = doc.get("kind", "table")
    if found != kind:
        raise _kind_conflict(name, found, kind, file)


def _kind_conflict(name: str, found: Any, kind: str, file: str) -> FormatError:
    return FormatError(
        f"{file}: {name!r} already holds a {found}, not a {kind}; nothing was changed. "
        f"Choose another name for the {kind}",
        field="kind",
        file=file,
    )


def check_write_door(
    repo: TreeReader,
    names: Iterable[str] | None = (),
    *,
    kind: str = "table",
    manifest: bool = True,
) -> None:
    """Refuse (:class:`FormatError`) a write into what this build cannot account for.

    ``names``: the artifacts about to be written (their ``metadata.json`` is checked);
    None for every artifact the manifest lists (mirroring everything, validate-fix).
    ``manifest=False`` leaves the manifest out: a write's early look at its clone, before
    hashing, where reading a project's whole manifest would cost more than the check (the
    write checks the manifest of the tip it builds on before anything changes).
    """
    check_project_config(repo.read(L.PROJECT_YAML))
    raw = repo.read(L.MANIFEST) if manifest or names is None else None
    artifacts: Mapping[str, Any] = {}
    if raw is not None:
        try:
            doc = load_manifest(raw)
        except DatomError:
            doc = None  # corrupt, not newer: rebuilt from the table documents
        if doc is not None:
            artifacts = _check_manifest(doc)
    targets = list(artifacts) if names is None else list(names)
    for name in targets:
        entry = artifacts.get(name)
        if names is not None and isinstance(entry, Mapping):
            found = entry.get("kind", "table")
            if found != kind:
                raise _kind_conflict(name, found, kind, L.MANIFEST)
        entry_kind = entry.get("kind", "table") if isinstance(entry, Mapping) else kind
        _check_metadata(repo, name, kind if names is not None else str(entry_kind))
