"""Step 5 of a write, and its repair: making the store's mirror agree with git.

Git is the source of truth; the store holds a byte-identical copy of each table's
documents, an immutable snapshot per version, and the manifest. Writers in different
clones can finish their mirroring out of order, so after mirroring a writer looks at the
remote again and re-mirrors the newest state if it moved: the last writer to finish
always leaves the newest state behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from datom_core._errors import DatomError, NotFoundError
from datom_core._identity._canonical import metadata_sha
from datom_core._project import _layout as L
from datom_core._project._documents import assemble_manifest, dump, load, manifest_entry

if TYPE_CHECKING:
    from datom_core._project import Connection

__all__ = ["converge_mirror", "manifest_with", "mirror_table"]

_MAX_ROUNDS = 10


def manifest_with(
    conn: Connection, table: str, metadata: Mapping[str, Any], history: Sequence[Mapping[str, Any]]
) -> bytes:
    """The git manifest with ``table``'s entry replaced (other entries as recorded)."""
    raw = conn.repo.read(L.MANIFEST)
    entries: dict[str, Any] = {}
    if raw is not None:
        try:
            entries = dict(load(raw, key=L.MANIFEST).get("tables", {}))
        except DatomError:
            entries = {}
    entries[table] = manifest_entry(metadata, history)
    return dump(assemble_manifest(conn.project_name, entries))


def mirror_table(
    conn: Connection,
    table: str,
    version: str,
    metadata_bytes: bytes,
    history_bytes: bytes,
    manifest_bytes: bytes,
) -> None:
    """Copy one table's documents to the store, then chase the remote until it is still."""
    _write_mirror(conn, table, version, metadata_bytes, history_bytes, manifest_bytes)
    head = conn.repo.head()
    for _ in range(_MAX_ROUNDS):
        newest = conn.repo.fetch_and_reset()
        if newest == head:
            return
        head = newest
        converge_mirror(conn, table)


def converge_mirror(conn: Connection, table: str) -> list[str]:
    """Rewrite whatever the store holds differently from git for ``table``; return the keys."""
    metadata_bytes = conn.repo.read(L.git_metadata(table))
    history_bytes = conn.repo.read(L.git_history(table))
    manifest_bytes = conn.repo.read(L.MANIFEST)
    if metadata_bytes is None or history_bytes is None or manifest_bytes is None:
        return []
    version = metadata_sha(load(metadata_bytes, key=L.git_metadata(table)))
    wanted = {
        L.store_history(table): history_bytes,
        L.store_metadata(table): metadata_bytes,
        L.STORE_MANIFEST: manifest_bytes,
    }
    stale = [key for key, data in wanted.items() if _stored(conn, key) != data]
    snapshot = L.store_snapshot(table, version)
    if not conn.store.exists(snapshot):
        stale.insert(0, snapshot)
    if stale:
        _write_mirror(conn, table, version, metadata_bytes, history_bytes, manifest_bytes)
    return stale


def _write_mirror(
    conn: Connection,
    table: str,
    version: str,
    metadata_bytes: bytes,
    history_bytes: bytes,
    manifest_bytes: bytes,
) -> None:
    # Order matters for readers: the snapshot exists before anything names the version.
    from datom_core._project._write import checkpoint

    store = conn.store
    store.put_if_absent(L.store_snapshot(table, version), metadata_bytes)
    checkpoint("mirror:snapshot")
    store.write_bytes(L.store_history(table), history_bytes)
    checkpoint("mirror:history")
    store.write_bytes(L.store_metadata(table), metadata_bytes)
    checkpoint("mirror:metadata")
    store.write_bytes(L.STORE_MANIFEST, manifest_bytes)


def _stored(conn: Connection, key: str) -> bytes | None:
    try:
        return conn.store.read_bytes(key)
    except NotFoundError:
        return None
