"""Which reader reads a file: by its lowercase extension (the package docstring lists them)."""

from __future__ import annotations

import codecs
import os
import posixpath
from typing import Any

import pyarrow as pa

from datom_core._onboard._readers._common import Source, check_column_names
from datom_core._onboard._readers._excel import read_excel
from datom_core._onboard._readers._parquet import read_parquet
from datom_core._onboard._readers._stat import read_statistical
from datom_core._onboard._readers._text import read_delimited

__all__ = ["SUPPORTED_FORMATS", "detect_format", "read_file", "unsupported_recourse"]

SUPPORTED_FORMATS: frozenset[str] = frozenset(
    {
        "csv",
        "tsv",
        "txt",
        "psv",
        "parquet",
        "sas7bdat",
        "xpt",
        "sav",
        "zsav",
        "por",
        "dta",
        "xls",
        "xlsx",
    }
)
"""The lowercase file extensions datom can onboard (anything else is ``unsupported_format``)."""

_TEXT = frozenset({"csv", "tsv", "txt", "psv"})
_STATISTICAL = frozenset({"sas7bdat", "xpt", "sav", "zsav", "por", "dta"})
_EXCEL = frozenset({"xls", "xlsx"})


def detect_format(path_or_name: str | os.PathLike[str]) -> str | None:
    """The file's lowercase extension if datom can onboard it, else ``None``.

    Only the last extension counts: ``dm.csv.gz`` is ``None`` (compressed files are not
    onboarded), ``s3://bucket/DM.CSV`` is ``"csv"``.
    """
    extension = _extension(path_or_name)
    return extension if extension in SUPPORTED_FORMATS else None


def unsupported_recourse(fmt: str) -> str:
    """What to do with a file whose format datom does not onboard."""
    shown = f".{fmt.lower().lstrip('.')} files" if fmt else "files without an extension"
    return (
        f"datom does not onboard {shown}: read it yourself and write it as a derived "
        "table, or convert it once to csv/parquet"
    )


def read_file(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    filesystem: Any = None,
    encoding: str | None = None,
) -> pa.Table:
    """Read one onboarding file into a ``pyarrow.Table``.

    ``format`` overrides the extension (one of :data:`SUPPORTED_FORMATS`, a leading dot
    and any case allowed). ``filesystem`` is an optional fsspec filesystem (s3, memory,
    ...) on which ``path`` lives; without it ``path`` is on the local disk.

    ``encoding`` names the encoding of the file's text (``"cp1252"``, ``"latin1"``,
    ``"utf-8"``, ...) for delimited text (default UTF-8) and SAS/SPSS/Stata files
    (default: the encoding the file declares; when its text is not valid in it, datom
    reads it as Windows-1252, then Latin-1, with an :class:`~datom_core.OnboardingWarning`
    naming the one used). Excel and parquet files hold Unicode and ignore it.

    Raises :class:`~datom_core.OnboardingError` for an unsupported format, a missing,
    empty, corrupt or unreadable file, and empty or duplicate column names; the
    underlying library error, if any, is the ``__cause__``.
    """
    shown = os.fspath(path)
    fmt = format.lower().lstrip(".") if format else _extension(shown)
    source = Source(path=shown, fmt=fmt or "unknown", filesystem=filesystem)
    if fmt not in SUPPORTED_FORMATS:
        problem = f"'.{fmt}' is not a supported format" if fmt else "the file has no extension"
        raise source.fail(problem, unsupported_recourse(fmt))
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError as e:
            raise source.fail(
                f"the encoding {encoding!r} is not known",
                "name a standard encoding such as 'cp1252', 'latin1' or 'utf-8'",
            ) from e
    if source.size() == 0:
        raise source.fail("the file is empty (0 bytes)", "export the table again")
    table = _read(source, encoding)
    check_column_names(source, table.column_names)
    return table


def _read(source: Source, encoding: str | None) -> pa.Table:
    if source.fmt in _TEXT:
        return read_delimited(source, encoding=encoding)
    if source.fmt in _STATISTICAL:
        return read_statistical(source, encoding=encoding)
    if source.fmt in _EXCEL:
        return read_excel(source)
    return read_parquet(source)


def _extension(path_or_name: str | os.PathLike[str]) -> str:
    name = posixpath.basename(os.fspath(path_or_name).replace("\\", "/"))
    stem, dot, extension = name.rpartition(".")
    return extension.lower() if dot and stem else ""
