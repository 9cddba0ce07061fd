"""Partitioned assets by their asset name.

The Dagster plugin stores each partition of an asset as its own table, named after the
asset with the partition key in parentheses (``daily_sales(2026-01-01)``); there is no table
called ``daily_sales``. A command given the asset name says so and names the partitions,
instead of a bare "no table".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from datom_core import Connection, NotFoundError

__all__ = ["partition_hint", "partitions_of"]

_SHOWN = 5  # partitions named in a message; `datom list` shows them all


def partitions_of(conn: Connection, name: str) -> list[str]:
    """The tables holding the partitions of asset ``name`` (``name(<key>)...``), sorted."""
    return sorted(t.name for t in conn.tables() if t.name.startswith(f"{name}("))


@contextmanager
def partition_hint(conn: Connection, name: str, command: str) -> Iterator[None]:
    """Turn "no table NAME" into the partitions' names and the command to run on one."""
    try:
        yield
    except NotFoundError as e:
        found = partitions_of(conn, name) if name not in _table_names(conn) else []
        if not found:
            raise
        shown = ", ".join(found[:_SHOWN]) + (", ..." if len(found) > _SHOWN else "")
        raise NotFoundError(
            f"no table {name!r}: {name} is a partitioned asset, stored as one table per "
            f"partition ({len(found)}: {shown}). Name one, e.g. datom {command} '{found[-1]}'; "
            f"datom history {name} lists every partition's versions, datom list every table"
        ) from e


def _table_names(conn: Connection) -> set[str]:
    return {t.name for t in conn.tables()}
