"""Project commands: ``init``, ``clone``, ``status`` and ``validate``."""

from __future__ import annotations

from pathlib import Path

import click

from datom_core import (
    Connection,
    InvalidNameError,
    ProjectStatus,
    ValidationReport,
    clone,
    init_repo,
)
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._connect import make_store
from datom_core.cli._exit import EXIT_FINDING
from datom_core.cli._render import emit_json, print_fields, print_table, short, to_jsonable

__all__ = ["clone_command", "init_command", "status_command", "validate_command"]

#: Suffix of the default local store of ``datom init PATH``: ``PATH.store`` next to the clone.
DEFAULT_STORE_SUFFIX = ".store"


def default_store_path(clone_path: Path) -> Path:
    """Where ``datom init PATH`` keeps the data when no ``--store`` is given: ``PATH.store``.

    A sibling of the clone, not inside it, so that data never sits in the git working tree;
    like the embedded git remote (``PATH.remote.git``) it needs no server and no account.
    """
    absolute = clone_path.absolute()
    return absolute.with_name(absolute.name + DEFAULT_STORE_SUFFIX)


@click.command("init")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--project", "project_name", metavar="NAME", help="Project name. Default: PATH's folder name."
)
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    help="Where the data lives (path, file://, s3://bucket/prefix). Default: PATH.store",
)
@click.option(
    "--remote",
    metavar="URL",
    help="Git remote for the metadata (empty). Default: a bare repository at PATH.remote.git",
)
@click.option(
    "--mode",
    type=click.Choice(["product"]),
    help="product: a repo that builds and holds one set (needs --set); default: a data repo.",
)
@click.option("--set", "set_name", metavar="NAME", help="The set a --mode product repo holds.")
@json_option
@pass_state
def init_command(
    state: AppState,
    path: Path,
    project_name: str | None,
    store_url: str | None,
    remote: str | None,
    mode: str | None,
    set_name: str | None,
) -> None:
    """Create a project: a clone at PATH.

    Without --remote the git remote is a bare repository at PATH.remote.git; without
    --store the data goes to a local store at PATH.store. Both sit next to PATH.
    --mode product --set NAME makes a product repo that holds the set NAME.
    """
    name = project_name or path.absolute().name
    store = make_store(_one_store(store_url, state) or str(default_store_path(path)), state.options)
    try:
        conn = init_repo(path, name, store, remote, mode=mode, set=set_name)
    except InvalidNameError as e:
        if project_name is not None:
            raise
        raise click.UsageError(
            f"{e}; the folder name {name!r} is not one: pass --project NAME"
        ) from None
    _print_status(state, conn.status(), conn, f"Initialised project {name} in {path}")


@click.command("clone")
@click.argument("remote")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    help="Use this store instead of the one the project records, for this command "
    "(later: datom --store URL ...).",
)
@json_option
@pass_state
def clone_command(state: AppState, remote: str, path: Path, store_url: str | None) -> None:
    """Join a project: clone REMOTE into PATH.

    REMOTE is the project's git remote; a token, if needed, comes from DATOM_GIT_TOKEN.
    """
    store_url = _one_store(store_url, state)
    store = make_store(store_url, state.options, existing=True) if store_url else None
    conn = clone(remote, path, store)
    _print_status(state, conn.status(), conn, f"Cloned project {conn.project_name} into {path}")


def _one_store(own: str | None, state: AppState) -> str | None:
    """The store given to the command, or the global ``--store`` (``DATOM_STORE``)."""
    shared = state.options.store
    if own and shared and own != shared:
        raise click.UsageError(f"two stores given: --store {shared} (global) and --store {own}")
    return own or shared


@click.command("status")
@json_option
@pass_state
def status_command(state: AppState) -> None:
    """Show where the project lives.

    The project, the role (developer or reader), the store, the remote and whether the
    clone has unpushed commits.
    """
    conn = state.connection()
    _print_status(state, conn.status(), conn, None)


def _print_status(
    state: AppState, status: ProjectStatus, conn: Connection, headline: str | None
) -> None:
    path = str(conn.path) if conn.role == "developer" else None
    if state.json:
        emit_json({**to_jsonable(status), "path": path})
        return
    if headline:
        state.out.print(headline)
    print_fields(
        state.out,
        [
            ("project", status.project_name),
            ("role", status.role),
            ("clone", path),
            ("store", status.store),
            ("remote", status.remote),
            ("head", short(status.head) if status.head else None),
            ("unpushed", "yes" if status.unpushed_commits else "no"),
            ("tables", status.tables),
            ("inbox files", status.inbox_files),
        ],
    )


@click.command("validate")
@click.option("--fix", is_flag=True, help="Repair from git what git can restore.")
@click.option(
    "--no-verify-data",
    is_flag=True,
    help="Only check that parquet objects exist; do not download and re-hash them.",
)
@json_option
@pass_state
def validate_command(state: AppState, fix: bool, no_verify_data: bool) -> None:
    """Check the store against the clone; exit 1 if not ok.

    The clone's git history is the truth; --fix restores mirrors, snapshots and the
    manifest from it. Missing or altered data cannot be recreated.
    """
    report = state.connection().validate(fix=fix, verify_data=not no_verify_data)
    if state.json:
        found = {"ok": report.ok, "problems": to_jsonable(report)["problems"]}
        emit_json(found if report.fetched else {**found, "fetched": False, "remote": report.remote})
    else:
        _print_report(state, report)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_FINDING)


def _print_report(state: AppState, report: ValidationReport) -> None:
    if not report.fetched:
        state.err.print(report.remote)
    if not report.problems:
        state.out.print("ok: repo and store agree")
        return
    rows = [
        (
            p.kind,
            p.table,
            p.key,
            "fixed" if p.fixed else ("fixable" if p.fixable else "NOT fixable"),
            p.detail,
        )
        for p in report.problems
    ]
    print_table(state.out, ("problem", "table", "key", "state", "detail"), rows)
    remaining = sum(1 for p in report.problems if not p.fixed)
    fixable = sum(1 for p in report.problems if not p.fixed and p.fixable)
    if remaining:
        hint = f"; {fixable} fixable with --fix" if fixable else ""
        state.out.print(f"{remaining} problem(s) remain{hint}")
    else:
        state.out.print("ok: every problem was fixed")
