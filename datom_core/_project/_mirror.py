"""Step 5 of a write, and its repair: making the store's mirror agree with git.

Git is the source of truth; the store holds a byte-identical copy of each table's
documents, an immutable snapshot per version, and the manifest. Writers in different
clones can finish their mirroring out of order, so after mirroring a writer looks at the
remote again and re-mirrors the newest state if it moved: the last writer to finish
always leaves the newest state behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, NotFoundError
from datom_core._identity._canonical import metadata_sha
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import assemble_manifest, dump, load, manifest_entry

__all__ = ["TableDocuments", "converge_mirror", "manifest_with", "mirror_table"]

_MAX_ROUNDS = 10


def manifest_with(
    ctx: ProjectContext,
    table: str,
    metadata: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
) -> bytes:
    """The git manifest with ``table``'s entry replaced (other entries as recorded)."""
    raw = ctx.require_repo().read(L.MANIFEST)
    entries: dict[str, Any] = {}
    if raw is not None:
        try:
            entries = dict(load(raw, key=L.MANIFEST).get("tables", {}))
        except DatomError:
            entries = {}
    entries[table] = manifest_entry(metadata, history)
    return dump(assemble_manifest(ctx.project_name, entries))


@dataclass(frozen=True)
class TableDocuments:
    """One table's documents as git holds them: the bytes the store must mirror."""

    table: str
    metadata: bytes
    history: bytes
    manifest: bytes

    @property
    def version(self) -> str:
        return metadata_sha(load(self.metadata, key=L.git_metadata(self.table)))


def mirror_table(ctx: ProjectContext, docs: TableDocuments) -> None:
    """Copy one table's documents to the store, then chase the remote until it is still."""
    _write_mirror(ctx, docs)
    head = ctx.require_repo().head()
    for _ in range(_MAX_ROUNDS):
        newest = ctx.require_repo().fetch_and_reset()
        if newest == head:
            return
        head = newest
        converge_mirror(ctx, docs.table)


def converge_mirror(ctx: ProjectContext, table: str) -> list[str]:
    """Rewrite whatever the store holds differently from git for ``table``; return the keys."""
    parts = [
        ctx.require_repo().read(p)
        for p in (L.git_metadata(table), L.git_history(table), L.MANIFEST)
    ]
    if any(part is None for part in parts):
        return []
    docs = TableDocuments(table, *parts)
    wanted = {
        L.store_history(table): docs.history,
        L.store_metadata(table): docs.metadata,
        L.STORE_MANIFEST: docs.manifest,
    }
    stale = [key for key, data in wanted.items() if _stored(ctx, key) != data]
    snapshot = L.store_snapshot(table, docs.version)
    if not ctx.store.exists(snapshot):
        stale.insert(0, snapshot)
    if stale:
        _write_mirror(ctx, docs)
    return stale


def _write_mirror(ctx: ProjectContext, docs: TableDocuments) -> None:
    # Order matters for readers: the snapshot exists before anything names the version.
    store, table = ctx.store, docs.table
    store.put_if_absent(L.store_snapshot(table, docs.version), docs.metadata)
    checkpoint("mirror:snapshot")
    store.write_bytes(L.store_history(table), docs.history)
    checkpoint("mirror:history")
    store.write_bytes(L.store_metadata(table), docs.metadata)
    checkpoint("mirror:metadata")
    store.write_bytes(L.STORE_MANIFEST, docs.manifest)


def _stored(ctx: ProjectContext, key: str) -> bytes | None:
    try:
        return ctx.store.read_bytes(key)
    except NotFoundError:
        return None
