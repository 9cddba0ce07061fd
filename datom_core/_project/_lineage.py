"""Lineage: which raw sources and which exact parent versions produced a table version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from datom_core._errors import DatomError
from datom_core._identity._canonical import metadata_sha
from datom_core._project._documents import SourceRef, parents_of, source_lineage_of
from datom_core._project._records import LineageNode

if TYPE_CHECKING:
    from datom_core._project import Connection

__all__ = ["lineage"]


def lineage(
    conn: Connection, table: str, version: str | None, depth: Literal["source", "parents"]
) -> list[SourceRef] | LineageNode:
    """``source``: the de-duplicated raw sources; ``parents``: the tree of exact versions."""
    if depth == "source":
        return source_lineage_of(conn.metadata(table, version))
    if depth == "parents":
        return _node(conn, table, version, {})
    raise ValueError(f'depth must be "source" or "parents", not {depth!r}')


def _node(
    conn: Connection, table: str, version: str | None, seen: dict[tuple[str, str], LineageNode]
) -> LineageNode:
    metadata = conn.metadata(table, version)
    full = metadata_sha(metadata)
    if (table, full) in seen:
        return seen[(table, full)]
    parents = []
    for p in parents_of(metadata):
        if p.get("source") != conn.project_name:
            # Another project's version: recorded exactly, but not readable from this store.
            parents.append(
                LineageNode(
                    p.get("source", ""), p["table"], p["version"], p["data_sha"], resolved=False
                )
            )
            continue
        try:
            parents.append(_node(conn, p["table"], p["version"], seen))
        except DatomError:
            parents.append(
                LineageNode(
                    conn.project_name, p["table"], p["version"], p["data_sha"], resolved=False
                )
            )
    node = LineageNode(conn.project_name, table, full, metadata["data_sha"], tuple(parents))
    seen[(table, full)] = node
    return node
