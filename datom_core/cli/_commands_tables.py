"""Table commands: ``list``, ``history``, ``show``, ``read``, ``lineage`` and ``diff``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.tree import Tree

from datom_core import (
    ColumnLabels,
    Connection,
    DatomError,
    LineageNode,
    TableDiff,
    TableMetadata,
    column_labels,
)
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._export import EXPORT_FORMATS, export_format, write_export
from datom_core.cli._progress import tracker
from datom_core.cli._render import emit_json, human_size, print_fields, print_table, short

__all__ = [
    "diff_command",
    "history_command",
    "lineage_command",
    "list_command",
    "read_command",
    "show_command",
]

_VERSION_HELP = "A version id or unique prefix (default: the current version)."


@click.command("list")
@json_option
@pass_state
def list_command(state: AppState) -> None:
    """List the tables and their current versions."""
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
    print_table(state.out, headers, rows, empty="(no tables)")


@click.command("history")
@click.argument("table")
@json_option
@pass_state
def history_command(state: AppState, table: str) -> None:
    """List every version of TABLE, newest first."""
    versions = state.connection().history(table)
    if state.json:
        emit_json(versions)
        return
    rows = [
        (short(v.version), short(v.data_sha), v.timestamp, _author_name(v.author), v.commit_message)
        for v in versions
    ]
    print_table(state.out, ("version", "data", "time", "author", "message"), rows)


@click.command("show")
@click.argument("table")
@click.option("--version", "-v", "version", metavar="V", help=_VERSION_HELP)
@json_option
@pass_state
def show_command(state: AppState, table: str, version: str | None) -> None:
    """Show the metadata of a version of TABLE.

    With --json: the metadata document itself.
    """
    metadata = state.connection().version(table, version)
    if state.json:
        emit_json(metadata.to_json())
        return
    _print_metadata(state, table, metadata)


def _print_metadata(state: AppState, table: str, md: TableMetadata) -> None:
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
    labels = _stored_labels(state.connection(), table, md)
    if labels:
        labelled = [(n, labels[n].describe() if n in labels else "") for n in md.colnames]
        print_table(state.out, ("column", "label"), labelled, empty="(no columns)")
    else:
        print_table(state.out, ("column",), [(n,) for n in md.colnames], empty="(no columns)")
    if md.custom:
        state.out.print("custom metadata:")
        state.out.print_json(data=dict(md.custom))


def _stored_labels(conn: Connection, table: str, md: TableMetadata) -> dict[str, ColumnLabels]:
    """The column labels in the version's parquet footer (only the footer is read).

    Labels are a courtesy of ``show``: a store that cannot be read leaves them out, and the
    metadata, which comes from git, is still shown.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with conn.store.open_read(conn.parquet_key(table, md.data_sha)) as f:
            return column_labels(pq.read_schema(f))
    except (DatomError, OSError, pa.ArrowException):
        return {}


def _ref(project: str, here: str, table: str, sha: str) -> str:
    # Another project's table is qualified; this project's is not.
    where = "" if project == here else f"{project}/"
    return f"{where}{table}@{short(sha)}"


@click.command("read")
@click.argument("table", required=False)
@click.option("--version", "-v", "version", metavar="V", help=_VERSION_HELP)
@click.option(
    "--set",
    "set_spec",
    metavar="NAME[@VERSION]",
    help="Read the version a set pins (with --member), not the current one.",
)
@click.option("--member", metavar="TABLE", help="The member of --set to read.")
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file: .parquet/.pq, .csv or .tsv (chosen by extension).",
)
@click.option("--columns", metavar="A,B", help="Only these columns, comma-separated.")
@click.option("--force", "-f", is_flag=True, help="Overwrite FILE if it exists.")
@click.option(
    "--verify",
    type=click.Choice(["bytes", "content"]),
    default="bytes",
    show_default=True,
    help="content: also re-hash the table against the version's data_sha (exit 4 if not).",
)
@json_option
@pass_state
def read_command(
    state: AppState,
    table: str | None,
    version: str | None,
    set_spec: str | None,
    member: str | None,
    out: Path,
    columns: str | None,
    force: bool,
    verify: str,
) -> None:
    """Download a version of TABLE into a file.

    The bytes are verified against their recorded hash before they are written; with
    --verify content the decoded table is also re-hashed against the version's data_sha,
    which the version id covers (a swapped parquet whose parquet_sha was edited to match
    fails here).
    """
    fmt = export_format(out)
    if fmt is None:
        known = ", ".join(EXPORT_FORMATS)
        raise click.BadParameter(
            f"{out.name}: unknown output format; use one of {known}", param_hint="--out"
        )
    if out.exists() and not force:
        raise click.BadParameter(f"{out} exists; pass --force to overwrite it", param_hint="--out")
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    conn = state.connection()
    table, full = _what_to_read(conn, table, version, set_spec, member)
    with tracker(state.err, state.progress) as progress:
        progress.phase(f"downloading {table}")
        data = conn.read(table, full, columns=wanted, as_="arrow", verify=verify)  # type: ignore[arg-type]
        write_export(data, out, fmt, progress)
    if state.json:
        emit_json(
            {
                "table": table,
                "version": full,
                "out": str(out),
                "format": fmt,
                "nrow": data.num_rows,
                "columns": data.column_names,
            }
        )
        return
    state.out.print(
        f"wrote {data.num_rows} rows x {data.num_columns} columns of {table}@{short(full)} to {out}"
    )


def _what_to_read(
    conn: Connection, table: str | None, version: str | None, spec: str | None, member: str | None
) -> tuple[str, str]:
    """(table, full version): TABLE[@--version], or the version ``--set`` pins for ``--member``."""
    if spec is None:
        if table is None or member is not None:
            raise click.UsageError("give TABLE, or --set NAME[@VERSION] --member TABLE")
        return table, conn.resolve(table, version)
    if member is None or table is not None or version is not None:
        raise click.UsageError("--set NAME[@VERSION] takes --member TABLE (and no TABLE, no -v)")
    name, _, pinned = spec.partition("@")
    m = conn.get_set(pinned or None, name=name).member(member)
    if m.kind != "table" or m.project != conn.project_name:
        raise click.UsageError(
            f"{member!r} in set {name!r} is a {m.kind} of project {m.project!r}: read it through "
            f"that project (--store ... --project {m.project})"
        )
    return m.name, m.version


@click.command("lineage")
@click.argument("table")
@click.option("--version", "-v", "version", metavar="V", help=_VERSION_HELP)
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
    result = state.connection().lineage(table, version, depth)  # type: ignore[arg-type]
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
@click.argument("v1", required=False)
@click.argument("v2", required=False)
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
    result = state.connection().diff(table, v1, v2, key=keys)
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
