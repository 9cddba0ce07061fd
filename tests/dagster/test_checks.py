"""The asset check factory: stored bytes match parquet_sha; lineage is the parents' union."""

import pandas as pd
import pytest

import datom_core as dc
from dagster import (
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetSelection,
    AssetSpec,
    Config,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from datom_dagster import (
    DATOM_CHECK_NAME,
    ROW_COUNT_CHECK_NAME,
    SCHEMA_CHECK_NAME,
    build_datom_asset_checks,
)

from .conftest import onboard, project_io_manager

VENDOR_DM = AssetSpec("vendor_dm", metadata={"datom_table": "dm"}).with_io_manager_key("vendor")


@asset
def base(vendor_dm: pd.DataFrame) -> pd.DataFrame:
    return vendor_dm.assign(n=1)


@asset
def top(base: pd.DataFrame) -> pd.DataFrame:
    return base.assign(m=2)


@asset(partitions_def=StaticPartitionsDefinition(["p1", "p2"]))
def parts(context: AssetExecutionContext) -> pd.DataFrame:
    return pd.DataFrame({"p": [context.partition_key]})


def _evaluations(result):
    return {e.asset_key.path[-1]: e for e in result.get_asset_check_evaluations()}


def _run_checks(instance, assets, checks, resources):
    result = materialize(
        [*assets, *checks],
        instance=instance,
        resources=resources,
        selection=AssetSelection.all_asset_checks(),
    )
    return _evaluations(result)


def test_checks_pass_then_catch_corruption_and_wrong_lineage(instance, tmp_path):
    study, vendor = project_io_manager(tmp_path, "study"), project_io_manager(tmp_path, "vendor")
    onboard(vendor.connection(), "dm", pd.DataFrame({"subject": ["s1", "s2"]}))
    resources = {"io_manager": study, "vendor": vendor}
    assets = [VENDOR_DM, base, top]
    checks = build_datom_asset_checks([base, top], other_projects=["vendor"])
    result = materialize([*assets, *checks], instance=instance, resources=resources)
    evaluations = _evaluations(result)
    assert {e.check_name for e in evaluations.values()} == {DATOM_CHECK_NAME}
    assert all(e.passed for e in evaluations.values()), evaluations

    conn = study.connection()
    # Corrupt the stored parquet of `top`: its check fails, naming the object.
    data_sha = conn.metadata("top")["data_sha"]
    stored = tmp_path / "study" / "store" / "datom" / "top" / f"{data_sha}.parquet"
    stored.write_bytes(stored.read_bytes()[:-8] + b"corrupt!")
    evaluations = _run_checks(instance, assets, checks, resources)
    assert evaluations["base"].passed
    assert not evaluations["top"].passed
    assert evaluations["top"].severity == AssetCheckSeverity.ERROR
    [problem] = evaluations["top"].metadata["datom/problems"].value
    assert f"top/{data_sha}.parquet hashes to" in problem

    # A version whose source_lineage is not its parents' union.
    # The public API always derives lineage; forge one through the write protocol itself.
    from datom_core._project._write import WriteRequest, write_table

    bogus = dc.SourceRef("elsewhere", "x", "0" * 64)
    write_table(
        conn,
        WriteRequest("base", "tampered", parents=(conn.parent("top"),), source_lineage=(bogus,)),
        pd.DataFrame({"z": [1]}),
    )
    evaluations = _run_checks(instance, assets, checks, resources)
    [problem] = evaluations["base"].metadata["datom/problems"].value
    assert "is not the union of its parents'" in problem and "elsewhere" in problem


def test_a_parent_in_an_unreachable_project_is_a_warning(instance, tmp_path):
    study, vendor = project_io_manager(tmp_path, "study"), project_io_manager(tmp_path, "vendor")
    onboard(vendor.connection(), "dm", pd.DataFrame({"subject": ["s1"]}))
    resources = {"io_manager": study, "vendor": vendor}
    checks = build_datom_asset_checks([base])  # no other_projects
    evaluation = _evaluations(
        materialize([VENDOR_DM, base, *checks], instance=instance, resources=resources)
    )["base"]
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    assert (
        "add its resource key to other_projects" in evaluation.metadata["datom/problems"].value[0]
    )


def test_partitioned_assets_check_every_stored_partition(instance, io_manager):
    checks = build_datom_asset_checks([parts])
    resources = {"io_manager": io_manager}
    result = materialize(
        [parts, *checks], instance=instance, resources=resources, partition_key="p1"
    )
    assert result.success
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed and evaluation.metadata["datom/tables_checked"].value == 1
    materialize([parts], instance=instance, resources=resources, partition_key="p2")
    evaluation = _run_checks(instance, [parts], checks, resources)["parts"]
    assert evaluation.passed and evaluation.metadata["datom/tables_checked"].value == 2
    assert {t.name for t in dc.connect(io_manager.datom.project_clone_path()).tables()} == {
        "parts(p1)",
        "parts(p2)",
    }


class Shape(Config):
    rows: int = 10
    extra: bool = False


@asset
def cohort(config: Shape) -> pd.DataFrame:
    frame = pd.DataFrame({"id": range(config.rows)})
    return frame.assign(extra=1) if config.extra else frame


@asset
def after_cohort(cohort: pd.DataFrame) -> pd.DataFrame:
    return cohort.head(1)


def _cohort_run(instance, io_manager, checks, rows: int, extra: bool = False):
    result = materialize(
        [cohort, after_cohort, *checks],
        instance=instance,
        resources={"io_manager": io_manager},
        run_config={"ops": {"cohort": {"config": {"rows": rows, "extra": extra}}}},
        raise_on_error=False,
    )
    return result, {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_opt_in_change_checks_pass_fail_and_block(instance, io_manager):
    checks = build_datom_asset_checks(
        [cohort], schema_change=True, row_count_change=0.2, change_checks_blocking=True
    )
    assert {spec.name for check in checks for spec in check.check_specs} == {
        DATOM_CHECK_NAME,
        SCHEMA_CHECK_NAME,
        ROW_COUNT_CHECK_NAME,
    }
    _, first = _cohort_run(instance, io_manager, checks, 10)
    assert all(e.passed for e in first.values())  # a first version passes

    _, within = _cohort_run(instance, io_manager, checks, 12)  # +20%: allowed
    assert within[ROW_COUNT_CHECK_NAME].passed and within[SCHEMA_CHECK_NAME].passed

    result, beyond = _cohort_run(instance, io_manager, checks, 20, extra=True)
    row_count, schema = beyond[ROW_COUNT_CHECK_NAME], beyond[SCHEMA_CHECK_NAME]
    assert not row_count.passed and row_count.severity == AssetCheckSeverity.ERROR
    assert row_count.metadata["datom/rows_before"].value == 12
    assert row_count.metadata["datom/rows_after"].value == 20
    assert "rows 12 -> 20" in row_count.description
    assert not schema.passed and "columns added ['extra']" in schema.description
    # Blocking: the downstream asset was not materialized in that run.
    done = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert done == {"cohort"}


def test_change_checks_warn_unless_blocking(instance, io_manager):
    checks = build_datom_asset_checks([cohort], schema_change=True, row_count_change=0.0)
    _cohort_run(instance, io_manager, checks, 5)
    result, shrunk = _cohort_run(instance, io_manager, checks, 4)
    assert not shrunk[ROW_COUNT_CHECK_NAME].passed
    assert shrunk[ROW_COUNT_CHECK_NAME].severity == AssetCheckSeverity.WARN
    done = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert done == {"cohort", "after_cohort"}
    with pytest.raises(dc.InvalidArgumentError, match="row_count_change must be a fraction"):
        build_datom_asset_checks([cohort], row_count_change=-1)
