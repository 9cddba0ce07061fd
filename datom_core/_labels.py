"""Column labels: a variable's label, display format, value labels and declared width.

SAS, SPSS and Stata files describe their variables beside the values. datom keeps that
description in each column's Arrow field metadata, so it travels with the table into the
parquet file and back out of it, and never into identity (``data_sha`` hashes values,
``metadata_sha`` the metadata document). The keys are haven's attribute names:

=================================  ========================================================
``label``                          the variable label
``format.sas`` / ``format.spss``   the display format (``DATE9``, ``F8.2``, ``%td``), as
/ ``format.stata``                 haven spells it (no trailing period)
``labels``                         the value labels, JSON ``[[value, "label"], ...]``
``width``                          the declared storage width in bytes (a SAS length)
=================================  ========================================================

Only these keys are kept from a table a caller hands in: other field metadata (Arrow
extension types, parquet field ids) is not datom's to carry.

R reads them back through the schema metadata key ``r``, where R's arrow package keeps a
data frame's column attributes (``serialize()`` text of ``list(columns = list(<col> =
list(attributes = ..., columns = NULL), ...))``, arrow's ``r/R/metadata.R``). datom writes
that key for a labelled table with the attributes ``rio::import`` gives such a column
(R datom's reader): ``label``, ``format.<family>``, ``labels`` as a named vector, in that
order. The width has no haven attribute and stays in the field metadata only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from datom_core._rserialize import RChar, RList, RReal, RValue, serialize_ascii

__all__ = [
    "FORMAT_KEYS",
    "LABEL_KEYS",
    "R_METADATA_KEY",
    "ColumnLabels",
    "column_labels",
    "kept_field",
    "label_metadata",
    "labelled_schema",
    "r_metadata",
    "with_r_metadata",
]

LABEL, LABELS, WIDTH = b"label", b"labels", b"width"
FORMAT_KEYS = (b"format.sas", b"format.spss", b"format.stata")
LABEL_KEYS = (LABEL, *FORMAT_KEYS, LABELS, WIDTH)
R_METADATA_KEY = b"r"

ValueLabels = tuple[tuple[float | str, str], ...]


@dataclass(frozen=True)
class ColumnLabels:
    """What a SAS, SPSS or Stata file said about one column (all parts optional).

    ``label`` is the variable label; ``format`` the display format and ``family`` the
    software it is written for (``sas``, ``spss``, ``stata``); ``value_labels`` the
    ``(value, label)`` pairs in file order; ``width`` the declared storage width in bytes.
    """

    label: str | None = None
    format: str | None = None
    family: str | None = None
    value_labels: ValueLabels = ()
    width: int | None = None

    def describe(self) -> str:
        """One line for people: ``Sex [format $1; 1 = Male, 2 = Female; width 1]``."""
        details = []
        if self.format:
            details.append(f"format {self.format}")
        if self.value_labels:
            details.append(", ".join(f"{_shown(v)} = {text}" for v, text in self.value_labels))
        if self.width is not None:
            details.append(f"width {self.width}")
        label = self.label or ""
        if not details:
            return label
        return f"{label} [{'; '.join(details)}]".lstrip()


def _shown(value: float | str) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def label_metadata(labels: ColumnLabels) -> dict[bytes, bytes]:
    """The field metadata that records ``labels`` (empty when there is nothing to record)."""
    meta: dict[bytes, bytes] = {}
    if labels.label:
        meta[LABEL] = labels.label.encode()
    if labels.format and labels.family:
        meta[f"format.{labels.family}".encode()] = labels.format.encode()
    if labels.value_labels:
        pairs = [[v, text] for v, text in labels.value_labels]
        meta[LABELS] = json.dumps(pairs, ensure_ascii=False, allow_nan=False).encode()
    if labels.width is not None:
        meta[WIDTH] = str(labels.width).encode()
    return meta


def _from_field(meta: Mapping[bytes, bytes] | None) -> ColumnLabels | None:
    if not meta:
        return None
    fmt = next(((k, meta[k]) for k in FORMAT_KEYS if k in meta), None)
    pairs: ValueLabels = ()
    if LABELS in meta:
        try:
            pairs = tuple((_value(v), str(text)) for v, text in json.loads(meta[LABELS]))
        except (ValueError, TypeError):
            pairs = ()  # written by someone else in another shape: not ours to guess
    width = meta.get(WIDTH, b"")
    found = ColumnLabels(
        label=meta[LABEL].decode() if LABEL in meta else None,
        format=fmt[1].decode() if fmt else None,
        family=fmt[0].decode().removeprefix("format.") if fmt else None,
        value_labels=pairs,
        width=int(width) if width.isdigit() else None,
    )
    return found if found != ColumnLabels() else None


def _value(v: Any) -> float | str:
    return v if isinstance(v, str) else float(v)


def column_labels(schema: pa.Schema) -> dict[str, ColumnLabels]:
    """The labels recorded for each column of ``schema`` (columns without any are left out).

    ``schema`` is a table's (``conn.read(..., as_="arrow").schema``, a parquet file's
    ``pyarrow.parquet.read_schema``, or that of ``read_extract``'s result).
    """
    found = {}
    for f in schema:
        labels = _from_field(f.metadata)
        if labels is not None:
            found[f.name] = labels
    return found


def kept_field(f: pa.Field) -> pa.Field:
    """``f`` with only the label keys of its metadata (none: ``f`` without metadata)."""
    if not f.metadata:
        return f
    kept = {k: v for k, v in f.metadata.items() if k in LABEL_KEYS}
    return f.with_metadata(kept) if kept else f.remove_metadata()


def with_r_metadata(schema: pa.Schema) -> pa.Schema:
    """``schema`` with R arrow's ``r`` key describing its labelled columns (if any)."""
    text = r_metadata(schema)
    if text is None:
        return schema
    meta = dict(schema.metadata or {})
    meta[R_METADATA_KEY] = text.encode()
    return schema.with_metadata(meta)


def r_metadata(schema: pa.Schema) -> str | None:
    """The ``r`` value R's arrow would write for these columns' haven attributes, or None."""
    columns: list[tuple[str, RValue]] = []
    any_attributes = False
    for f in schema:
        attributes = _r_attributes(_from_field(f.metadata), f.type)
        any_attributes = any_attributes or bool(attributes)
        entry = RList([("attributes", RList(attributes)), ("columns", None)])
        columns.append((f.name, entry if attributes else None))
    if not any_attributes:
        return None
    return serialize_ascii(RList([("columns", RList(columns))]))


def _r_attributes(labels: ColumnLabels | None, t: pa.DataType) -> list[tuple[str, RValue]]:
    if labels is None:
        return []
    attributes: list[tuple[str, RValue]] = []
    if labels.label:
        attributes.append(("label", RChar([labels.label])))
    if labels.format and labels.family:
        attributes.append((f"format.{labels.family}", RChar([labels.format])))
    vector = _r_value_labels(labels.value_labels, t)
    if vector is not None:
        attributes.append(("labels", vector))
    return attributes


def _r_value_labels(pairs: ValueLabels, t: pa.DataType) -> RValue:
    if not pairs:
        return None
    names = [text for _, text in pairs]
    values = [v for v, _ in pairs]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if all(isinstance(v, str) for v in values):
            return RChar([str(v) for v in values], names)
        return None
    if all(not isinstance(v, str) for v in values):
        return RReal([float(v) for v in values], names)
    return None  # labels of another type than the column's: R would refuse them


def labelled_schema(fields: Sequence[pa.Field], labels: Mapping[str, ColumnLabels]) -> pa.Schema:
    """A schema of ``fields`` whose named columns carry ``labels`` in their metadata."""
    out = []
    for f in fields:
        meta = label_metadata(labels[f.name]) if f.name in labels else {}
        out.append(f.with_metadata(meta) if meta else f)
    return pa.schema(out)
