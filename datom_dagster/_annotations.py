"""Typed datom options on assets and inputs, checked when the definitions load.

On an asset, :func:`datom_annotations` builds the definition metadata::

    @asset(metadata=datom_annotations(table="dm", key=["USUBJID"], description="..."))

* ``table``: the datom table (default: from the asset key, see :mod:`datom_dagster._naming`);
* ``key``: the columns that identify a row; the change summary then counts rows added,
  removed and changed by key;
* ``description``: recorded in each version's ``custom`` metadata (so a new description
  makes a ``metadata_only`` version).

On an input, :func:`datom_pin` builds the ``AssetIn`` metadata::

    AssetIn(metadata=datom_pin(version="99d8c9e8"))

* ``version``: a version id or unique prefix (for several partitions, a dict
  ``{partition_key: version}``); ``set``: ``"<project>/<set>@<version>"`` (sets);
* ``columns``, ``concat`` and ``allow_missing_partitions`` as in
  :class:`~datom_dagster.DatomIOManager`.

The helpers are shorthand for the loose keys (``datom_table``, ``datom_key``,
``datom_description``; ``datom_version``, ``datom_set``, ``columns``, ``datom_concat``,
``allow_missing_partitions``), which keep working. :func:`validate_datom_definitions`
checks both forms on every asset of a :class:`dagster.Definitions` and fails naming the
asset and the input (``DatomComponent`` runs it on load; call it on your own
``Definitions``): an unknown ``datom_*`` option, a bad version prefix or a bad table name
stops the code location from loading instead of failing a run.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

import datom_core as dc
from dagster import AssetsDefinition, AssetSpec, Definitions

__all__ = [
    "ASSET_OPTIONS",
    "INPUT_OPTIONS",
    "asset_option_problems",
    "datom_annotations",
    "datom_pin",
    "input_option_problems",
    "plain",
    "validate_datom_definitions",
]

ASSET_OPTIONS = ("datom_table", "datom_key", "datom_description")
INPUT_OPTIONS = (
    "datom_version",
    "datom_set",
    "columns",
    "datom_concat",
    "allow_missing_partitions",
)
# A set name may hold spaces ("STUDY-001 DB lock"), never at either end.
_SET_PIN = re.compile(r"[^/@\s]+/[^/@\s](?:[^/@]*[^/@\s])?(@[0-9a-f]{6,64})?")


def datom_annotations(
    *,
    table: str | None = None,
    key: Sequence[str] | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """Definition metadata for a datom asset, checked now::

        @asset(metadata=datom_annotations(table="dm", key=["USUBJID"], description="..."))

    * ``table``: the datom table (default: from the asset key, see
      :func:`~datom_dagster.table_name`);
    * ``key``: the columns that identify a row; the change summary then counts rows added,
      removed and changed by key;
    * ``description``: recorded in each version's ``custom`` metadata (so a new description
      makes a ``metadata_only`` version).

    It is shorthand for the loose keys ``datom_table``, ``datom_key`` and
    ``datom_description``, which keep working.
    """
    options: dict[str, Any] = {}
    if table is not None:
        options["datom_table"] = table
    if key is not None:
        options["datom_key"] = list(key)
    if description is not None:
        options["datom_description"] = description
    _raise(asset_option_problems(options), "datom_annotations()")
    return options


def datom_pin(
    *,
    version: str | Mapping[str, str] | None = None,
    set: str | None = None,  # noqa: A002  (the option's name in the issue and the docs)
    columns: Sequence[str] | None = None,
    concat: bool | None = None,
    allow_missing_partitions: bool | None = None,
) -> dict[str, Any]:
    """``AssetIn`` metadata pinning an input, checked now::

        AssetIn(metadata=datom_pin(version="99d8c9e8"))

    * ``version``: a version id or unique prefix (for several partitions, a dict
      ``{partition_key: version}``);
    * ``set``: ``"<project>/<set>[@<version>]"``, the version a set (a data cut) pins for
      this input's table;
    * ``columns``: the columns to read; ``concat``: several partitions as one table;
      ``allow_missing_partitions``: skip partitions never stored (as in
      :class:`~datom_dagster.DatomIOManager`).

    It is shorthand for the loose keys ``datom_version``, ``datom_set``, ``columns``,
    ``datom_concat`` and ``allow_missing_partitions``, which keep working.
    """
    options: dict[str, Any] = {}
    if version is not None:
        options["datom_version"] = dict(version) if isinstance(version, Mapping) else version
    if set is not None:
        options["datom_set"] = set
    if columns is not None:
        options["columns"] = list(columns)
    if concat is not None:
        options["datom_concat"] = concat
    if allow_missing_partitions is not None:
        options["allow_missing_partitions"] = allow_missing_partitions
    _raise(input_option_problems(options), "datom_pin()")
    return options


def plain(value: Any) -> Any:
    """A metadata value as given (Dagster may have wrapped it in a ``MetadataValue``)."""
    return getattr(value, "value", value)


def asset_option_problems(metadata: Mapping[str, Any]) -> list[str]:
    """What is wrong with an asset's datom options (empty: nothing)."""
    problems = _unknown(metadata, ASSET_OPTIONS)
    if "datom_table" in metadata:
        try:
            dc.validate_table_name(plain(metadata["datom_table"]))
        except dc.InvalidNameError as e:
            problems.append(f"datom_table: {e}")
    if "datom_key" in metadata and not _names(plain(metadata["datom_key"])):
        problems.append("datom_key must be a non-empty list of column names")
    description = plain(metadata.get("datom_description", ""))
    if not isinstance(description, str):
        problems.append("datom_description must be a string")
    return problems


def input_option_problems(metadata: Mapping[str, Any]) -> list[str]:
    """What is wrong with an input's datom options (empty: nothing)."""
    problems = _unknown(metadata, INPUT_OPTIONS)
    version = plain(metadata.get("datom_version"))
    if version is not None and "datom_set" in metadata:
        problems.append("give datom_version or datom_set, not both")
    versions = version.values() if isinstance(version, Mapping) else [version]
    for v in versions:
        if v is None and not isinstance(version, Mapping):
            continue
        try:
            dc.validate_version(v)
        except dc.InvalidNameError as e:
            problems.append(f"datom_version: {e}")
    pin = plain(metadata.get("datom_set"))
    if pin is not None and not (isinstance(pin, str) and _SET_PIN.fullmatch(pin)):
        problems.append(
            f"datom_set {pin!r} must read '<project>/<set>' or '<project>/<set>@<version>'"
        )
    if "columns" in metadata and not _names(plain(metadata["columns"])):
        problems.append("columns must be a non-empty list of column names")
    for flag in ("datom_concat", "allow_missing_partitions"):
        if flag in metadata and not isinstance(plain(metadata[flag]), bool):
            problems.append(f"{flag} must be true or false")
    return problems


def validate_datom_definitions(defs: Definitions) -> Definitions:
    """``defs``, after checking every asset's and input's datom options.

    It checks both forms (:func:`datom_annotations` / :func:`datom_pin` and the loose keys)
    on every asset of ``defs``: an unknown ``datom_*`` option, a bad version prefix or a bad
    table name stops the code location from loading instead of failing a run.
    ``DatomComponent`` runs it on load; call it on your own ``Definitions``. Raises :class:`datom_core.InvalidArgumentError` listing every problem, each naming its
    asset (and input).
    """
    problems: list[str] = []
    for item in defs.assets or ():
        if isinstance(item, AssetsDefinition):
            for key in sorted(item.keys, key=lambda k: k.to_user_string()):
                spec = item.get_asset_spec(key)
                problems += _named(key.to_user_string(), asset_option_problems(spec.metadata))
            for name, given in item.op.ins.items():
                where = f"{_label(item)}, input {name}"
                problems += _named(where, input_option_problems(given.metadata or {}))
        elif isinstance(item, AssetSpec):
            problems += _named(item.key.to_user_string(), asset_option_problems(item.metadata))
    _raise(problems, "the definitions")
    return defs


def _label(item: AssetsDefinition) -> str:
    return ", ".join(sorted(k.to_user_string() for k in item.keys))


def _named(where: str, problems: list[str]) -> list[str]:
    return [f"asset {where}: {p}" for p in problems]


def _unknown(metadata: Mapping[str, Any], known: Sequence[str]) -> list[str]:
    return [
        f"unknown datom option {k!r} (known: {', '.join(known)})"
        for k in metadata
        if k.startswith("datom_") and k not in known
    ]


def _names(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(v, str) and v for v in value)
    )


def _raise(problems: list[str], where: str) -> None:
    if problems:
        raise dc.InvalidArgumentError(
            f"{where}: {len(problems)} datom option problem(s); fix them and reload:\n"
            + "\n".join(f"- {p}" for p in problems)
        )
