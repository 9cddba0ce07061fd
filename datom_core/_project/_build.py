"""Step 4 of a write as a pure function of the tip it is committed on.

A :class:`TableUpdate` holds what the expensive steps produced (the hashed, uploaded
version's ``metadata.json`` bytes and its history entry); :meth:`TableUpdate.build`
regenerates the table's history and the manifest from any tip, cheaply and without side
effects, so that a push retried on a newer remote tip never re-hashes or re-uploads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from datom_core._errors import DatomError
from datom_core._project import _layout as L
from datom_core._project._config import r_shape_of
from datom_core._project._documents import assemble_manifest, dump, manifest_entry, utc_now
from datom_core._project._model import TableMetadata
from datom_core._project._parse import (
    convert_manifest_v1,
    load_json,
    parse_history,
    parse_project_config,
)

__all__ = ["TableUpdate", "TreeReader", "manifest_is_v1", "updated_manifest"]

MANIFEST_MOVED = (
    "manifest format moved from v1 to v2; R datom 0.1.x collaborators will list this "
    "project as empty until they upgrade"
)


class TreeReader(Protocol):
    """A read-only view of a git tip: a file's bytes, or None."""

    def read(self, path: str) -> bytes | None: ...


def manifest_is_v1(raw: bytes | None) -> bool:
    """Whether the manifest bytes are a format-1 manifest (a write converts it)."""
    if raw is None:
        return False
    try:
        doc = load_json(raw, key=L.MANIFEST)
    except DatomError:
        return False
    return isinstance(doc, Mapping) and "schema_version" not in doc and "tables" in doc


def updated_manifest(
    raw: bytes | None,
    project_name: str,
    entries: Mapping[str, Mapping[str, Any]],
    *,
    all_tables: bool = False,
) -> bytes:
    """The tip's manifest, converted to format 2, with ``entries`` replacing theirs.

    Other artifacts' entries are kept as recorded (with ``all_tables``, ``entries`` are
    every table and only sets are kept); a manifest that does not parse is rebuilt
    around ``entries``.
    """
    base: dict[str, Any] = {}
    if raw is not None:
        try:
            doc = load_json(raw, key=L.MANIFEST)
            base = convert_manifest_v1(doc) if isinstance(doc, Mapping) else {}
        except DatomError:
            base = {}
    artifacts = base.get("artifacts")
    merged = dict(artifacts) if isinstance(artifacts, Mapping) else {}
    if all_tables:
        merged = {
            n: e for n, e in merged.items() if isinstance(e, Mapping) and e.get("kind") == "set"
        }
    merged.update(entries)
    return dump(assemble_manifest(project_name, merged, base=base))


@dataclass(frozen=True)
class TableUpdate:
    """A new version of one table, ready to be recorded on any tip."""

    project_name: str
    table: str
    metadata_bytes: bytes
    metadata: TableMetadata
    entry: Mapping[str, Any] | None  # None: the version is in the history already (a revert)
    written_at: str = field(default_factory=utc_now)
    files: dict[str, bytes] = field(default_factory=dict, compare=False)

    def build(self, tree: TreeReader) -> dict[str, bytes]:
        """The files to commit on ``tree``: metadata, history, manifest (and project.yaml
        in R's shape if the tip still has the previous release's)."""
        history_path = L.git_history(self.table)
        raw = tree.read(history_path)
        entries = [dict(h.raw) for h in parse_history(raw, key=history_path)] if raw else []
        if self.entry is not None and all(
            e.get("version") != self.metadata.version for e in entries
        ):
            entries.insert(0, dict(self.entry))  # the dedup guard: a version appears once
        history_bytes = dump(entries)
        parsed = parse_history(history_bytes, key=history_path)
        entry = manifest_entry(self.metadata, parsed, last_updated=self.written_at)
        files = {
            L.git_metadata(self.table): self.metadata_bytes,
            history_path: history_bytes,
            L.MANIFEST: updated_manifest(
                tree.read(L.MANIFEST), self.project_name, {self.table: entry}
            ),
        }
        config = tree.read(L.PROJECT_YAML)
        if config is not None:
            converted = r_shape_of(parse_project_config(config, key=L.PROJECT_YAML))
            if converted is not None:
                files[L.PROJECT_YAML] = converted
        return files
