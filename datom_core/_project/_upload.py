"""Step 3 of a write: the parquet of new data (reused when recorded before, verified when
an unrecorded object holds its name) and the version's snapshot, both put before the push.

The two PUTs are independent (the snapshot names nothing until a history lists it, and
the push waits for both), so on a store across a network (``parallel_puts``) they are in
flight at once: one round trip instead of two. ``DATOM_PLAIN=1`` or a local store puts
them one after the other.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import wait
from dataclasses import dataclass

import pyarrow as pa

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, IntegrityError, NotFoundError
from datom_core._identity._cv1 import TableHash, hash_arrow_table
from datom_core._plain import plain
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._history_text import HistoryText
from datom_core._project._model import TableMetadata
from datom_core._project._outcome import Put, undo_unpushed
from datom_core._project._parquet import SerializedParquet, read_verified, serialized
from datom_core._project._parse import parse_metadata
from datom_core._worker import ProcessWorker

__all__ = [
    "Stored",
    "adopt_snapshot",
    "known_snapshot",
    "recorded_parquet",
    "store_version",
]

# (parquet_sha, size_bytes) -> the version's metadata.json bytes
MetadataOf = Callable[[str | None, int | None], bytes]


@dataclass(frozen=True)
class Stored:
    """What step 3 leaves: the parquet the version pins and its snapshot's bytes, and
    what of them this write put (a failure before the push removes those)."""

    parquet_sha: str | None
    size_bytes: int | None
    uploaded: bool
    metadata: bytes
    snapshot_put: bool


def store_version(
    ctx: ProjectContext,
    table_name: str,
    table: pa.Table,
    th: TableHash,
    history: HistoryText | None,
    current: TableMetadata | None,
    known: str | None,
    metadata_of: MetadataOf,
) -> Stored:
    """Step 3: the parquet (``current``'s when it holds the same data) and the version's
    snapshot in the store; ``known``: the version, when the history lists it already (a
    revert, whose recorded snapshot is reused). A failure removes what this step put."""
    recorded = history.recorded_parquet(th.data_sha) if history is not None else None
    if current is not None and current.data_sha == th.data_sha:
        parquet = (current.parquet_sha, current.size_bytes, False)
    elif known or (recorded is not None and recorded.parquet_sha) or not store_in_parallel(ctx):
        parquet = store_parquet(ctx, table_name, table, th, history)
    else:
        with serialized(table, th.column_hashes, ctx.store, table_name) as sp:
            return _both(ctx, table_name, table, th, sp, metadata_of)
    return _with_snapshot(ctx, table_name, th, known, metadata_of, *parquet)


def _with_snapshot(
    ctx: ProjectContext,
    table_name: str,
    th: TableHash,
    known: str | None,
    metadata_of: MetadataOf,
    parquet_sha: str | None,
    size: int | None,
    uploaded: bool,
) -> Stored:
    """The snapshot, put once the parquet is in place."""
    put = Put(th.data_sha if uploaded else None, None)
    try:
        checkpoint("uploaded")
        raw = known_snapshot(ctx, table_name, known) if known else None
        raw = raw if raw is not None else metadata_of(parquet_sha, size)
        version = parse_metadata(raw, key=L.git_metadata(table_name)).version
        snapshot_put = ctx.store.put_content_named(L.store_snapshot(table_name, version), raw)
        put = Put(put.data_sha, version if snapshot_put else None)
        if not snapshot_put and not known:  # a failed or concurrent write's of this version
            raw = _adopted(ctx, table_name, raw)
    except BaseException as e:
        undo_unpushed(ctx, table_name, put, e)
        raise
    return Stored(parquet_sha, size, uploaded, raw, snapshot_put)


def _both(
    ctx: ProjectContext,
    table_name: str,
    table: pa.Table,
    th: TableHash,
    sp: SerializedParquet,
    metadata_of: MetadataOf,
) -> Stored:
    """New data: its parquet and the snapshot naming it, in flight at once. An object
    already holding the parquet's name (an interrupted or concurrent write's) is
    verified; when its bytes differ from ours (another pyarrow), the snapshot is written
    again to pin them (nothing names it yet)."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    raw = metadata_of(sp.parquet_sha, sp.size_bytes)
    version = parse_metadata(raw, key=L.git_metadata(table_name)).version
    snapshot = L.store_snapshot(table_name, version)
    parquet = _WORKER.executor().submit(store.put_if_absent, key, sp.source)
    put = Put(None, None)
    try:
        snapshot_put = store.put_content_named(snapshot, raw)
        put = Put(None, version if snapshot_put else None)
        uploaded = parquet.result()
        put = Put(th.data_sha if uploaded else None, put.version)
        checkpoint("uploaded")
        parquet_sha, size = sp.parquet_sha, sp.size_bytes
        if not uploaded:
            parquet_sha, size = _existing_parquet(ctx, table_name, table, th)
            if (parquet_sha, size) != (sp.parquet_sha, sp.size_bytes):
                raw = metadata_of(parquet_sha, size)
                if snapshot_put:
                    store.write_bytes(snapshot, raw)
        if not snapshot_put:  # a failed or concurrent write's of this version
            raw = _adopted(ctx, table_name, raw)
    except BaseException as e:
        wait([parquet])  # a PUT still in flight: what it leaves is undone with the rest
        if put.data_sha is None and parquet.exception() is None and parquet.result():
            put = Put(th.data_sha, put.version)
        undo_unpushed(ctx, table_name, put, e)
        raise
    return Stored(parquet_sha, size, uploaded, raw, snapshot_put)


def store_in_parallel(ctx: ProjectContext) -> bool:
    """Whether independent PUTs go out at once: a store across a network says so
    (``parallel_puts``), unless ``DATOM_PLAIN`` asks for the plain path."""
    return bool(getattr(ctx.store, "parallel_puts", False)) and not plain()


_WORKER = ProcessWorker("datom-upload")


def _adopted(ctx: ProjectContext, table_name: str, raw: bytes) -> bytes:
    metadata = parse_metadata(raw, key=L.git_metadata(table_name))
    adopted = adopt_snapshot(ctx, table_name, metadata, raw)
    return adopted if adopted is not None else raw


def store_parquet(  # one after the other: the snapshot follows (_with_snapshot)
    ctx: ProjectContext,
    table_name: str,
    table: pa.Table,
    th: TableHash,
    history: HistoryText | None,
) -> tuple[str | None, int | None, bool]:
    """Step 3: (parquet_sha, size_bytes, uploaded) for new data."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    recorded = history.recorded_parquet(th.data_sha) if history is not None else None
    if recorded is not None and recorded.parquet_sha:
        return recorded_parquet(ctx, table_name, table, th, recorded.parquet_sha)
    with serialized(table, th.column_hashes, ctx.store, table_name) as sp:
        if store.put_if_absent(key, sp.source):
            return sp.parquet_sha, sp.size_bytes, True
    return (*_existing_parquet(ctx, table_name, table, th), False)


def _existing_parquet(
    ctx: ProjectContext, table_name: str, table: pa.Table, th: TableHash
) -> tuple[str, int]:
    """(parquet_sha, size_bytes) of an object nobody recorded at the data's parquet key
    (an interrupted or concurrent write's): kept if it holds our data."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    existing = store.sha256(key)
    stored = read_verified(store, key, existing)
    actual = hash_arrow_table(stored).data_sha
    if actual != th.data_sha:
        raise IntegrityError(
            f"table {table_name!r}: {key} in {store.url} holds other data than its name says; "
            "no recorded version pins it. Delete that object and write again.",
            key=key,
            expected=th.data_sha,
            actual=actual,
        )
    return existing, store.size(key)


def known_snapshot(ctx: ProjectContext, table: str, version: str) -> bytes | None:
    """The stored bytes of a version already in the history (a revert), if intact."""
    try:
        raw = ctx.store.read_bytes(L.store_snapshot(table, version))
        return raw if parse_metadata(raw, key="snapshot").version == version else None
    except DatomError:
        return None


def recorded_parquet(
    ctx: ProjectContext, table_name: str, table: pa.Table, th: TableHash, parquet_sha: str
) -> tuple[str, int, bool]:
    """(parquet_sha, size_bytes, uploaded) for data an earlier version recorded: its bytes
    are reused (re-serialising could change them and break that version's pin). A store
    that lost them gets them back when this data serialises to exactly those bytes; else
    the write is refused rather than naming a missing object."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    try:
        return parquet_sha, store.size(key), False
    except NotFoundError:
        pass
    with serialized(table, th.column_hashes, ctx.store, table_name) as sp:
        if sp.parquet_sha == parquet_sha:
            store.put_if_absent(key, sp.source)
            return parquet_sha, sp.size_bytes, False  # a recorded version's: never undone
    raise IntegrityError(
        f"table {table_name!r}: this data was recorded before as {key} (parquet_sha "
        f"{parquet_sha}), which is missing from {store.url}, and it does not serialise to "
        "those bytes again here (another pyarrow or settings wrote them); nothing was "
        "written. Restore the object from a backup of the store (validate lists every "
        "missing parquet), then write again",
        key=key,
        expected=parquet_sha,
        actual="no object",
    )


def adopt_snapshot(
    ctx: ProjectContext, table: str, metadata: TableMetadata, ours: bytes
) -> bytes | None:
    """The bytes this write records for a version whose snapshot is in the store already
    though no recorded version names it (a failed write's, kept for its remote's word; or
    a concurrent twin's): that snapshot's, when it is the same version of the same
    parquet (only a stamp differs), so that git and the store agree on the document;
    otherwise the snapshot is replaced by this write's (None: keep ``ours``)."""
    key = L.store_snapshot(table, metadata.version)
    try:
        stored = ctx.store.read_bytes(key)
        theirs = parse_metadata(stored, key=key)
    except DatomError:
        theirs = None
    if theirs is not None and stored == ours:
        return None
    if (
        theirs is not None
        and theirs.version == metadata.version
        and theirs.parquet_sha == metadata.parquet_sha
        and theirs.size_bytes == metadata.size_bytes
    ):
        return stored
    ctx.store.write_bytes(key, ours)  # an unrecorded object of other bytes: ours replaces it
    return None
