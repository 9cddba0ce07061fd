"""``datom read``: a version of a table, or the version a set pins, into a file or stdout."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from datom_core import Connection, SetMember, connect
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._connect import make_store
from datom_core.cli._export import (
    EXPORT_FORMATS,
    FORMAT_NAMES,
    export_format,
    stream_export,
    write_export,
)
from datom_core.cli._partitions import partition_hint
from datom_core.cli._progress import tracker
from datom_core.cli._render import emit_json, short
from datom_core.cli._setref import SetRef, hex_lower, open_set

__all__ = ["read_command", "source_pairs"]

#: ``--out -``: the data goes to stdout.
STDOUT = "-"


def source_pairs(values: Sequence[str], option: str) -> dict[str, str]:
    """``PROJECT=STORE_URL`` options as a mapping."""
    out: dict[str, str] = {}
    for value in values:
        project, sep, url = value.partition("=")
        if not sep or not project or not url:
            raise click.BadParameter(f"{value!r}: use PROJECT=STORE_URL", param_hint=option)
        out[project] = url
    return out


@click.command("read")
@click.argument("table", required=False)
@click.option(
    "--version",
    "-v",
    "version",
    metavar="V",
    callback=lambda _c, _p, v: hex_lower(v),
    help="A version id or unique prefix (default: the current version).",
)
@click.option(
    "--set",
    "set_spec",
    metavar="NAME[@VERSION]",
    help="Read the version a set pins (with --member), not the current one; also "
    "<project>/<set>@<version>, as a data cut prints it.",
)
@click.option("--member", metavar="TABLE", help="The member of --set to read.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="PROJECT=STORE_URL",
    help="Where another project's members live, if the product repo does not record it.",
)
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    metavar="FILE",
    help="Output file (.parquet/.pq, .csv or .tsv, by extension), or - for stdout.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    help="Output format (default: from the extension; csv for stdout).",
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
    sources: tuple[str, ...],
    out: str,
    fmt: str | None,
    columns: str | None,
    force: bool,
    verify: str,
) -> None:
    """Download a version of TABLE into a file (or stdout with --out -).

    The bytes are verified against their recorded hash before they are written; with
    --verify content the decoded table is also re-hashed against the version's data_sha,
    which the version id covers (a swapped parquet whose parquet_sha was edited to match
    fails here).
    """
    to_stdout = out == STDOUT
    path = None if to_stdout else Path(out)
    fmt = fmt or ("csv" if path is None else export_format(path))
    if fmt is None:
        known = ", ".join(EXPORT_FORMATS)
        raise click.BadParameter(
            f"{out}: unknown output format; use one of {known}, or --format", param_hint="--out"
        )
    if to_stdout and state.json:
        raise click.UsageError("--out - writes the data to stdout; drop --json (or give a FILE)")
    if path is not None and path.exists() and not force:
        raise click.BadParameter(f"{path} exists; pass --force to overwrite it", param_hint="--out")
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    conn = state.connection()
    where, table, full = _what_to_read(state, conn, table, version, set_spec, member, sources)
    with tracker(state.err, state.progress) as progress:
        progress.phase(f"downloading {table}")
        with partition_hint(where, table, "read"):
            data = where.read(table, full, columns=wanted, as_="arrow", verify=verify)  # type: ignore[arg-type]
        if path is None:
            stream_export(data, sys.stdout.buffer, fmt, progress)
        else:
            write_export(data, path, fmt, progress)
    said = f"{data.num_rows} rows x {data.num_columns} columns of {table}@{short(full)}"
    if path is None:
        state.err.print(f"wrote {said} to stdout ({fmt})")
    elif state.json:
        emit_json(_summary(where, table, full, str(path), fmt, data))
    else:
        state.out.print(f"wrote {said} to {path}")


def _summary(conn: Connection, table: str, full: str, out: str, fmt: str, data: Any) -> Any:
    return {
        "project": conn.project_name,
        "table": table,
        "version": full,
        "out": out,
        "format": fmt,
        "nrow": data.num_rows,
        "columns": data.column_names,
    }


def _what_to_read(
    state: AppState,
    conn: Connection,
    table: str | None,
    version: str | None,
    spec: str | None,
    member: str | None,
    sources: tuple[str, ...],
) -> tuple[Connection, str, str]:
    """(connection, table, full version): TABLE[@--version], or what ``--set`` pins."""
    if spec is None:
        if table is None or member is not None:
            raise click.UsageError("give TABLE, or --set NAME[@VERSION] --member TABLE")
        with partition_hint(conn, table, "read"):
            return conn, table, conn.resolve(table, version)
    if table is not None or version is not None:
        raise click.UsageError("--set NAME[@VERSION] takes --member TABLE (and no TABLE, no -v)")
    pinned = open_set(conn, SetRef.parse(spec), "--set")
    if member is None:
        names = ", ".join(sorted({m.name for m in pinned.members}))
        raise click.UsageError(f"--set {spec!r} needs --member TABLE, one of: {names}")
    m = pinned.member(member)
    if m.kind != "table":
        raise click.UsageError(
            f"{member!r} in set {spec!r} is a set, not a table: list its members with "
            f"datom --store URL --project {m.project} set members {m.version[:12]}"
        )
    if m.project == conn.project_name:
        return conn, m.name, m.version
    return _member_project(state, m, source_pairs(sources, "--source")), m.name, m.version


def _member_project(state: AppState, m: SetMember, sources: dict[str, str]) -> Connection:
    """A store-only reader of the member's project: ``--source``, else the store the
    product repo recorded when the set was written."""
    if m.project in sources:
        store = make_store(sources[m.project], state.options, existing=True)
    elif m.store is not None:
        store = m.store
    else:
        raise click.UsageError(
            f"member {m.name!r} is in project {m.project!r}, whose store this product repo does "
            f"not record (a reader of the product's store alone, or a set written before "
            f"stores were recorded): pass --source {m.project}=STORE_URL, or record it with "
            f"datom set write --update --source {m.project}=STORE_URL in the product repo"
        )
    return connect(store=store, project_name=m.project)
