"""One test per Dagster internal the plugin uses (``datom_dagster._dagster_internals``).

Each runs a real step on a real instance with a bare IO manager that calls only the
internal under test, so a Dagster release that changes one fails here, by name.
"""

from typing import Any

from dagster._core.definitions.data_version import DATA_VERSION_TAG as DAGSTER_TAG

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    DailyPartitionsDefinition,
    InputContext,
    IOManager,
    LastPartitionMapping,
    OutputContext,
    StaticPartitionsDefinition,
    asset,
    graph_asset,
    materialize,
    op,
)
from datom_dagster import _dagster_internals as internals

from .conftest import latest

SEEN: dict[str, Any] = {}


class Probe(IOManager):
    """Stores nothing; runs the internal the test names and records what it returned."""

    def __init__(self, probe: str) -> None:
        self.probe = probe

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if self.probe == "step_context":
            SEEN.setdefault("output_steps", []).append(internals.step_context_or_none(context))
        elif self.probe == "data_version":
            SEEN["set"] = internals.set_data_version(context, "c0ffee")
        elif self.probe == "asset_metadata":
            internals.add_materialization_metadata(context, {"shown": "here"})
        elif self.probe == "partition_metadata":
            for pk in context.asset_partition_keys:
                internals.add_materialization_metadata(context, {"which": pk}, pk)
        elif self.probe == "deps" and context.asset_key == AssetKey("downstream"):
            up = AssetKey("upstream")
            SEEN["io_manager"] = internals.dep_io_manager(context, up, default=None)
            SEEN["metadata"] = dict(internals.dep_metadata(context, up))
            SEEN["partitions_def"] = internals.dep_partitions_def(context, up)
            SEEN["partition_keys"] = internals.dep_partition_keys(context, up)

    def load_input(self, context: InputContext) -> Any:
        SEEN.setdefault("input_steps", []).append(internals.step_context_or_none(context))
        return 1


@asset
def upstream_one() -> int:
    return 1


@asset
def downstream_one(upstream_one: int) -> int:
    return upstream_one


def test_data_version_tag_is_dagsters():
    assert internals.DATA_VERSION_TAG == DAGSTER_TAG


def test_step_context_is_shared_by_a_steps_inputs_and_outputs(instance):
    SEEN.clear()
    resources = {"io_manager": Probe("step_context")}
    assert materialize([upstream_one, downstream_one], instance=instance, resources=resources)
    [upstream_step, downstream_step] = SEEN["output_steps"]
    [input_step] = SEEN["input_steps"]
    assert downstream_step is not None and upstream_step is not downstream_step
    assert input_step is downstream_step  # lineage is keyed by this identity


def test_set_data_version_from_handle_output_becomes_the_data_version(instance):
    SEEN.clear()
    assert materialize(
        [upstream_one], instance=instance, resources={"io_manager": Probe("data_version")}
    )
    assert SEEN["set"] is True
    tags = latest(instance, "upstream_one").tags
    assert tags[DAGSTER_TAG] == "c0ffee"
    assert tags["dagster/data_version_is_user_provided"] == "true"


@asset(partitions_def=StaticPartitionsDefinition(["eu", "us"]))
def regional() -> dict:
    return {"eu": 1, "us": 2}


def test_asset_metadata_goes_on_the_materialization_alone(instance):
    result = materialize(
        [upstream_one], instance=instance, resources={"io_manager": Probe("asset_metadata")}
    )

    assert result.success
    assert latest(instance, "upstream_one").metadata["shown"].value == "here"
    handled = [e for e in result.all_events if e.event_type_value == "HANDLED_OUTPUT"]
    assert len(handled) == 1
    assert "shown" not in handled[0].event_specific_data.metadata


def test_asset_metadata_of_a_graph_asset_reaches_its_materialization(instance):
    @op
    def make() -> int:
        return 1

    @graph_asset
    def from_graph() -> int:
        return make()

    resources = {"io_manager": Probe("asset_metadata")}
    assert materialize([from_graph], instance=instance, resources=resources).success
    assert latest(instance, "from_graph").metadata["shown"].value == "here"


def test_partition_metadata_is_scoped_to_its_partition(instance):
    resources = {"io_manager": Probe("partition_metadata")}

    result = materialize(
        [regional],
        instance=instance,
        resources=resources,
        tags={
            "dagster/asset_partition_range_start": "eu",
            "dagster/asset_partition_range_end": "us",
        },
    )
    assert result.success
    for pk in ("eu", "us"):
        assert latest(instance, "regional", pk).metadata["which"].value == pk


DAILY = DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")


@asset(partitions_def=DAILY, metadata={"datom_table": "up"}, io_manager_key="up_io")
def upstream() -> int:
    return 1


@asset(deps=[AssetDep(upstream, partition_mapping=LastPartitionMapping())])
def downstream(context: AssetExecutionContext) -> int:
    return 2


def test_asset_layer_describes_a_dependency_the_step_did_not_load(instance):
    SEEN.clear()
    up_io, io = Probe("none"), Probe("deps")
    result = materialize(
        [upstream, downstream],
        instance=instance,
        resources={"io_manager": io, "up_io": up_io},
        selection=[downstream],
    )
    assert result.success
    assert SEEN["io_manager"] is not None and SEEN["io_manager"].probe == "none"
    assert SEEN["metadata"]["datom_table"] == "up"
    assert SEEN["partitions_def"] == DAILY
    assert SEEN["partition_keys"] == ["2024-01-03"]
