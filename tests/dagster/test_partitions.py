"""Partitioned assets: one datom table per partition; loading one or several; backfills."""

import pandas as pd
import polars as pl
import pyarrow as pa
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from dagster import (
    AssetExecutionContext,
    AssetIn,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from .conftest import latest, meta, parents_shown

REGIONS = StaticPartitionsDefinition(["eu", "us", "New York"])
DAYS = DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-05")
BATCHES = DynamicPartitionsDefinition(name="batches")
SALES = MultiPartitionsDefinition(
    {"date": DAYS, "region": StaticPartitionsDefinition(["eu", "us"])}
)


# -- static: one partition per run; several loaded as a dict or one table ---------------------


@asset(partitions_def=REGIONS)
def by_region(context: AssetExecutionContext) -> pd.DataFrame:
    return pd.DataFrame({"region": [context.partition_key], "n": [len(context.partition_key)]})


@asset(partitions_def=REGIONS)
def region_copy(by_region: pd.DataFrame) -> pd.DataFrame:
    return by_region


@asset(ins={"by_region": AssetIn(metadata={"allow_missing_partitions": True})})
def regions_dict(by_region: dict[str, pl.DataFrame]) -> pd.DataFrame:
    assert all(isinstance(v, pl.DataFrame) for v in by_region.values())
    return pd.DataFrame({"keys": sorted(by_region)})


@asset(ins={"by_region": AssetIn(metadata={"allow_missing_partitions": True})})
def regions_concat(by_region: pa.Table) -> pa.Table:
    return by_region.sort_by("region")


@asset(partitions_def=REGIONS, deps=[by_region])
def region_flag() -> pd.DataFrame:
    """Depends on the same partition of `by_region` without loading it."""
    return pd.DataFrame({"flag": [True]})


@asset(deps=[by_region])
def regions_seen() -> pd.DataFrame:
    """Depends on every partition of `by_region` without loading any."""
    return pd.DataFrame({"seen": [True]})


STATIC = [by_region, region_copy, regions_dict, regions_concat, region_flag, regions_seen]


def test_static_partitions(instance, io_manager):
    resources = {"io_manager": io_manager}
    for key in ("eu", "New York"):
        run = materialize(
            STATIC,
            instance=instance,
            resources=resources,
            partition_key=key,
            selection=["by_region", "region_copy", "region_flag"],
        )
        assert run.success
    conn = io_manager.connection()
    assert conn.read("by_region(New York)")["region"].tolist() == ["New York"]
    event = latest(instance, "by_region", "eu")
    assert meta(event, "datom/table") == "by_region(eu)"
    assert event.tags[DATA_VERSION_TAG] == conn.metadata("by_region(eu)")["data_sha"]
    [parent] = parents_shown(latest(instance, "region_copy", "eu"))
    assert (parent["table"], parent["version"]) == (
        "by_region(eu)",
        conn.resolve("by_region(eu)")[:12],
    )

    materialize(
        STATIC,
        instance=instance,
        resources=resources,
        selection=["regions_dict", "regions_concat", "regions_seen"],
    )
    assert conn.read("regions_dict")["keys"].tolist() == ["New York", "eu"]
    assert conn.read("regions_concat")["region"].tolist() == ["New York", "eu"]
    stored = {"by_region(eu)", "by_region(New York)"}  # "us" was never stored
    for name in ("regions_concat", "regions_seen"):
        assert {p["table"] for p in conn.metadata(name)["parents"]} == stored
    [flag_parent] = conn.metadata("region_flag(New York)")["parents"]
    assert flag_parent["version"] == conn.resolve("by_region(New York)")


# -- time windows: a single-run backfill across partitions, then one partition -----------------


@asset(partitions_def=DAYS)
def daily(context: AssetExecutionContext) -> dict[str, pl.DataFrame]:
    return {day: pl.DataFrame({"day": [day], "runs": [1]}) for day in context.partition_keys}


@asset(partitions_def=DAYS)
def daily_child(daily: pl.LazyFrame) -> pl.LazyFrame:
    return daily.with_columns(pl.col("runs") * 2)


def test_single_run_backfill_across_time_partitions(instance, io_manager):
    tags = {
        ASSET_PARTITION_RANGE_START_TAG: "2024-01-01",
        ASSET_PARTITION_RANGE_END_TAG: "2024-01-03",
    }
    resources = {"io_manager": io_manager}
    assert materialize(
        [daily, daily_child], instance=instance, resources=resources, tags=tags, selection=["daily"]
    ).success
    conn = io_manager.connection()
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        event = latest(instance, "daily", day)
        assert meta(event, "datom/table") == f"daily({day})"
        assert meta(event, "datom/data_sha") == conn.metadata(f"daily({day})")["data_sha"]
        assert meta(event, "datom/change") == "full"
        assert conn.read(f"daily({day})", as_="polars")["day"].to_list() == [day]
        assert conn.history(f"daily({day})")[0].extra["dagster_partition"] == day
    assert "daily(2024-01-04)" not in {t.name for t in conn.tables()}

    materialize(
        [daily, daily_child], instance=instance, resources=resources, partition_key="2024-01-02"
    )
    assert meta(latest(instance, "daily", "2024-01-02"), "datom/change") == "none"
    assert conn.read("daily_child(2024-01-02)")["runs"].tolist() == [2]
    [parent] = conn.metadata("daily_child(2024-01-02)")["parents"]
    assert parent["table"] == "daily(2024-01-02)"


@asset(partitions_def=DAYS)
def daily_single(context: AssetExecutionContext) -> pd.DataFrame:
    return pd.DataFrame({"day": context.partition_keys})


def test_a_range_run_needs_one_table_per_partition(instance, io_manager):
    tags = {
        ASSET_PARTITION_RANGE_START_TAG: "2024-01-01",
        ASSET_PARTITION_RANGE_END_TAG: "2024-01-02",
    }
    result = materialize(
        [daily_single],
        instance=instance,
        resources={"io_manager": io_manager},
        tags=tags,
        raise_on_error=False,
    )
    assert not result.success
    [failure] = result.get_step_failure_events()
    message = failure.step_failure_data.error.to_string()
    assert "return a dict {partition_key: table}" in message and "(got DataFrame)" in message
    assert io_manager.connection().tables() == []


# -- dynamic ---------------------------------------------------------------------------------


@asset(partitions_def=BATCHES)
def batch(context: AssetExecutionContext) -> pa.Table:
    return pa.table({"batch": [context.partition_key]})


@asset
def all_batches(batch: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([batch[k] for k in sorted(batch)], ignore_index=True)


def test_dynamic_partitions(instance, io_manager):
    instance.add_dynamic_partitions("batches", ["b-1", "b.2"])
    resources = {"io_manager": io_manager}
    for key in ("b-1", "b.2"):
        materialize(
            [batch, all_batches],
            instance=instance,
            resources=resources,
            partition_key=key,
            selection=["batch"],
        )
    materialize(
        [batch, all_batches], instance=instance, resources=resources, selection=["all_batches"]
    )
    conn = io_manager.connection()
    assert conn.read("all_batches")["batch"].tolist() == ["b-1", "b.2"]
    tables = {t.name for t in conn.tables()}
    assert "batch(b-1)" in tables
    dotted = meta(latest(instance, "batch", "b.2"), "datom/table")  # "." is not allowed: safe form
    assert dotted.startswith("batch(b_2)-") and dotted in tables


# -- multi-dimensional -------------------------------------------------------------------------


@asset(partitions_def=SALES)
def sales(context: AssetExecutionContext) -> pd.DataFrame:
    key = context.partition_key.keys_by_dimension
    return pd.DataFrame({"date": [key["date"]], "region": [key["region"]]})


@asset(ins={"sales": AssetIn(metadata={"allow_missing_partitions": True, "datom_concat": True})})
def all_sales(sales) -> pd.DataFrame:
    return sales.sort_values(["date", "region"], ignore_index=True)


def test_multi_partitions(instance, io_manager):
    resources = {"io_manager": io_manager}
    for date, region in (("2024-01-01", "eu"), ("2024-01-02", "us")):
        key = MultiPartitionKey({"date": date, "region": region})
        materialize(
            [sales, all_sales],
            instance=instance,
            resources=resources,
            partition_key=key,
            selection=["sales"],
        )
    materialize([sales, all_sales], instance=instance, resources=resources, selection=["all_sales"])
    conn = io_manager.connection()
    assert conn.read("sales(2024-01-01)(eu)")["region"].tolist() == ["eu"]
    assert conn.read("all_sales").to_dict("list") == {
        "date": ["2024-01-01", "2024-01-02"],
        "region": ["eu", "us"],
    }
    event = latest(instance, "sales", MultiPartitionKey({"date": "2024-01-02", "region": "us"}))
    assert meta(event, "datom/table") == "sales(2024-01-02)(us)"


# -- per-partition pins: an older version of one partition, the current of the others ----------


def test_per_partition_pins_load_and_record_the_pinned_versions(fresh_instance, io_manager):
    state = {"n": 1}

    @asset(partitions_def=REGIONS, name="pinned_src")
    def pinned_src(context: AssetExecutionContext) -> pd.DataFrame:
        return pd.DataFrame({"region": [context.partition_key], "n": [state["n"]]})

    resources = {"io_manager": io_manager}
    for key in ("eu", "us"):
        assert materialize(
            [pinned_src], instance=fresh_instance, resources=resources, partition_key=key
        ).success
    old_eu = meta(latest(fresh_instance, "pinned_src", "eu"), "datom/version")
    state["n"] = 2
    assert materialize(
        [pinned_src], instance=fresh_instance, resources=resources, partition_key="eu"
    ).success
    new_eu = meta(latest(fresh_instance, "pinned_src", "eu"), "datom/version")
    us = meta(latest(fresh_instance, "pinned_src", "us"), "datom/version")
    assert new_eu != old_eu

    pins = {"eu": old_eu[:12]}

    @asset(
        ins={
            "pinned_src": AssetIn(
                metadata={"datom_version": pins, "allow_missing_partitions": True}
            )
        }
    )
    def pinned_reader(pinned_src: dict[str, pd.DataFrame]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "region": sorted(pinned_src),
                "n": [int(pinned_src[k]["n"][0]) for k in sorted(pinned_src)],
            }
        )

    run = materialize(
        [pinned_src, pinned_reader],
        instance=fresh_instance,
        resources=resources,
        selection=[pinned_reader],
    )
    assert run.success
    mat = latest(fresh_instance, "pinned_reader")
    versions = {p["table"]: p["version"] for p in parents_shown(mat)}
    assert versions == {"pinned_src(eu)": old_eu[:12], "pinned_src(us)": us[:12]}
    out = io_manager.connection().read("pinned_reader")
    assert dict(zip(out["region"], out["n"], strict=True)) == {"eu": 1, "us": 1}
