"""The parts of the plugin that lean on Dagster internals, isolated here.

Dagster has no public way for an IO manager to set the data version of the
materialization it is storing. It does read a per-step cache of data versions while it
builds that materialization: ``_store_output`` calls ``handle_output`` first, then
``_get_output_asset_events`` takes ``output.data_version or
step_context.get_data_version(asset_key)`` and records it as a user-provided data version
(tags ``dagster/data_version`` and ``dagster/data_version_is_user_provided``). So putting
the table's ``data_sha`` in that cache from ``handle_output`` makes it the data version:
an identical result keeps downstream assets fresh, a changed one marks them stale.

This relies on ``OutputContext.step_context`` (long-standing, not ``@public``),
``StepExecutionContext.set_data_version`` and that ordering. The integration tests check
the recorded tag after a real run, so a Dagster upgrade that breaks it fails loudly.

Also here, for the same reason: per-partition materialization metadata
(``StepExecutionContext.add_asset_metadata``) and the step's resources and asset layer,
used to resolve upstream dependencies that the step did not load.
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
    "add_partition_metadata",
    "dep_io_manager",
    "dep_metadata",
    "dep_partition_keys",
    "dep_partitions_def",
    "set_data_version",
    "step_context_or_none",
]


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


def add_partition_metadata(
    context: OutputContext, partition_key: str, metadata: Mapping[str, Any]
) -> None:
    """Metadata for one partition's materialization when a step stores several partitions."""
    step = step_context_or_none(context)
    if step is None:
        context.add_output_metadata({f"{partition_key}/{k}": v for k, v in metadata.items()})
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
