"""Output for humans (rich tables) and for scripts (JSON): one place decides the shapes."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = [
    "emit_json",
    "make_console",
    "human_size",
    "print_table",
    "print_fields",
    "short",
    "to_jsonable",
]

# Full SHA-256 ids are 64 characters; humans recognise a version by its first 12, as in git.
SHORT_SHA = 12
# Piped human output is read in files and logs, not in an 80-column terminal.
_PIPED_WIDTH = 120


def make_console(*, stderr: bool) -> Console:
    """A console that never interprets data as markup (table names, commit messages...)."""
    console = Console(stderr=stderr, markup=False, highlight=False, emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _PIPED_WIDTH
    return console


def to_jsonable(value: Any) -> Any:
    """Records (frozen dataclasses), tuples, mappings and paths as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (one document per command)."""
    click.echo(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False))


def short(sha: str | None) -> str:
    """The first characters of a SHA-256 id, for tables; ``-`` for none."""
    return sha[:SHORT_SHA] if sha else "-"


def human_size(n: int | None) -> str:
    """``1536`` -> ``1.5 KiB``."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def print_table(
    console: Console,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    empty: str = "(none)",
) -> None:
    """A rich table; ``empty`` is printed instead when there are no rows."""
    rows = list(rows)
    if not rows:
        console.print(empty)
        return
    table = Table(title=title, header_style="bold", title_justify="left")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    console.print(table)


def print_fields(console: Console, fields: Iterable[tuple[str, Any]]) -> None:
    """``name: value`` lines, names aligned."""
    fields = list(fields)
    width = max((len(name) for name, _ in fields), default=0)
    for name, value in fields:
        console.print(f"{name + ':':<{width + 1}} {'-' if value is None else value}")
