"""Table commands: ``list``, ``history``, ``show``, ``read``, ``lineage`` and ``diff``."""

from __future__ import annotations

from typing import Any

import click
from rich.tree import Tree

from datom_core import (
    Connection,
    LineageNode,
    TableDiff,
    TableMetadata,
)
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._columns import StoredColumns, stored_columns
from datom_core.cli._partitions import partition_hint, partitions_of, refuse_set
from datom_core.cli._render import (
    emit_json,
    human_size,
    print_fields,
    print_table,
    short,
    to_jsonable,
)
from datom_core.cli._setref import hex_lower

__all__ = [
    "diff_command",
    "history_command",
    "lineage_command",
    "list_command",
    "show_command",
]

_VERSION_HELP = "A version id or unique prefix (default: the current version)."


def _lower(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return hex_lower(value)  # version ids are hex: an uppercase prefix is the same prefix


@click.command("list")
@json_option
@pass_state
def list_command(state: AppState) -> None:
    """List the tables and their current versions (and the set of a product repo)."""
    tables = state.connection().tables()
    if state.json:
        emit_json(tables)
        return
    rows = [
        (
            t.name,
            short(t.current_version),
            t.version_count,
            human_size(t.size_bytes),
            t.last_updated,
            t.original_format or "derived",
        )
        for t in tables
    ]
    headers = ("table", "version", "versions", "size", "updated", "source")
    sets = _set_names(state.connection())
    print_table(state.out, headers, rows, empty="(no tables)" if not sets else "")
    for name in sets:
        state.out.print(
            f"set: {name} (this repo's set: datom set show, datom set members)", soft_wrap=True
        )


def _set_names(conn: Connection) -> list[str]:
    """The sets the store's manifest lists (a product repo's one set)."""
    artifacts = conn.store_manifest().get("artifacts") or {}
    return sorted(n for n, e in artifacts.items() if isinstance(e, dict) and e.get("kind") == "set")


@click.command("history")
@click.argument("table")
@json_option
@pass_state
def history_command(state: AppState, table: str) -> None:
    """List every version of TABLE, newest first.

    For a partitioned asset (one table per partition, TABLE(<key>)), every partition's
    versions, newest first.
    """
    conn = state.connection()
    parts = [] if _has_table(conn, table) else partitions_of(conn, table)
    if parts:
        _partition_history(state, conn, parts)
        return
    with partition_hint(conn, table, "history"):
        versions = conn.history(table)
    if state.json:
        emit_json(versions)
        return
    rows = [
        (short(v.version), short(v.data_sha), v.timestamp, _author_name(v.author), v.commit_message)
        for v in versions
    ]
    print_table(state.out, ("version", "data", "time", "author", "message"), rows)


def _has_table(conn: Connection, name: str) -> bool:
    return any(t.name == name for t in conn.tables())


def _partition_history(state: AppState, conn: Connection, parts: list[str]) -> None:
    found = [(p, v) for p in parts for v in conn.history(p)]
    found.sort(key=lambda pv: pv[1].timestamp, reverse=True)
    if state.json:
        emit_json([{"table": p, **to_jsonable(v)} for p, v in found])
        return
    rows = [
        (p, short(v.version), short(v.data_sha), v.timestamp, _author_name(v.author),
         v.commit_message)
        for p, v in found
    ]  # fmt: skip
    print_table(state.out, ("table", "version", "data", "time", "author", "message"), rows)


@click.command("show")
@click.argument("table")
@click.option("--version", "-v", "version", metavar="V", callback=_lower, help=_VERSION_HELP)
@json_option
@pass_state
def show_command(state: AppState, table: str, version: str | None) -> None:
    """Show the metadata of a version of TABLE, and its columns with their types.

    With --json: the table, the version id and the metadata document, plus "columns"
    (name and type of each).
    """
    conn = state.connection()
    with partition_hint(conn, table, "show"):
        metadata = conn.version(table, version)
    refuse_set(metadata, table, "show")
    stored = stored_columns(conn, table, metadata)
    if state.json:
        types = stored.types if stored else {}
        columns = [{"name": c, "type": types.get(c)} for c in metadata.colnames]
        emit_json(
            {"table": table, "version": metadata.version, **metadata.to_json(), "columns": columns}
        )
        return
    _print_metadata(state, table, metadata, stored)


def _print_metadata(
    state: AppState, table: str, md: TableMetadata, stored: StoredColumns | None
) -> None:
    project = state.connection().project_name
    parents = [_ref(p.source or project, project, p.table, p.version) for p in md.parents]
    sources = [_ref(s.project, project, s.table, s.version_sha) for s in md.source_lineage or ()]
    print_fields(
        state.out,
        [
            ("table", table),
            ("version", md.version),
            ("data_sha", md.data_sha),
            ("parquet_sha", md.parquet_sha),
            ("type", md.table_type),
            ("rows", md.nrow),
            ("columns", md.ncol),
            ("size", human_size(md.size_bytes)),
            ("created", md.created_at),
            ("written by", md.datom_version),
            ("original file", md.original_file_sha),
            ("parents", ", ".join(parents) or None),
            ("sources", ", ".join(sources) or None),
        ],
    )
    types = stored.types if stored else {}
    labels = stored.labels if stored else {}
    rows = [(n, types.get(n), labels[n].describe() if n in labels else "") for n in md.colnames]
    if labels:
        print_table(state.out, ("column", "type", "label"), rows, empty="(no columns)")
    else:
        print_table(state.out, ("column", "type"), [r[:2] for r in rows], empty="(no columns)")
    if stored is None and md.colnames:
        state.out.print("(types unknown: the version's parquet object could not be read)")
    if md.custom:
        state.out.print("custom metadata:")
        state.out.print_json(data=dict(md.custom))


def _ref(project: str, here: str, table: str, sha: str) -> str:
    # Another project's table is qualified; this project's is not.
    where = "" if project == here else f"{project}/"
    return f"{where}{table}@{short(sha)}"


@click.command("lineage")
@click.argument("table")
@click.option("--version", "-v", "version", metavar="V", callback=_lower, help=_VERSION_HELP)
@click.option(
    "--depth",
    type=click.Choice(["source", "parents"]),
    default="source",
    show_default=True,
    help="source: the raw sources it comes from; parents: the tree of exact versions.",
)
@json_option
@pass_state
def lineage_command(state: AppState, table: str, version: str | None, depth: str) -> None:
    """Show where a version of TABLE comes from."""
    conn = state.connection()
    with partition_hint(conn, table, "lineage"):
        refuse_set(conn.version(table, version), table, "lineage")
        result = conn.lineage(table, version, depth)  # type: ignore[arg-type]
    if state.json:
        emit_json(result)
        return
    if depth == "source":
        rows = [(s.project, s.table, short(s.version_sha)) for s in result]
        print_table(state.out, ("project", "table", "data"), rows, empty="(no raw sources)")
        return
    tree = Tree(_node_label(result))
    _grow(tree, result.parents)
    state.out.print(tree)


def _node_label(node: LineageNode) -> str:
    where = f"{node.project}/" if node.project else ""
    label = f"{where}{node.table}@{short(node.version)}"
    return label if node.resolved else f"{label} (not readable here)"


def _grow(tree: Tree, parents: tuple[LineageNode, ...]) -> None:
    for parent in parents:
        _grow(tree.add(_node_label(parent)), parent.parents)


@click.command("diff")
@click.argument("table")
@click.argument("v1", required=False, callback=_lower)
@click.argument("v2", required=False, callback=_lower)
@click.option(
    "--key",
    "-k",
    "key",
    metavar="A,B",
    help="Key columns: also count rows added, removed and changed (reads both versions).",
)
@json_option
@pass_state
def diff_command(
    state: AppState, table: str, v1: str | None, v2: str | None, key: str | None
) -> None:
    """Compare versions V1 and V2 of TABLE (default: the current one and the one before).

    Columns added, removed, changed (their digests differ) and the row counts, from the
    two parquet footers: no data is downloaded unless --key is given.
    """
    keys = [k.strip() for k in key.split(",") if k.strip()] if key else None
    conn = state.connection()
    with partition_hint(conn, table, "diff"):
        result = conn.diff(table, v1, v2, key=keys)
    if state.json:
        emit_json(_diff_json(result))
        return
    _print_diff(state, result)


def _diff_json(d: TableDiff) -> dict[str, Any]:
    before = d.rows_before if d.rows_before is not None else 0
    return {
        "table": d.table,
        "from_version": d.before,
        "to_version": d.after,
        "same_data": d.same_data,
        "nrow": {"from": d.rows_before, "to": d.rows_after, "change": d.rows_after - before},
        "columns": {
            "added": list(d.columns_added),
            "removed": list(d.columns_removed),
            "changed": list(d.columns_changed),
            "unchanged": list(d.columns_unchanged),
            "unknown": [],
            "reordered": d.reordered,
        },
        "key": list(d.key) if d.key else None,
        "rows": {"added": d.rows_added, "removed": d.rows_removed, "changed": d.rows_changed},
    }


def _print_diff(state: AppState, d: TableDiff) -> None:
    state.out.print(f"{d.table}: {short(d.before)} -> {short(d.after)}")
    before = d.rows_before if d.rows_before is not None else 0
    change = d.rows_after - before
    sign = "+" if change > 0 else ""
    state.out.print(f"rows: {d.rows_before} -> {d.rows_after} ({sign}{change})")
    if d.same_data:
        state.out.print("data: identical (the versions differ in metadata only)")
    rows = [(c, "added") for c in d.columns_added]
    rows += [(c, "removed") for c in d.columns_removed]
    rows += [(c, "changed") for c in d.columns_changed]
    rows += [(c, "unchanged") for c in d.columns_unchanged]
    print_table(state.out, ("column", "change"), rows, empty="(no columns)")
    if d.reordered:
        state.out.print("column order changed")
    if d.key:
        state.out.print(
            f"rows by key ({', '.join(d.key)}): {d.rows_added} added, {d.rows_removed} removed, "
            f"{d.rows_changed} changed"
        )


def _author_name(author: str) -> str:
    # "Name <email>": the name is enough in a table; --json keeps the full identity.
    name, _, _ = author.partition(" <")
    return name or author
