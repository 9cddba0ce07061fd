"""The table types the IO manager stores and loads: pandas, polars and pyarrow.

Outputs: a pandas ``DataFrame``, a polars ``DataFrame`` (a ``LazyFrame`` is collected), or
a pyarrow ``Table`` / ``RecordBatch``. Anything else is refused before anything is written.

Inputs are returned as the type the input is annotated with: ``pd.DataFrame`` (also the
default when the input is not annotated), ``pl.DataFrame``, ``pl.LazyFrame`` or
``pa.Table``; ``dict[str, <one of those>]`` asks for several partitions keyed by partition.
"""

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

import datom_core as dc

__all__ = [
    "InputSpec",
    "concat",
    "from_read",
    "input_spec",
    "output_table",
    "read_kind",
]

Kind = Literal["pandas", "polars", "polars_lazy", "arrow"]

_SUPPORTED = "a pandas DataFrame, a polars DataFrame or LazyFrame, or a pyarrow Table"


@dataclass(frozen=True)
class InputSpec:
    """How to hand loaded tables to the asset: their type, and whether as a dict."""

    kind: Kind
    as_dict: bool = False  # the input is annotated dict[str, <table>]
    annotated: bool = False  # annotated with a table type (not Any / unannotated)


def output_table(obj: Any, asset: str) -> Any:
    """``obj`` as something datom writes, or :class:`~datom_core.DatomError` naming the fix."""
    if isinstance(obj, pd.DataFrame | pa.Table | pa.RecordBatch):
        return obj
    if _is_polars(obj, "DataFrame"):
        return obj
    if _is_polars(obj, "LazyFrame"):
        return obj.collect()
    got = "None" if obj is None else f"{type(obj).__module__}.{type(obj).__qualname__}"
    hint = (
        " If the asset produces nothing, annotate it `-> None` or give it another IO manager."
        if obj is None
        else ""
    )
    raise dc.UnsupportedInputError(
        f"asset {asset}: DatomIOManager stores {_SUPPORTED}; the asset returned {got}. "
        f"Return one of those, or use another IO manager for this asset.{hint} "
        "Nothing was written."
    )


def input_spec(typing_type: Any, asset: str) -> InputSpec:
    """What the input's annotation asks for; :class:`~datom_core.DatomError` if unsupported."""
    origin = typing.get_origin(typing_type)
    if origin in (dict, Mapping, typing.Mapping) or typing_type in (dict, Mapping):
        args = typing.get_args(typing_type)
        return InputSpec(_kind(args[1] if len(args) == 2 else Any, asset), as_dict=True)
    annotated = typing_type not in (Any, object, None, type(None))
    return InputSpec(_kind(typing_type, asset), annotated=annotated)


def _kind(t: Any, asset: str) -> Kind:
    if t in (Any, object, None, type(None)) or t is pd.DataFrame:
        return "pandas"
    if t is pa.Table:
        return "arrow"
    if _is_polars_type(t, "DataFrame"):
        return "polars"
    if _is_polars_type(t, "LazyFrame"):
        return "polars_lazy"
    raise dc.UnsupportedInputError(
        f"input {asset}: DatomIOManager loads tables as pd.DataFrame (the default), "
        f"pl.DataFrame, pl.LazyFrame or pa.Table (or a dict[str, ...] of them for several "
        f"partitions), not {t!r}; change the input's annotation"
    )


def read_kind(kind: Kind) -> Literal["pandas", "polars", "arrow"]:
    """The ``as_`` argument of :meth:`datom_core.Connection.read` for ``kind``."""
    return "polars" if kind == "polars_lazy" else kind


def from_read(table: Any, kind: Kind) -> Any:
    """What :meth:`Connection.read` returned, as ``kind`` (a LazyFrame from a DataFrame)."""
    return table.lazy() if kind == "polars_lazy" else table


def concat(tables: Sequence[Any], kind: Kind) -> Any:
    """Several partitions' tables (as read for ``kind``) stacked into one, in order."""
    if kind == "pandas":
        return pd.concat(list(tables), ignore_index=True)
    if kind == "arrow":
        return pa.concat_tables(list(tables), promote_options="default")
    import polars as pl

    return from_read(pl.concat(list(tables), how="vertical_relaxed"), kind)


def _is_polars(obj: Any, name: str) -> bool:
    return _is_polars_type(type(obj), name)


def _is_polars_type(t: Any, name: str) -> bool:
    return isinstance(t, type) and t.__module__.split(".")[0] == "polars" and t.__name__ == name
