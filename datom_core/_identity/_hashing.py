"""The identity functions behind ``hash_table``, ``check_hashable`` and ``file_sha``.

They glue the Arrow boundary (``_arrow``) to the cv1 encoders (``_cv1``). A table is
checked completely before anything is hashed, so a refusal names every offending column
at once and nothing downstream (git, store, manifest) is touched.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from datom_core._arrow import ConvertedTable, to_arrow
from datom_core._errors import NotFoundError, StoreError, UnhashableColumnsError
from datom_core._identity._cv1 import ColumnHash, TableHash, column_problem, hash_arrow_table

__all__ = [
    "ColumnHash",
    "ColumnReport",
    "HashabilityReport",
    "TableHash",
    "check_hashable",
    "file_sha",
    "hash_table",
    "prepare_table",
]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ColumnReport:
    """One row of a :class:`HashabilityReport`."""

    column: str
    dtype: str
    status: str  # "ok" | "unsupported"
    recourse: str = ""


@dataclass(frozen=True)
class HashabilityReport:
    """Whether a table can be versioned, column by column, with what to do about each refusal."""

    columns: tuple[ColumnReport, ...]

    @property
    def ok(self) -> bool:
        """Whether every column can be versioned."""
        return all(c.status == "ok" for c in self.columns)

    @property
    def unsupported(self) -> tuple[ColumnReport, ...]:
        """The columns that cannot be versioned, each with its recourse."""
        return tuple(c for c in self.columns if c.status != "ok")

    def __str__(self) -> str:
        rows = [("column", "dtype", "status", "recourse")]
        rows += [(c.column, c.dtype, c.status, c.recourse) for c in self.columns]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            "  ".join(r[i].ljust(widths[i]) for i in range(3)) + ("  " + r[3] if r[3] else "")
            for r in rows
        ]
        return "\n".join(line.rstrip() for line in lines)


def check_hashable(data: Any) -> HashabilityReport:
    """Report, per column, whether ``data`` can be hashed and the recourse if not.

    Never raises for unsupported columns; never mutates ``data``.
    """
    return _report(to_arrow(data))


def _report(converted: ConvertedTable) -> HashabilityReport:
    rows = [
        ColumnReport(what, "", "unsupported", recourse) for what, recourse in converted.problems
    ]
    if not converted.columns:
        rows.append(
            ColumnReport(
                "(table)",
                "",
                "unsupported",
                "the table has zero columns: there is no table to version",
            )
        )
    seen: dict[str, int] = {}
    for col in converted.columns:
        if isinstance(col.name, str):
            seen[col.name] = seen.get(col.name, 0) + 1
    for col in converted.columns:
        problem = col.problem
        if problem is None and isinstance(col.name, str) and seen[col.name] > 1:
            problem = "the column name is duplicated: rename the columns so each is unique"
        if problem is None and col.array is not None:
            problem = column_problem(col.name, col.array)
        status = "ok" if problem is None else "unsupported"
        rows.append(ColumnReport(str(col.name), col.dtype, status, problem or ""))
    return HashabilityReport(tuple(rows))


# The tables prepare_table made, while they live: the Dagster IO manager prepares a table
# (for the column schema it shows) and then writes it, which would check it again.
_PREPARED: weakref.WeakValueDictionary[int, pa.Table] = weakref.WeakValueDictionary()


def prepare_table(data: Any, *, table: str | None = None) -> pa.Table:
    """The Arrow table a write of ``data`` stores and hashes, or raise naming every problem.

    Writing the result gives the same version as writing ``data``: a caller that needs the
    table too (its schema, say) converts once. :class:`UnhashableColumnsError` lists every
    unsupported column at once (``table`` names the table in the message).
    """
    if isinstance(data, pa.Table) and _PREPARED.get(id(data)) is data:
        return data  # it passed every check when it was made (Arrow tables do not change)
    converted = to_arrow(data)
    report = _report(converted)
    if not report.ok:
        where = f"table {table!r}: " if table else ""
        lines = [f"  - {c.column} ({c.dtype or 'table'}): {c.recourse}" for c in report.unsupported]
        raise UnhashableColumnsError(
            f"{where}datom cannot hash {len(lines)} column(s); nothing was written. Fix each:\n"
            + "\n".join(lines),
            report,
        )
    prepared = converted.table()
    _PREPARED[id(prepared)] = prepared
    return prepared


def hash_table(data: Any) -> TableHash:
    """The datom-cv1 identity of a pandas/polars DataFrame or pyarrow Table/RecordBatch.

    Raises :class:`UnhashableColumnsError` listing every unsupported column with its recourse.
    """
    return hash_arrow_table(prepare_table(data))


def file_sha(path_or_url: str | os.PathLike[str], **storage_options: Any) -> str:
    """Streaming SHA-256 of a file's bytes (a local path or any fsspec URL), in constant memory."""
    import fsspec

    try:
        with fsspec.open(os.fspath(path_or_url), "rb", **storage_options) as f:
            h = hashlib.sha256()
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except FileNotFoundError as e:
        raise NotFoundError(f"file {os.fspath(path_or_url)!r} does not exist") from e
    except OSError as e:
        raise StoreError(f"cannot read {os.fspath(path_or_url)!r}: {e}") from e
    return h.hexdigest()
