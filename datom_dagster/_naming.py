"""How an asset, and a partition of it, becomes a datom table name.

What it records and how to use it is in the docstring of :func:`table_name`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

import datom_core as dc
from dagster import AssetKey, MultiPartitionKey, MultiPartitionsDefinition, PartitionsDefinition

__all__ = ["KEY_METADATA_KEY", "TABLE_METADATA_KEY", "partition_values", "table_name"]

TABLE_METADATA_KEY = "datom_table"
"""Asset definition metadata key that overrides the base table name."""

KEY_METADATA_KEY = "datom_key"
"""Asset definition metadata key naming the columns that identify a row."""

_MAX = 128
_HASH_HEX = 10
_COMPONENT = re.compile(r"[A-Za-z0-9\-]+(?:_[A-Za-z0-9\-]+)*")  # no "__", no outer "_"
_PARTITION = re.compile(r"[A-Za-z0-9_\- ]+")
_NOT_IN_COMPONENT = re.compile(r"[^A-Za-z0-9_\-]")
_NOT_IN_PARTITION = re.compile(r"[^A-Za-z0-9_\- ]")


def table_name(
    asset_key: AssetKey,
    partition_key: str | None = None,
    *,
    partitions_def: PartitionsDefinition | None = None,
    override: str | None = None,
) -> str:
    """The datom table holding ``asset_key`` (and ``partition_key``).

    The mapping is deterministic (the same asset and partition always give the same name, in
    every process and on every machine) and always yields a valid datom table name: 1-128
    characters, a letter first, then letters, digits, ``_``, ``-``, space, ``(`` and ``)``,
    and not a reserved name.

    **Base name.** The asset's definition metadata ``datom_table`` when it is set (it must
    itself be a valid table name; use it to map an asset onto an existing datom table, such
    as one onboarded from a file). Otherwise the asset key's components joined with ``__``,
    Dagster's own separator when it turns a key into an op name::

        AssetKey("sales")                -> "sales"
        AssetKey(["finance", "sales"])   -> "finance__sales"

    **Partitions.** Each partition of a partitioned asset is its own table: the base name
    followed by one parenthesised group per partition dimension. Multi-partitioned assets list
    their dimensions in name order, as :class:`dagster.MultiPartitionKey` does::

        daily partition "2024-01-31"                  -> "sales(2024-01-31)"
        {"date": "2024-01-31", "region": "eu"}        -> "sales(2024-01-31)(eu)"

    **Plain and safe forms.** The plain form above is used as it is when it is valid and
    cannot be confused with another asset's: every key component consists of letters, digits,
    ``_`` and ``-`` and neither holds ``__`` nor begins or ends with ``_``; every partition
    value consists of letters, digits, ``_``, ``-`` and spaces; the name begins with a letter,
    fits in 128 characters and is a name datom takes (not reserved, not a Windows device name
    such as ``CON`` or ``NUL``). Otherwise the **safe form** is used: every
    character the plain form may not hold becomes ``_``, a ``t`` is put in front of a name
    that does not begin with a letter, the result is cut to 117 characters, and ``-`` plus the
    first 10 hex digits of the SHA-256 of the exact key and partition values is appended::

        AssetKey("_staging")             -> "t_staging-<10 hex>"
        hourly partition "2024-01-31-13:00" -> "events(2024-01-31-13_00)-<10 hex>"

    So two different assets or partitions get different names (except for a 40-bit hash
    collision), and readable keys keep readable names.

    ``override`` is the asset's ``datom_table`` metadata; ``partitions_def`` is needed to
    split a multi-dimensional key given as a plain string.
    """
    values = [] if partition_key is None else partition_values(partition_key, partitions_def)
    if override is not None:
        base, base_ok = _checked_override(override, asset_key), True
    else:
        base = "__".join(asset_key.path)
        base_ok = all(_COMPONENT.fullmatch(c) for c in asset_key.path) and base[:1].isalpha()
    plain = base + "".join(f"({v})" for v in values)
    if (
        base_ok
        and all(_PARTITION.fullmatch(v) for v in values)
        and len(plain) <= _MAX
        and _valid(plain)
    ):
        return plain
    return _safe(asset_key, values, override)


def _valid(name: str) -> bool:
    """Whether datom takes ``name`` as it is (not reserved, not a Windows device name)."""
    try:
        dc.validate_table_name(name)
    except dc.InvalidNameError:
        return False
    return True


def partition_values(
    partition_key: str, partitions_def: PartitionsDefinition | None = None
) -> list[str]:
    """The partition's value per dimension (one value unless multi-partitioned)."""
    if isinstance(partition_key, MultiPartitionKey):
        by_dim = partition_key.keys_by_dimension
    elif isinstance(partitions_def, MultiPartitionsDefinition):
        by_dim = partitions_def.get_partition_key_from_str(partition_key).keys_by_dimension
    else:
        return [str(partition_key)]
    return [by_dim[d] for d in sorted(by_dim)]


def _checked_override(override: object, asset_key: AssetKey) -> str:
    try:
        return dc.validate_table_name(override)
    except dc.InvalidNameError as e:
        raise dc.InvalidNameError(
            f"asset {asset_key.to_user_string()}: metadata {TABLE_METADATA_KEY}={override!r} "
            f"is not a valid datom table name; {e}"
        ) from e


def _safe(asset_key: AssetKey, values: Sequence[str], override: str | None) -> str:
    if override is not None:
        base = override
    else:
        base = "__".join(_NOT_IN_COMPONENT.sub("_", c) for c in asset_key.path)
        if not base[:1].isalpha():
            base = "t" + base
    name = base + "".join(f"({_NOT_IN_PARTITION.sub('_', v)})" for v in values)
    identity = json.dumps(
        {"key": list(asset_key.path), "table": override, "partition": list(values)},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:_HASH_HEX]
    return f"{name[: _MAX - _HASH_HEX - 1]}-{digest}"
