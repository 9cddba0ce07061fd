"""Lineage: which raw sources and which exact parent versions produced a table version."""

from __future__ import annotations

from typing import Literal

from datom_core._errors import DatomError, InvalidArgumentError, InvalidNameError
from datom_core._names import validate_project_name, validate_table_name, validate_version
from datom_core._project._context import ProjectContext
from datom_core._project._model import ParentRef, SourceRef
from datom_core._project._read import version_of
from datom_core._project._records import LineageNode

__all__ = ["checked_parent", "lineage"]


def lineage(
    ctx: ProjectContext, table: str, version: str | None, depth: Literal["source", "parents"]
) -> list[SourceRef] | LineageNode:
    """``source``: the de-duplicated raw sources; ``parents``: the tree of exact versions."""
    if depth == "source":
        return list(version_of(ctx, table, version).source_lineage or ())
    if depth == "parents":
        return _node(ctx, table, version, {})
    raise InvalidArgumentError(f'depth must be "source" or "parents", not {depth!r}')


def _node(
    ctx: ProjectContext, table: str, version: str | None, seen: dict[tuple[str, str], LineageNode]
) -> LineageNode:
    metadata = version_of(ctx, table, version)
    full = metadata.version
    if (table, full) in seen:
        return seen[(table, full)]
    parents = []
    for p in metadata.parents:
        if p.source and p.source != ctx.project_name:
            # Another project's version: recorded exactly, but not readable from this store.
            parents.append(LineageNode(p.source, p.table, p.version, p.data_sha, resolved=False))
            continue
        try:
            parents.append(_node(ctx, p.table, p.version, seen))
        except DatomError:
            parents.append(
                LineageNode(ctx.project_name, p.table, p.version, p.data_sha, resolved=False)
            )
    node = LineageNode(ctx.project_name, table, full, metadata.data_sha, tuple(parents))
    seen[(table, full)] = node
    return node


def checked_parent(p: ParentRef) -> ParentRef:
    """``p`` if its names and full SHA-256 ids are valid, else :class:`InvalidNameError`."""
    validate_table_name(p.table)
    validate_project_name(p.source)
    for value in (p.version, p.data_sha):
        validate_version(value)
        if len(value) != 64:
            raise InvalidNameError(
                f"parent {p.table!r}: {value!r} is not a full SHA-256 (64 hex characters)"
            )
    return p
