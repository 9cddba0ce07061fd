"""Table commands: ``list``, ``history``, ``show``, ``read``, ``lineage`` and ``diff``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.tree import Tree

from datom_core._identity._canonical import metadata_sha
from datom_core._project._documents import colnames_of, parents_of, source_lineage_of
from datom_core._project._records import LineageNode
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._diff import TableDiff, column_hashes_of, diff_metadata
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
    metadata = state.connection().metadata(table, version)
    if state.json:
        emit_json(metadata)
        return
    _print_metadata(state, table, metadata)


def _print_metadata(state: AppState, table: str, metadata: dict[str, Any]) -> None:
    project = state.connection().project_name
    parents = [
        _ref(p.get("source", project), project, p["table"], p["version"])
        for p in parents_of(metadata)
    ]
    sources = [
        _ref(s.project, project, s.table, s.version_sha) for s in source_lineage_of(metadata)
    ]
    print_fields(
        state.out,
        [
            ("table", table),
            ("version", metadata_sha(metadata)),
            ("data_sha", metadata.get("data_sha")),
            ("parquet_sha", metadata.get("parquet_sha")),
            ("type", metadata.get("table_type")),
            ("rows", metadata.get("nrow")),
            ("columns", metadata.get("ncol")),
            ("size", human_size(metadata.get("size_bytes"))),
            ("created", metadata.get("created_at")),
            ("original file", metadata.get("original_file_sha")),
            ("parents", ", ".join(parents) or None),
            ("sources", ", ".join(sources) or None),
        ],
    )
    hashes = column_hashes_of(metadata)
    rows = [(name, short(hashes.get(name))) for name in colnames_of(metadata)]
    print_table(state.out, ("column", "hash"), rows, empty="(no columns)")
    if metadata.get("custom"):
        state.out.print("custom metadata:")
        state.out.print_json(data=metadata["custom"])


def _ref(project: str, here: str, table: str, sha: str) -> str:
    # Another project's table is qualified; this project's is not.
    where = "" if project == here else f"{project}/"
    return f"{where}{table}@{short(sha)}"


@click.command("read")
@click.argument("table")
@click.option("--version", "-v", "version", metavar="V", help=_VERSION_HELP)
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
@json_option
@pass_state
def read_command(
    state: AppState,
    table: str,
    version: str | None,
    out: Path,
    columns: str | None,
    force: bool,
) -> None:
    """Download a version of TABLE into a file.

    The bytes are verified against their recorded hash before they are written.
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
    full = conn.resolve(table, version)
    with tracker(state.err, state.progress) as progress:
        progress.phase(f"downloading {table}")
        data = conn.read(table, full, columns=wanted, as_="arrow")
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
@click.argument("v1")
@click.argument("v2")
@json_option
@pass_state
def diff_command(state: AppState, table: str, v1: str, v2: str) -> None:
    """Compare versions V1 and V2 of TABLE.

    Columns added, removed, changed (their hashes differ) and the row counts, from the
    two versions' metadata alone: no data is downloaded.
    """
    conn = state.connection()
    result = diff_metadata(table, conn.metadata(table, v1), conn.metadata(table, v2))
    if state.json:
        emit_json(result.to_json())
        return
    _print_diff(state, result)


def _print_diff(state: AppState, d: TableDiff) -> None:
    state.out.print(f"{d.table}: {short(d.from_version)} -> {short(d.to_version)}")
    sign = "+" if d.nrow_change > 0 else ""
    state.out.print(f"rows: {d.from_nrow} -> {d.to_nrow} ({sign}{d.nrow_change})")
    if d.same_data:
        state.out.print("data: identical (the versions differ in metadata only)")
    rows = [(c, "added") for c in d.added]
    rows += [(c, "removed") for c in d.removed]
    rows += [(c, "changed") for c in d.changed]
    rows += [(c, "unknown (no column hashes)") for c in d.unknown]
    rows += [(c, "unchanged") for c in d.unchanged]
    print_table(state.out, ("column", "change"), rows, empty="(no columns)")
    if d.reordered:
        state.out.print("column order changed")


def _author_name(author: str) -> str:
    # "Name <email>": the name is enough in a table; --json keeps the full identity.
    name, _, _ = author.partition(" <")
    return name or author
