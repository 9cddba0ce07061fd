"""Serialising the parquet early, once the data is known to be new.

New data needs a parquet file; an unchanged table must not pay for one. The current
version's column digests (from its parquet footer, or an old document's
``column_hashes``) tell as soon as the first column is hashed: a table that does not
exist yet, a different shape, or one differing digest starts the serialisation, which
then overlaps the hashing of the other columns.

A small table (up to :data:`INLINE_ROWS` rows, hashed inline in the caller's thread) is
never handed to the worker: the handoff and the two threads taking turns on the
interpreter cost more than encoding it (~1 ms per write at 200 rows), so the write
encodes it itself once it knows the data is new.

Encoding while hashing exists for speed only: ``DATOM_PLAIN=1`` (or ``DATOM_PLAIN=encode``)
takes the plain path, every table encoded by the write once hashing and classifying are
over (the same bytes: the digests reach the footer either way).
"""

from __future__ import annotations

import pyarrow as pa

from datom_core._identity._cv1 import SMALL_TABLE_ROWS, ColumnHash, TableHash
from datom_core._plain import plain
from datom_core._project import _layout as L
from datom_core._project._columns import footer_digests, known_digests, remember_digests
from datom_core._project._context import ProjectContext
from datom_core._project._model import TableMetadata
from datom_core._project._parquet import BackgroundParquet

__all__ = ["INLINE_ROWS", "EarlyParquet"]

INLINE_ROWS = SMALL_TABLE_ROWS


class EarlyParquet:
    """Starts a :class:`BackgroundParquet` as soon as the hashing shows new data."""

    def __init__(
        self, table: pa.Table, ctx: ProjectContext, name: str, current: TableMetadata | None
    ) -> None:
        self._table = table
        self._store, self._folder = ctx.store, name
        self.background: BackgroundParquet | None = None
        self._expected: dict[int, tuple[str, str]] = {}
        # Encoded by the write itself, after hashing: nothing to decide, no footer read.
        self._inline = table.num_rows <= INLINE_ROWS or plain("encode")
        if self._inline:
            return
        recorded = _recorded(ctx, name, table.num_columns, current)
        self._expected = {i: (c.name, c.sha) for i, c in enumerate(recorded or ())}
        if current is None or current.nrow != table.num_rows or recorded is None:
            self._start()

    def on_column(self, index: int, column: ColumnHash) -> None:
        if self._inline or self.background is not None:
            return
        if self._expected.get(index) != (column.name, column.sha):
            self._start()

    def provide(self, table_hash: TableHash) -> None:
        """Hashing is over: the footer of the parquet being written gets the digests."""
        remember_digests(table_hash)
        if self.background is not None:
            self.background.provide(table_hash.column_hashes)

    def _start(self) -> None:
        self.background = BackgroundParquet(self._table, store=self._store, folder=self._folder)

    def __enter__(self) -> EarlyParquet:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.background is not None:
            self.background.close()


def _recorded(
    ctx: ProjectContext, name: str, ncol: int, current: TableMetadata | None
) -> tuple[ColumnHash, ...] | None:
    if current is None or current.ncol != ncol:
        return None
    known = known_digests(current.data_sha, ncol)
    if known is not None:
        return known
    if current.column_hashes is not None and len(current.column_hashes) == ncol:
        return tuple(ColumnHash(c.name, c.sha) for c in current.column_hashes)
    return footer_digests(ctx.store, L.store_parquet(name, current.data_sha), current)
