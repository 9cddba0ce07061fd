"""A name that is not a table: a partitioned asset's, or a set's.

The Dagster plugin stores each partition of an asset as its own table, named after the
asset with the partition key in parentheses (``daily_sales(2026-01-01)``); there is no table
called ``daily_sales``. A command given the asset name says so and names the partitions,
instead of a bare "no table". A set's name given to a table command (``show``, ``read``...)
is sent to the ``datom set`` commands, instead of "its data is gone".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from datom_core import Connection, DatomError, NotFoundError, TableMetadata

__all__ = ["partition_hint", "partitions_of", "refuse_set"]

_SHOWN = 5  # partitions named in a message; `datom list` shows them all


def partitions_of(conn: Connection, name: str) -> list[str]:
    """The tables holding the partitions of asset ``name`` (``name(<key>)...``), sorted."""
    return sorted(t.name for t in conn.tables() if t.name.startswith(f"{name}("))


@contextmanager
def partition_hint(conn: Connection, name: str, command: str) -> Iterator[None]:
    """Turn "no table NAME" into the partitions' names and the command to run on one."""
    try:
        yield
    except DatomError as e:
        _refuse_a_set_for(conn, name, command)
        if not isinstance(e, NotFoundError) or name in _table_names(conn):
            raise
        found = partitions_of(conn, name)
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


def refuse_set(md: TableMetadata, name: str, command: str) -> None:
    """A set's versions are not tables: send ``command`` on ``name`` to ``datom set``."""
    if md.kind == "set":
        raise click.UsageError(
            f"{name!r} is a set, not a table: see it with datom set show {md.version[:12]} and "
            f"datom set members; read a member with datom read --set '{name}' --member TABLE"
            + ("" if command == "show" else f" (datom {command} works on tables)")
        )


def _refuse_a_set_for(conn: Connection, name: str, command: str) -> None:
    try:
        md = conn.version(name)
    except DatomError:
        return  # not an artifact at all: the original error stands
    refuse_set(md, name, command)
