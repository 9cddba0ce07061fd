"""Naming a set version on the command line: ``NAME[@VERSION]`` or the pin form
``<project>/<set>[@<version>]`` that a data cut prints (``datom/as_of_set``)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from datom_core import Connection, SetVersion

__all__ = ["SetRef", "hex_lower", "open_set"]

_HEX = frozenset("0123456789abcdefABCDEF")


def hex_lower(version: str | None) -> str | None:
    """A version id or prefix as stored (lowercase): ids are hex, so case carries nothing."""
    if version and all(c in _HEX for c in version):
        return version.lower()
    return version


@dataclass(frozen=True)
class SetRef:
    """A set named on the command line: its project (None: this one), name, version."""

    project: str | None
    name: str | None
    version: str | None

    @classmethod
    def parse(cls, text: str) -> SetRef:
        """``NAME``, ``NAME@VERSION``, ``@VERSION``, ``<project>/<set>[@<version>]``.

        A set name never holds ``/`` or ``@`` (it is a table name), so both split cleanly.
        """
        project, slash, rest = text.partition("/")
        if not slash:
            project, rest = "", text
        name, _, version = rest.partition("@")
        return cls(project or None, name or None, hex_lower(version) or None)


def open_set(conn: Connection, ref: SetRef, option: str) -> SetVersion:
    """The set version ``ref`` names, read through ``conn`` (the project holding the set)."""
    if ref.project is not None and ref.project != conn.project_name:
        raise click.UsageError(
            f"{option}: set {ref.name!r} is in project {ref.project!r}, and this command runs "
            f"on project {conn.project_name!r}. Run it from that product repo's clone "
            f"(datom --repo PATH ...) or its store (datom --store URL --project {ref.project} ...)"
        )
    return conn.get_set(ref.version, name=ref.name)
