"""Validation of table names and version arguments, before either reaches a path.

The rules are STORE.md's, shared with the R package, so that a name valid in one language
is valid in the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from datom_core._errors import InvalidNameError

__all__ = [
    "RESERVED_NAMES",
    "check_no_case_twin",
    "validate_project_name",
    "validate_table_name",
    "validate_version",
]

RESERVED_NAMES = frozenset(
    {"datom", "input_files", "renv", ".datom", ".metadata", ".git", ".gitignore"}
)

_TABLE = re.compile(r"[A-Za-z][A-Za-z0-9_\- ()]{0,127}")
# A table is a folder in the clone and in a local store: Windows cannot create these
# (any case, with or without an extension), nor keep a trailing space.
_DEVICE = re.compile(r"(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])", re.IGNORECASE)
_VERSION = re.compile(r"[0-9a-f]{6,64}")
_PROJECT = re.compile(r"[A-Za-z][A-Za-z0-9_\-.]{0,127}")


def validate_table_name(name: object) -> str:
    """Return ``name`` if it is a valid table name, else raise :class:`InvalidNameError`."""
    if not isinstance(name, str) or not _TABLE.fullmatch(name):
        raise InvalidNameError(
            f"invalid table name {name!r}: use 1-128 characters, a letter first, then letters, "
            "digits, '_', '-', space, '(' or ')'"
        )
    if name.lower() in RESERVED_NAMES:
        raise InvalidNameError(f"table name {name!r} is reserved; choose another name")
    if _DEVICE.fullmatch(name):
        raise InvalidNameError(
            f"table name {name!r} is a Windows device name (CON, PRN, AUX, NUL, COM1-9, "
            "LPT1-9, in any case): no folder can take it there; choose another name"
        )
    if name.endswith(" "):
        raise InvalidNameError(
            f"table name {name!r} ends with a space, which Windows drops from folder names "
            f"(it would become {name.rstrip()!r}); remove the trailing space"
        )
    return name


def check_no_case_twin(name: str, existing: Iterable[str]) -> None:
    """Refuse ``name`` if an existing table differs from it only in case: both would be
    one folder on case-insensitive filesystems (Windows, macOS)."""
    twins = sorted(t for t in existing if t != name and t.casefold() == name.casefold())
    if twins:
        raise InvalidNameError(
            f"table name {name!r} differs from the existing table {twins[0]!r} only in case: "
            "on case-insensitive filesystems (Windows, macOS) both would be one folder. "
            f"Write to {twins[0]!r}, or choose a name that differs in more than case"
        )


def validate_version(version: object) -> str:
    """Return ``version`` if it is 6-64 lowercase hex characters, else raise."""
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise InvalidNameError(
            f"invalid version {version!r}: give a metadata_sha or a unique prefix of it "
            "(6-64 lowercase hex characters)"
        )
    return version


def validate_project_name(name: object) -> str:
    """Project names become a path segment in no store, but travel in every document."""
    if not isinstance(name, str) or not _PROJECT.fullmatch(name):
        raise InvalidNameError(
            f"invalid project name {name!r}: use 1-128 characters, a letter first, then letters, "
            "digits, '_', '-' or '.'"
        )
    return name
