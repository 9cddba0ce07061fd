"""Step 3 of a write: the parquet of new data (reused when recorded before, verified when
an unrecorded object holds its name), and the snapshot bytes of a version recorded before."""

from __future__ import annotations

from contextlib import nullcontext

import pyarrow as pa

from datom_core._errors import DatomError, IntegrityError, NotFoundError
from datom_core._identity._cv1 import TableHash, hash_arrow_table
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._history_text import HistoryText
from datom_core._project._model import TableMetadata
from datom_core._project._parquet import BackgroundParquet, read_verified, serialized
from datom_core._project._parse import parse_metadata

__all__ = ["adopt_snapshot", "known_snapshot", "recorded_parquet", "store_parquet"]


def store_parquet(
    ctx: ProjectContext,
    table_name: str,
    table: pa.Table,
    th: TableHash,
    history: HistoryText | None,
    early: BackgroundParquet | None,
) -> tuple[str | None, int | None, bool]:
    """Step 3: (parquet_sha, size_bytes, uploaded) for new data."""
    store, key = ctx.store, L.store_parquet(table_name, th.data_sha)
    recorded = history.recorded_parquet(th.data_sha) if history is not None else None
    if recorded is not None and recorded.parquet_sha:
        return recorded_parquet(ctx, table_name, table, th, recorded.parquet_sha)
    with nullcontext(early.result()) if early else serialized(table, th.column_hashes) as sp:
        if store.put_if_absent(key, sp.source):
            return sp.parquet_sha, sp.size_bytes, True
    # An object nobody recorded (an interrupted or concurrent write): keep it if it holds our data.
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
    return existing, store.size(key), False


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
    with serialized(table, th.column_hashes) as sp:
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
