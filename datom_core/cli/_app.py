"""The ``datom`` command group: global options, per-run state and error handling."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

import datom_core
from datom_core import Connection
from datom_core.cli._connect import ConnectionOptions, open_connection
from datom_core.cli._exit import EXIT_CODES_HELP, emit_error_json, exit_code_for, report_error
from datom_core.cli._render import make_console

__all__ = ["AppState", "DatomGroup", "cli", "json_option", "pass_state"]


@dataclass
class AppState:
    """What every command needs: how to connect, how to print, whether to debug."""

    options: ConnectionOptions
    json: bool = False
    debug: bool = False
    out: Console = field(default_factory=lambda: make_console(stderr=False))
    err: Console = field(default_factory=lambda: make_console(stderr=True))
    _conn: Connection | None = None

    def connection(self) -> Connection:
        """The project connection, opened on first use (``init`` and friends need none)."""
        if self._conn is None:
            self._conn = open_connection(self.options)
        return self._conn

    @property
    def progress(self) -> bool:
        """Progress bars only on a terminal (stderr), and never with ``--json``."""
        return not self.json and self.err.is_terminal


pass_state = click.make_pass_decorator(AppState)

F = TypeVar("F", bound=Callable[..., Any])


def json_option(command: F) -> F:
    """``--json`` after the command name too: ``datom list --json`` = ``datom --json list``."""

    def switch_on(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            ctx.find_object(AppState).json = True  # type: ignore[union-attr]

    return click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        callback=switch_on,
        help="Machine-readable JSON on stdout.",
    )(command)


class DatomGroup(click.Group):
    """A group that turns datom errors into one stderr line and a meaningful exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's own errors (usage, bad option) on one line too, exit code unchanged."""
        run = super().main
        if not standalone_mode:
            return run(args, prog_name, complete_var, standalone_mode=False, **extra)
        # Known before parsing, so that a usage error too is a JSON document under --json.
        as_json = "--json" in (sys.argv[1:] if args is None else list(args))
        try:
            code = run(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.Abort:
            report_error(KeyboardInterrupt(), debug=False, as_json=as_json)
            sys.exit(exit_code_for(KeyboardInterrupt()))
        except click.exceptions.NoArgsIsHelpError as e:
            e.show()  # the help itself, as asked for
            sys.exit(e.exit_code)
        except click.ClickException as e:
            if as_json:
                emit_error_json("UsageError", _one_line(e), e.exit_code)
            click.echo(f"datom: error: {_one_line(e)}", err=True)
            sys.exit(e.exit_code)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as e:
            state = ctx.find_object(AppState)
            report_error(e, debug=bool(state and state.debug), as_json=bool(state and state.json))
            ctx.exit(exit_code_for(e))


def _one_line(error: click.ClickException) -> str:
    message = " ".join(error.format_message().split())
    where = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and where is not None:
        message += f" (usage: {where.command_path} --help)"
    return message


@click.group(
    cls=DatomGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="DATOM_REPO",
    help="The project clone (developer). Default: the clone around the working directory.",
)
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    envvar="DATOM_STORE",
    help="A project store: a path, file://... or s3://bucket/prefix. With --project: read "
    "the project from it alone; in a clone: use it instead of the recorded store.",
)
@click.option(
    "--project", metavar="NAME", envvar="DATOM_PROJECT", help="The project name (reader)."
)
@click.option(
    "--endpoint-url", metavar="URL", help="S3-compatible endpoint (credentials: environment)."
)
@click.option("--region", metavar="REGION", help="S3 region.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.version_option(version=datom_core.__version__, prog_name="datom")
@click.pass_context
def cli(
    ctx: click.Context,
    repo: Path | None,
    store_url: str | None,
    project: str | None,
    endpoint_url: str | None,
    region: str | None,
    as_json: bool,
    debug: bool,
) -> None:
    """datom: versioned, content-addressed, lineage-aware tables.

    A developer works in a clone (found from the working directory, or --repo); a reader
    needs only the store: --store URL --project NAME (or DATOM_STORE / DATOM_PROJECT).
    Storage credentials come from the environment only (AWS_* variables or profiles).
    """
    options = ConnectionOptions(repo, store_url, project, endpoint_url, region)
    ctx.obj = AppState(options=options, json=as_json, debug=debug)
