"""Lineage: which raw sources and which exact parent versions produced a table version."""

from __future__ import annotations

from typing import Literal

from datom_core._errors import DatomError
from datom_core._identity._canonical import metadata_sha
from datom_core._project._context import ProjectContext
from datom_core._project._documents import SourceRef, parents_of, source_lineage_of
from datom_core._project._read import read_metadata
from datom_core._project._records import LineageNode

__all__ = ["lineage"]


def lineage(
    ctx: ProjectContext, table: str, version: str | None, depth: Literal["source", "parents"]
) -> list[SourceRef] | LineageNode:
    """``source``: the de-duplicated raw sources; ``parents``: the tree of exact versions."""
    if depth == "source":
        return source_lineage_of(read_metadata(ctx, table, version))
    if depth == "parents":
        return _node(ctx, table, version, {})
    raise ValueError(f'depth must be "source" or "parents", not {depth!r}')


def _node(
    ctx: ProjectContext, table: str, version: str | None, seen: dict[tuple[str, str], LineageNode]
) -> LineageNode:
    metadata = read_metadata(ctx, table, version)
    full = metadata_sha(metadata)
    if (table, full) in seen:
        return seen[(table, full)]
    parents = []
    for p in parents_of(metadata):
        if p.get("source") != ctx.project_name:
            # Another project's version: recorded exactly, but not readable from this store.
            parents.append(
                LineageNode(
                    p.get("source", ""), p["table"], p["version"], p["data_sha"], resolved=False
                )
            )
            continue
        try:
            parents.append(_node(ctx, p["table"], p["version"], seen))
        except DatomError:
            parents.append(
                LineageNode(
                    ctx.project_name, p["table"], p["version"], p["data_sha"], resolved=False
                )
            )
    node = LineageNode(ctx.project_name, table, full, metadata["data_sha"], tuple(parents))
    seen[(table, full)] = node
    return node
