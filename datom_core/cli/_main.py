"""The ``datom`` command group with every command registered, and its entry point."""

from __future__ import annotations

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
from datom_core.cli._commands_sets import set_group
from datom_core.cli._commands_tables import (
    diff_command,
    history_command,
    lineage_command,
    list_command,
    read_command,
    show_command,
)

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


def main() -> None:
    """Entry point of the ``datom`` console script."""
    cli(prog_name="datom")
