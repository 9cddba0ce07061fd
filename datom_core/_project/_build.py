"""Step 4 of a write as a pure function of the tip it is committed on.

A :class:`TableUpdate` holds what the expensive steps produced (the hashed, uploaded
version's ``metadata.json`` bytes and its history entry); :meth:`TableUpdate.build`
regenerates the table's history and the manifest from any tip, cheaply and without side
effects on git or the store, so that a push retried on a newer remote tip never re-hashes
or re-uploads. Documents are parsed once per distinct text, and the history and the manifest
are grown by splicing the changed text into the tip's (``_history_text``, ``_manifest_text``:
byte for byte the full re-print, which texts that are not the one text form still get).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datom_core._errors import DatomError, IntegrityError
from datom_core._project import _layout as L
from datom_core._project._config import r_shape_of
from datom_core._project._documents import assemble_manifest, dump, manifest_entry, utc_now
from datom_core._project._door import check_write_door
from datom_core._project._history_text import HistoryText, history_text, prepend, reprinted
from datom_core._project._manifest_text import learn_manifest, spliced_manifest
from datom_core._project._model import TableMetadata
from datom_core._project._parse import convert_manifest_v1, parse_metadata
from datom_core._project._tip import TreeReader, load_manifest, load_project_config

__all__ = ["TableUpdate", "TreeReader", "manifest_is_v1", "updated_manifest"]

MANIFEST_MOVED = (
    "manifest format moved from v1 to v2; R datom 0.1.x collaborators will list this "
    "project as empty until they upgrade"
)


def _manifest_doc(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return load_manifest(raw)
    except DatomError:
        return None  # corrupt: rebuilt around the entries being written


def _is_v1(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "schema_version" not in doc and "tables" in doc


def manifest_is_v1(raw: bytes | None) -> bool:
    """Whether the manifest bytes are a format-1 manifest (a write converts it)."""
    return _is_v1(_manifest_doc(raw))


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
    if not all_tables:
        spliced = spliced_manifest(raw, project_name, entries)
        if spliced is not None:
            return spliced
    doc = _manifest_doc(raw)
    base = convert_manifest_v1(doc) if isinstance(doc, Mapping) else {}
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
    """A new version of one table, ready to be recorded on any tip.

    After a :meth:`build`, :attr:`files` holds the bytes it returned (what the store
    mirrors once they are pushed), :attr:`converted_v1` whether that tip's manifest was
    still in format 1 and :attr:`replaced` the metadata bytes of the version it made
    non-current (a concurrent writer's, when a rejected push rebuilt on a newer tip).
    """

    project_name: str
    table: str
    metadata_bytes: bytes
    metadata: TableMetadata
    entry: Mapping[str, Any] | None  # None: the version is in the history already (a revert)
    written_at: str = field(default_factory=utc_now)
    files: dict[str, bytes] = field(default_factory=dict, compare=False)
    _flags: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    _seen: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @property
    def converted_v1(self) -> bool:
        return self._flags.get("v1", False)

    @property
    def replaced(self) -> bytes | None:
        return self._seen.get("metadata")

    def build(self, tree: TreeReader) -> dict[str, bytes]:
        """The files to commit on ``tree``: metadata, history, manifest (and project.yaml
        in R's shape if the tip still has the previous release's). Nothing when the tip
        already holds this version as the current one (the commit is then not needed).

        :class:`FormatError` when the tip is one this build cannot write into (the door).
        """
        learn_manifest(tree.read(L.MANIFEST))  # another writer's, grown from one kept here
        check_write_door(tree, [self.table])
        history_path, metadata_path = L.git_history(self.table), L.git_metadata(self.table)
        raw, raw_metadata = tree.read(history_path), tree.read(metadata_path)
        self._seen.clear()
        if raw_metadata is not None:
            self._seen["metadata"] = raw_metadata
        if raw is None and raw_metadata is not None:
            raise IntegrityError(  # a one-entry history would drop every earlier version
                f"table {self.table!r}: {history_path} is missing from the remote's tip while "
                f"{metadata_path} exists; nothing was written. Restore it (validate(fix=True) "
                "/ datom validate --fix), then write again",
                key=history_path,
                expected="a version history",
                actual="no file",
            )
        old = history_text(raw, key=history_path) if raw else None
        if self._is_current(raw_metadata, old):
            self.files.clear()
            return {}
        new = self._history(old)
        history_bytes, history = new.raw, new.entries
        raw_manifest = tree.read(L.MANIFEST)
        self._flags["v1"] = _is_v1(_manifest_doc(raw_manifest))
        entry = manifest_entry(self.metadata, history, last_updated=self.written_at)
        files = {
            metadata_path: self.metadata_bytes,
            history_path: history_bytes,
            L.MANIFEST: updated_manifest(raw_manifest, self.project_name, {self.table: entry}),
        }
        config = tree.read(L.PROJECT_YAML)
        if config is not None:
            converted = r_shape_of(load_project_config(config))
            if converted is not None:
                files[L.PROJECT_YAML] = converted
        self.files.clear()
        self.files.update(files)
        return files

    def _is_current(self, raw: bytes | None, history: HistoryText | None) -> bool:
        if raw is None or history is None or self.metadata.version not in history.versions:
            return False
        try:
            return parse_metadata(raw, key="tip").version == self.metadata.version
        except DatomError:
            return False  # damaged: this write replaces it

    def _history(self, old: HistoryText | None) -> HistoryText:
        """The tip's history with this version's entry first, unless it is there already
        (a version appears once)."""
        known = old is not None and self.metadata.version in old.versions
        if self.entry is not None and not known:
            return prepend(old, self.entry, key=L.git_history(self.table))
        return reprinted(old, key=L.git_history(self.table))
