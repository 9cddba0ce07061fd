"""Where sets meet the project layer's documents: the keys of a set, its entry in the
manifest, and the write door (FORMAT2.md §6), all delegated to ``_project``.

The door runs before anything is hashed or written: a project that a newer datom wrote,
or documents holding fields this build cannot place, stop the write with the field, the
file and the remedy; a name that holds a table stops it with :class:`ArtifactKindError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datom_core._errors import ArtifactKindError
from datom_core._git import MetadataRepo
from datom_core._project import _layout as L
from datom_core._project._build import manifest_is_v1, updated_manifest
from datom_core._project._documents import dump, load
from datom_core._project._door import check_project_config, check_write_door
from datom_core._project._tip import load_project_config
from datom_core._sets._documents import set_version

__all__ = [
    "parsed_document",
    "MANIFEST",
    "PROJECT_YAML",
    "STORE_MANIFEST",
    "check_project_config",
    "dump_document",
    "git_history",
    "git_metadata",
    "git_payload",
    "load_project_config",
    "manifest_with_set",
    "set_version_of",
    "store_history",
    "store_metadata",
    "store_payload",
    "store_snapshot",
    "write_door",
]

PROJECT_YAML = L.PROJECT_YAML
MANIFEST = L.MANIFEST
STORE_MANIFEST = L.STORE_MANIFEST
git_metadata = L.git_metadata
git_history = L.git_history
store_metadata = L.store_metadata
store_history = L.store_history
store_snapshot = L.store_snapshot
dump_document = dump


def git_payload(name: str) -> str:
    return f"{name}/set.json"


def store_payload(name: str, data_sha: str) -> str:
    return f"{name}/{data_sha}.json"


def set_version_of(metadata: Mapping[str, Any]) -> str:
    """The version id of an artifact's metadata document (format-2 allowlist)."""
    return set_version(metadata)


def parsed_document(raw: bytes | None, key: str) -> Any:
    """A clone document as JSON (None when absent); :class:`IntegrityError` when it is not JSON."""
    return None if raw is None else load(raw, key=key)


def write_door(repo: MetadataRepo, name: str) -> None:
    """Refuse a set write this build cannot account for, before anything is hashed."""
    current = parsed_document(repo.read(git_metadata(name)), git_metadata(name))
    found = current.get("kind", "table") if isinstance(current, Mapping) else "set"
    if found != "set":
        raise ArtifactKindError(
            f"{name!r} already exists in this project as a {found}: one name is one artifact. "
            f"Write the existing {found} with write(), or pick another name for the set."
        )
    check_write_door(repo, [name], kind="set")


def manifest_with_set(
    raw: bytes | None, project_name: str, name: str, entry: Mapping[str, Any], updated_at: str
) -> tuple[bytes, bool]:
    """The clone's manifest with set ``name``'s entry replaced (other entries as recorded),
    and whether it was converted from format 1."""
    return updated_manifest(raw, project_name, {name: entry}), manifest_is_v1(raw)
