"""A SAS, SPSS or Stata file's variable metadata as column labels (see ``datom_core._labels``).

pyreadstat reads the metadata with the file's header; this turns it into the field
metadata the table carries: labels, display formats, value labels and declared widths.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from datom_core._labels import ColumnLabels, labelled_schema

__all__ = ["with_file_labels"]


def with_file_labels(table: pa.Table, meta: Any, family: str) -> pa.Table:
    """``table`` whose columns carry what ``meta`` (pyreadstat's metadata) says of them."""
    labels = {name: _column(meta, name, family) for name in table.column_names}
    schema = labelled_schema(list(table.schema), labels)
    return pa.Table.from_arrays(table.columns, schema=schema)


def _column(meta: Any, name: str, family: str) -> ColumnLabels:
    label = (meta.column_names_to_labels or {}).get(name) or None
    fmt = (meta.original_variable_types or {}).get(name) or None
    if fmt and family == "sas":
        fmt = fmt.rstrip(".") or None  # pyreadstat says DATE9., haven (and SAS users) DATE9
    values = (meta.variable_value_labels or {}).get(name) or {}
    width = (meta.variable_storage_width or {}).get(name)
    return ColumnLabels(
        label=label,
        format=fmt,
        family=family,
        value_labels=tuple((_value(v), str(text)) for v, text in values.items()),
        width=int(width) if isinstance(width, int) and width > 0 else None,
    )


def _value(v: Any) -> float | str:
    return v if isinstance(v, str) else float(v)
