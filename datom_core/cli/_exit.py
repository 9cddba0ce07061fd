"""Exit codes of ``datom`` and the one-line error report (see the package docstring)."""

from __future__ import annotations

import json
import traceback

import click

from datom_core import DatomError, IntegrityError, InvalidArgumentError, NotFoundError
from datom_core.cli._remedies import cli_remedies

__all__ = [
    "EXIT_DATOM",
    "EXIT_FINDING",
    "EXIT_INTEGRITY",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_CODES_HELP",
    "emit_error_json",
    "error_message",
    "exit_code_for",
    "report_error",
]

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_INTEGRITY = 4
EXIT_DATOM = 5
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in datom, not a problem with the project
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

EXIT_CODES_HELP = """\
Exit codes:

\b
  0   ok
  1   a finding: validate found problems, check-hashable refused the file,
      sync could not onboard a file
  2   usage error (bad option or argument, malformed table name or version)
  3   not found (table, version, column, project or file)
  4   integrity error (stored bytes, or the table with --verify content, do not
      match their recorded hash; a document of the wrong shape)
  5   any other datom error (store, git, read-only connection, onboarding...)
  70  internal error (a bug: please report it with the --debug output)
  130 interrupted
"""


def exit_code_for(error: BaseException) -> int:
    """The exit code that tells a script what kind of failure ``error`` is."""
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(error, InvalidArgumentError):  # a malformed name is one too
        return EXIT_USAGE
    if isinstance(error, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(error, IntegrityError):
        return EXIT_INTEGRITY
    if isinstance(error, DatomError):
        return EXIT_DATOM
    return EXIT_INTERNAL


def error_message(error: BaseException, *, debug: bool = False) -> str:
    """What the one-line report says about ``error`` (remedies named as CLI commands)."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, DatomError):
        return cli_remedies(str(error) or type(error).__name__)
    hint = "" if debug else "; run with --debug for the traceback and report it"
    return f"internal error ({type(error).__name__}: {error}){hint}"


def report_error(error: BaseException, *, debug: bool, as_json: bool = False) -> None:
    """``datom: error: <message>`` on stderr; the traceback first only with ``--debug``.

    With ``--json`` the error is also the one JSON document on stdout:
    ``{"error": {"type", "message", "exit_code"}}``.
    """
    if debug:
        click.echo("".join(traceback.format_exception(error)).rstrip(), err=True)
    message = error_message(error, debug=debug)
    if as_json:
        emit_error_json(type(error).__name__, message, exit_code_for(error))
    # Continuation lines (e.g. one per refused column) are indented under the first.
    click.echo("datom: error: " + message.replace("\n", "\n  "), err=True)


def emit_error_json(kind: str, message: str, code: int) -> None:
    """The error document of ``--json`` on stdout (scripts read stdout only)."""
    document = {"error": {"type": kind, "message": message, "exit_code": code}}
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
