"""Every use the plugin makes of Dagster's non-public API, fenced in this one module.

Each entry was checked against Dagster 1.13's public API; these remain because no public
way exists. ``tests/dagster/test_dagster_internals.py`` has one test per entry, run on a
real instance, so a Dagster upgrade that changes one fails there first, by name.

1. ``OutputContext.step_context`` / ``InputContext.step_context`` (:func:`step_context_or_none`):
   the step's execution context, shared by the inputs and outputs of one step. Lineage is
   recorded against it (public contexts expose no step identity on inputs).
2. ``StepExecutionContext.set_data_version`` (:func:`set_data_version`): Dagster has no
   public way for an IO manager to set the data version of the materialization it stores.
   ``_store_output`` calls ``handle_output`` first, then takes ``output.data_version or
   step_context.get_data_version(asset_key)`` as a user-provided data version, so putting
   the table's ``data_sha`` there makes it the data version.
3. ``StepExecutionContext.add_asset_metadata`` (:func:`add_materialization_metadata`):
   metadata for the materialization alone. ``OutputContext.add_output_metadata`` also
   puts it on the step's ``HANDLED_OUTPUT`` event, which Dagster serializes, logs and
   stores a second time (for datom's ~20 entries, ~0.7 ms of CPU per asset). With
   ``partition_key=...`` it scopes metadata to one partition of a multi-partition step,
   which ``add_output_metadata`` cannot (it applies to every partition).
4. ``job_def.asset_layer.has/get(...)`` (:func:`dep_io_manager`, :func:`dep_metadata`,
   :func:`dep_partitions_def`): the IO manager, definition metadata and partitions of an
   upstream dependency the step did not load (``deps=[...]``); ``OutputContext.asset_spec``
   gives the dependency's key only.
5. ``asset_layer.get_node_input_name`` and ``asset_partitions_subset_for_input``
   (:func:`dep_partition_keys`): the partitions of such a dependency, through its mapping.

**Known limitation** (no public or private way around it): Dagster keeps one data version
per asset per step, so a single run that materialises several partitions records the
same (Dagster-computed) data version on each; each partition's ``datom/data_sha`` is
still in its own metadata. Run one partition per run (the default backfill policy) to
get ``data_sha`` as each partition's data version.
"""

from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetKey,
    DagsterInvariantViolationError,
    DataVersion,
    InputContext,
    OutputContext,
)

__all__ = [
    "DATA_VERSION_TAG",
    "add_materialization_metadata",
    "dep_io_manager",
    "dep_metadata",
    "dep_partition_keys",
    "dep_partitions_def",
    "set_data_version",
    "step_context_or_none",
]


DATA_VERSION_TAG = "dagster/data_version"
"""The tag under which Dagster records a materialization's data version."""


def step_context_or_none(context: OutputContext | InputContext) -> Any | None:
    """The step's execution context; None for contexts built by ``build_*_context()``."""
    try:
        return context.step_context
    except DagsterInvariantViolationError:
        return None


def set_data_version(context: OutputContext, data_sha: str) -> bool:
    """Make ``data_sha`` the data version Dagster records for this output's asset.

    Returns False (and changes nothing) outside a real step. A data version the asset
    returned itself (``Output(data_version=...)``) still wins, as in plain Dagster.
    """
    step = step_context_or_none(context)
    if step is None:
        return False
    step.set_data_version(context.asset_key, DataVersion(data_sha))
    return True


def add_materialization_metadata(
    context: OutputContext, metadata: Mapping[str, Any], partition_key: str | None = None
) -> None:
    """Metadata for the output's materialization (``partition_key``: that partition's only).

    Outside a real step (``build_output_context()``) it becomes output metadata, prefixed
    by ``partition_key``.
    """
    step = step_context_or_none(context)
    if step is None:
        prefix = f"{partition_key}/" if partition_key is not None else ""
        context.add_output_metadata({f"{prefix}{k}": v for k, v in metadata.items()})
        return
    step.add_asset_metadata(metadata, asset_key=context.asset_key, partition_key=partition_key)


def dep_io_manager(context: OutputContext, dep: AssetKey, default: Any) -> Any | None:
    """The IO manager instance that stores ``dep`` in this step.

    ``default`` when ``dep`` is not defined in this code location (or outside a step);
    None when its IO manager is not available to the step.
    """
    step = step_context_or_none(context)
    if step is None or not step.job_def.asset_layer.has(dep):
        return default
    return getattr(step.resources, step.job_def.asset_layer.get(dep).io_manager_key, None)


def dep_metadata(context: OutputContext, dep: AssetKey) -> Mapping[str, Any]:
    """The definition metadata of the upstream asset ``dep`` (empty if unknown)."""
    step = step_context_or_none(context)
    if step is None or not step.job_def.asset_layer.has(dep):
        return {}
    return step.job_def.asset_layer.get(dep).metadata or {}


def dep_partitions_def(context: OutputContext, dep: AssetKey) -> Any | None:
    """The partitions definition of the upstream asset ``dep`` (None if unpartitioned)."""
    step = step_context_or_none(context)
    if step is None or not step.job_def.asset_layer.has(dep):
        return None
    return step.job_def.asset_layer.get(dep).partitions_def


def dep_partition_keys(context: OutputContext, dep: AssetKey) -> list[str] | None:
    """The partitions of ``dep`` this step depends on, through the dependency's mapping."""
    step = step_context_or_none(context)
    if step is None:
        return None
    input_name = step.job_def.asset_layer.get_node_input_name(step.node_handle, dep)
    if input_name is None:
        return None
    subset = step.asset_partitions_subset_for_input(input_name, require_valid_partitions=False)
    return list(subset.get_partition_keys())
