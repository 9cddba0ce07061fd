"""The ``datom`` command group with every command registered, and its entry point."""

from __future__ import annotations

import logging
import os
import sys

import click

from datom_core.cli._app import cli
from datom_core.cli._commands_inbox import (
    check_hashable_command,
    scan_command,
    sync_command,
)
from datom_core.cli._commands_project import (
    clone_command,
    init_command,
    status_command,
    validate_command,
)
from datom_core.cli._commands_read import read_command
from datom_core.cli._commands_sets import set_group
from datom_core.cli._commands_tables import (
    diff_command,
    history_command,
    lineage_command,
    list_command,
    show_command,
)
from datom_core.cli._exit import EXIT_CODES_HELP

__all__ = ["cli", "main"]

for _command in (
    init_command,
    clone_command,
    status_command,
    list_command,
    history_command,
    show_command,
    read_command,
    lineage_command,
    diff_command,
    scan_command,
    sync_command,
    validate_command,
    check_hashable_command,
    set_group,
):
    cli.add_command(_command)


def _with_exit_codes(command: click.Command) -> None:
    """Every command's help ends with the exit-code table (the same for all of them)."""
    command.epilog = EXIT_CODES_HELP
    for sub in getattr(command, "commands", {}).values():
        _with_exit_codes(sub)


_with_exit_codes(cli)


def main() -> None:
    """Entry point of the ``datom`` console script.

    The process ends by ``os._exit`` once its output is flushed, skipping the interpreter's
    teardown: Arrow's native thread pools can abort a finishing interpreter ("terminate
    called without an active exception", apache/arrow#34314) after a command has done all
    its work, which would turn its exit code into 134. Nothing of datom's runs at exit.
    """
    try:
        cli(prog_name="datom")
        code: object = 0
    except SystemExit as e:
        code = e.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what sys.exit("message") prints
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    logging.shutdown()
    os._exit(code or 0)
