"""Data cuts on a real Dagster instance: a cut over a partitioned and an unpartitioned
asset, a refused inconsistent cut, a run pinned to a cut after upstream data changed, and
the check of a cut's members."""

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import datom_core as dc
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetSelection,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from datom_dagster import (
    AS_OF_SET_TAG,
    DatomIOManager,
    DatomResource,
    datom_data_cut,
    datom_data_cut_check,
    datom_pin,
    table_name,
)

from .conftest import latest, meta, parents_shown

MONTHS = StaticPartitionsDefinition(["m1", "m2", "m3", "m4"])
SOURCE: dict[str, Any] = {}
CUT = "Month 3 lock"


@asset(partitions_def=MONTHS)
def visits(context: AssetExecutionContext) -> pd.DataFrame:
    return SOURCE[context.partition_key].copy()


@asset
def sites() -> pd.DataFrame:
    return SOURCE["sites"].copy()


@asset(ins={"visits": AssetIn(metadata={"allow_missing_partitions": True})})
def summary(visits: pd.DataFrame, sites: pd.DataFrame) -> pd.DataFrame:
    out = visits.merge(sites, on="site").groupby("region", as_index=False)["n"].sum()
    return out.sort_values("region", ignore_index=True)


def _month(n: int, bump: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"site": ["s1", "s2"], "n": [n + bump, 2 * n]})


@pytest.fixture
def setup(tmp_path: Path, instance: DagsterInstance) -> dict[str, Any]:
    SOURCE.clear()
    SOURCE.update({f"m{i}": _month(i) for i in (1, 2, 3)})
    SOURCE["sites"] = pd.DataFrame({"site": ["s1", "s2"], "region": ["eu", "us"]})
    home = str(tmp_path / "home")
    study = DatomResource(project_name="STUDY", home=home)
    product = DatomResource(project_name="STUDY_LOCK", home=home)
    resources = {"io_manager": DatomIOManager(datom=study)}
    for pk in ("m1", "m2", "m3"):
        materialize([visits], instance=instance, resources=resources, partition_key=pk)
    materialize([visits, sites, summary], instance=instance, resources=resources,
                selection=[sites.key, summary.key])  # fmt: skip
    cut = datom_data_cut(CUT, [visits, sites, summary], project=product,
                         tags={"milestone": "month 3"})  # fmt: skip
    return {"study": study, "product": product, "resources": resources, "cut": cut}


def _failure(result: Any) -> str:
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return str(getattr(failure.event_specific_data, "error", ""))


def _cut(s: dict[str, Any], instance: DagsterInstance, **kw: Any) -> Any:
    return materialize([s["cut"], visits, sites, summary], instance=instance,
                       resources=s["resources"], selection=[s["cut"].key], **kw)  # fmt: skip


def test_a_cut_pins_every_partition_and_the_unpartitioned_assets(
    setup: dict[str, Any], instance: DagsterInstance
) -> None:
    assert _cut(setup, instance).success
    shown = latest(instance, setup["cut"].key)
    study = setup["study"].connection()
    current = {t.name: t.current_version for t in study.tables()}
    assert meta(shown, "datom/member_count") == 5
    rows = {r.data["table"]: r.data for r in shown.metadata["datom/members"].value.records}
    names = [table_name(visits.key, pk, partitions_def=MONTHS) for pk in ("m1", "m2", "m3")]
    assert set(rows) == {*names, "sites", "summary"}
    assert all(rows[n]["version"] == current[n] for n in rows)
    assert rows[names[0]]["partition"] == "m1" and rows["summary"]["asset"] == "summary"
    # The set as R and the core read it: the product repo's one set, labelled.
    product = setup["product"].connection()
    got = product.get_set()
    assert got.version == meta(shown, "datom/set_version")
    assert dict(got.tags) == {"milestone": ("month 3",)}
    assert {(m.project, m.name, m.version) for m in got.members} == {
        ("STUDY", n, current[n]) for n in rows
    }
    assert meta(shown, "datom/as_of_set") == f"{AS_OF_SET_TAG}=STUDY_LOCK/{CUT}@{got.version}"
    # Nothing moved: the same cut again is change none, the same version.
    assert _cut(setup, instance).success
    again = latest(instance, setup["cut"].key)
    assert (meta(again, "datom/change"), meta(again, "datom/set_version")) == ("none", got.version)


def test_a_cut_whose_output_was_not_rebuilt_is_refused(
    setup: dict[str, Any], instance: DagsterInstance
) -> None:
    assert _cut(setup, instance).success
    product = setup["product"].connection()
    before = (product.repo.head(), len(product.set_history()))
    SOURCE["sites"] = pd.DataFrame({"site": ["s1", "s2"], "region": ["eu", "eu"]})
    materialize([sites], instance=instance, resources=setup["resources"])
    result = _cut(setup, instance, raise_on_error=False)
    assert not result.success
    message = _failure(result)
    assert "refused, nothing was written" in message and "summary was built from sites" in message
    assert (product.repo.head(), len(product.set_history())) == before


def test_a_run_as_of_the_cut_reproduces_its_outputs(
    setup: dict[str, Any], instance: DagsterInstance
) -> None:
    assert _cut(setup, instance).success
    pin = meta(latest(instance, setup["cut"].key), "datom/as_of_set").split("=", 1)[1]
    product = setup["product"].connection()
    cut = product.get_set()
    pinned = {m.name: m.version for m in cut.members}
    # Upstream moves on: month 2 is corrected, month 4 arrives, the sites change.
    SOURCE.update({"m2": _month(2, bump=5), "m4": _month(4)})
    SOURCE["sites"] = pd.DataFrame({"site": ["s1", "s2"], "region": ["us", "us"]})
    for pk in ("m2", "m4"):
        materialize([visits], instance=instance, resources=setup["resources"], partition_key=pk)
    materialize([sites], instance=instance, resources=setup["resources"])
    study = setup["study"].connection()
    assert study.resolve("sites") != pinned["sites"]
    # The whole run pinned to the cut by its tag: summary is what the cut recorded.
    run = materialize([visits, sites, summary], instance=instance, resources=setup["resources"],
                      selection=[summary.key], tags={AS_OF_SET_TAG: pin})  # fmt: skip
    assert run.success
    shown = latest(instance, "summary")
    assert meta(shown, "datom/change") == "none"
    assert meta(shown, "datom/version") == pinned["summary"]
    recorded = {(p.table, p.version) for p in study.version("summary").parents}
    expected = {(n, v) for n, v in pinned.items() if n != "summary"}
    assert recorded == expected
    assert {r["table"] for r in parents_shown(shown)} == {n for n, _ in expected}
    # Unpinned, the same graph takes the new data (a new version of summary).
    materialize([visits, sites, summary], instance=instance, resources=setup["resources"],
                selection=[summary.key])  # fmt: skip
    assert meta(latest(instance, "summary"), "datom/version") != pinned["summary"]

    # Inputs pinned through the set one by one (datom_pin / AssetIn metadata).
    @asset(
        ins={"visits": AssetIn(metadata=datom_pin(set=pin)),
             "sites": AssetIn(metadata={"datom_set": pin})},
        name="summary_as_of",
    )  # fmt: skip
    def summary_as_of(visits: pd.DataFrame, sites: pd.DataFrame) -> pd.DataFrame:
        return summary(visits, sites)

    assert materialize([visits, sites, summary_as_of], instance=instance,
                       resources=setup["resources"], selection=[summary_as_of.key]).success  # fmt: skip
    as_of = study.version("summary_as_of")
    assert as_of.data_sha == study.version("summary", pinned["summary"]).data_sha
    assert {(p.table, p.version) for p in as_of.parents} == expected

    # A dependency the step does not load is recorded at the cut's version too.
    @asset(deps=[sites, visits])
    def noted() -> pd.DataFrame:
        return pd.DataFrame({"note": ["as of the lock"]})

    assert materialize([visits, sites, noted], instance=instance, resources=setup["resources"],
                       selection=[noted.key], tags={AS_OF_SET_TAG: pin}).success  # fmt: skip
    assert {(p.table, p.version) for p in study.version("noted").parents} == expected


def test_an_input_the_cut_does_not_list_fails_naming_the_set(
    setup: dict[str, Any], instance: DagsterInstance
) -> None:
    assert _cut(setup, instance).success
    pin = f"STUDY_LOCK/{CUT}"

    @asset
    def extra() -> pd.DataFrame:
        return pd.DataFrame({"x": [1]})

    @asset(ins={"extra": AssetIn(metadata=datom_pin(set=pin))})
    def uses_extra(extra: pd.DataFrame) -> pd.DataFrame:
        return extra

    materialize([extra], instance=instance, resources=setup["resources"])
    result = materialize([extra, uses_extra], instance=instance, resources=setup["resources"],
                         selection=[uses_extra.key], raise_on_error=False)  # fmt: skip
    assert not result.success
    assert f"set STUDY_LOCK/{CUT}@" in _failure(result)
    assert "lists no table extra" in _failure(result)


def test_the_cut_check_passes_then_fails_after_tampering(
    setup: dict[str, Any], instance: DagsterInstance
) -> None:
    assert _cut(setup, instance).success
    check = datom_data_cut_check(CUT, project=setup["product"])

    def run_check(content: bool = False) -> Any:
        config = {"ops": {check.node_def.name: {"config": {"content": content}}}}
        result = materialize([setup["cut"], visits, sites, summary, check], instance=instance,
                             resources=setup["resources"], run_config=config,
                             selection=AssetSelection.all_asset_checks())  # fmt: skip
        [evaluation] = result.get_asset_check_evaluations()
        return evaluation

    first = run_check()
    assert first.passed and first.metadata["datom/members_checked"].value == 5
    assert run_check(content=True).passed
    study = setup["study"].connection()
    md = study.version("sites")
    key = study.parquet_key("sites", md.data_sha)
    raw = study.store.read_bytes(key)
    study.store.write_bytes(key, raw[:-9] + b"tampered!")
    failed = run_check()
    assert not failed.passed
    assert "sites@" in failed.metadata["datom/problems"].value
    assert "parquet_sha" in failed.metadata["datom/problems"].value


def test_bad_cut_definitions_are_refused() -> None:
    with pytest.raises(dc.InvalidNameError):
        datom_data_cut("1 bad", [visits])
    with pytest.raises(dc.InvalidArgumentError, match="select at least one asset"):
        datom_data_cut(CUT, [])
    assert datom_data_cut(CUT, [AssetKey("visits")]).key == AssetKey(["datom_cut", "month_3_lock"])


def test_a_cut_of_an_unmaterialized_asset_or_into_a_data_repo_is_refused(
    setup: dict[str, Any], instance: DagsterInstance, tmp_path: Path
) -> None:
    @asset
    def never() -> pd.DataFrame:
        return pd.DataFrame({"x": [1]})

    cut = datom_data_cut("Early cut", [sites, never], project=setup["product"])
    result = materialize([cut, sites, never], instance=instance, resources=setup["resources"],
                         selection=[cut.key], raise_on_error=False)  # fmt: skip
    assert "never has no datom table" in _failure(result)
    # An ordinary data repo cannot hold a set: the cut says so, and writes nothing.
    plain = DatomResource(project_name="PLAIN", home=str(tmp_path / "home"))
    head = plain.connection().repo.head()
    cut = datom_data_cut("Plain cut", [sites], project=plain)
    result = materialize([cut, sites], instance=instance, resources=setup["resources"],
                         selection=[cut.key], raise_on_error=False)  # fmt: skip
    assert "product repo" in _failure(result)
    assert plain.connection().repo.head() == head
