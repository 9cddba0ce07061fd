"""Data versions, staleness and lineage across an asset graph."""

import pandas as pd
from dagster._core.definitions.data_version import (
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    StaleStatus,
)
from dagster._utils.test.data_versions import get_stale_status_resolver

import datom_core as dc
from dagster import AssetIn, AssetKey, AssetSpec, Config, asset, materialize

from .conftest import as_shown, latest, meta, onboard, parents_shown, project_io_manager


class RawConfig(Config):
    values: list[int]


@asset
def raw(config: RawConfig) -> pd.DataFrame:
    return pd.DataFrame({"v": config.values})


@asset
def clean(raw: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"v": raw["v"] * 10})


@asset
def report(clean: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [int(clean["v"].sum())]})


@asset(deps=[clean])
def audit() -> pd.DataFrame:
    """Depends on `clean` without loading it."""
    return pd.DataFrame({"checked": [True]})


GRAPH = [raw, clean, report, audit]
KEYS = ["raw", "clean", "report", "audit"]


def _run(instance, io_manager, values, selection=None):
    result = materialize(
        GRAPH,
        instance=instance,
        resources={"io_manager": io_manager},
        run_config={"ops": {"raw": {"config": {"values": values}}}},
        selection=selection,
    )
    assert result.success
    return {k: latest(instance, k) for k in KEYS if selection is None or k in selection}


def _status(instance, key):
    return get_stale_status_resolver(instance, GRAPH).get_status(AssetKey(key))


def _parent(conn, table):
    p = conn.parent(table)
    return {"source": p.source, "table": p.table, "version": p.version, "data_sha": p.data_sha}


def test_identical_rerun_changes_nothing_and_a_new_input_flows_down(fresh_instance, io_manager):
    inst = fresh_instance
    first = _run(inst, io_manager, [1, 2, 3])
    conn = io_manager.connection()
    for key, event in first.items():
        # The data version Dagster records is the table's data_sha, user-provided.
        assert event.tags[DATA_VERSION_TAG] == meta(event, "datom/data_sha")
        assert event.tags[DATA_VERSION_IS_USER_PROVIDED_TAG] == "true"
        assert meta(event, "datom/change") == "full"
        assert meta(event, "datom/version") == conn.resolve(key)
    assert parents_shown(first["clean"]) == [as_shown(_parent(conn, "raw"))]
    assert parents_shown(first["report"]) == [as_shown(_parent(conn, "clean"))]
    # Not loaded, still a parent: at its current version.
    assert parents_shown(first["audit"]) == [as_shown(_parent(conn, "clean"))]

    second = _run(inst, io_manager, [1, 2, 3])
    for key in KEYS:
        assert meta(second[key], "datom/change") == "none"
        assert second[key].tags[DATA_VERSION_TAG] == first[key].tags[DATA_VERSION_TAG]
        assert meta(second[key], "datom/version") == meta(first[key], "datom/version")
        assert len(conn.history(key)) == 1
        assert _status(inst, key) == StaleStatus.FRESH

    # Only the upstream, same data: downstream stays fresh.
    _run(inst, io_manager, [1, 2, 3], selection=["raw"])
    assert [_status(inst, k) for k in KEYS] == [StaleStatus.FRESH] * 4

    # New data upstream: its child becomes stale ...
    changed = _run(inst, io_manager, [1, 2, 4], selection=["raw"])
    assert meta(changed["raw"], "datom/change") == "full"
    assert _status(inst, "clean") == StaleStatus.STALE

    # ... and rebuilding them gives new versions whose parents are the exact new ones.
    third = _run(inst, io_manager, [1, 2, 4])
    for key in KEYS[:3]:
        assert meta(third[key], "datom/version") != meta(first[key], "datom/version")
        assert len(conn.history(key)) == 2
    assert parents_shown(third["clean"]) == [
        as_shown(
            {
                "source": "study",
                "table": "raw",
                "version": meta(changed["raw"], "datom/version"),
                "data_sha": meta(changed["raw"], "datom/data_sha"),
            }
        )
    ]
    assert parents_shown(third["report"]) == [as_shown(_parent(conn, "clean"))]
    assert parents_shown(third["audit"]) == [as_shown(_parent(conn, "clean"))]
    # audit's own data did not change: a new version over the same data, nothing uploaded.
    assert meta(third["audit"], "datom/change") == "metadata_only"
    assert all(_status(inst, k) == StaleStatus.FRESH for k in KEYS)
    assert conn.validate().ok


def test_pinning_an_old_upstream_version_records_it_as_parent(instance, io_manager):
    _run(instance, io_manager, [1, 2, 3], selection=["raw", "clean"])
    conn = io_manager.connection()
    old = conn.resolve("clean")
    _run(instance, io_manager, [5], selection=["raw", "clean"])
    assert conn.resolve("clean") != old

    @asset(ins={"clean": AssetIn(metadata={"datom_version": old[:10]})})
    def pinned_report(clean: pd.DataFrame) -> pd.DataFrame:
        assert clean["v"].tolist() == [10, 20, 30]  # the old data, not the current
        return clean

    materialize(
        [raw, clean, pinned_report],
        instance=instance,
        resources={"io_manager": io_manager},
        selection=["pinned_report"],
    )
    [parent] = parents_shown(latest(instance, "pinned_report"))
    assert parent["table"] == "clean" and parent["version"] == old[:12]
    assert conn.metadata("pinned_report")["parents"][0]["version"] == old


VENDOR_DM = AssetSpec("vendor_dm", metadata={"datom_table": "dm"}).with_io_manager_key("vendor")


@asset
def enriched(vendor_dm: pd.DataFrame) -> pd.DataFrame:
    return vendor_dm.assign(flag=True)


@asset(deps=[VENDOR_DM, enriched])
def summary() -> pd.DataFrame:
    return pd.DataFrame({"n": [1]})


def test_upstream_in_another_project_is_recorded_with_its_source(instance, tmp_path):
    study = project_io_manager(tmp_path, "study")
    vendor = project_io_manager(tmp_path, "vendor")
    dm = pd.DataFrame({"subject": ["s1", "s2"]})
    imported = onboard(vendor.connection(), "dm", dm)
    resources = {"io_manager": study, "vendor": vendor}
    assert materialize(
        [VENDOR_DM, enriched, summary], instance=instance, resources=resources
    ).success

    lineage = [{"project": "vendor", "table": "dm", "version_sha": imported.data_sha}]
    event = latest(instance, "enriched")
    assert parents_shown(event) == [
        as_shown(
            {
                "source": "vendor",
                "table": "dm",
                "version": imported.version,
                "data_sha": imported.data_sha,
            }
        )
    ]
    assert _lineage_shown(event) == lineage
    column = event.metadata["datom/source_lineage"].value.schema.columns[2]
    assert column.name == "data_sha" and "version_sha" in (column.description or "")
    # The lineage is derived by datom itself, and follows through unloaded dependencies.
    conn = study.connection()
    assert [s.to_json() for s in conn.lineage("enriched")] == lineage
    summary_parents = {(p["source"], p["table"]) for p in conn.metadata("summary")["parents"]}
    assert summary_parents == {("vendor", "dm"), ("study", "enriched")}
    assert _lineage_shown(latest(instance, "summary")) == lineage
    tree = conn.lineage("enriched", depth="parents")
    assert tree.parents[0].project == "vendor" and not tree.parents[0].resolved
    assert dc.connect(tmp_path / "vendor" / "repo").history("dm")[0].version == imported.version


def _lineage_shown(event) -> list[dict[str, str]]:
    """``datom/source_lineage`` rows in the recorded spelling (data_sha as version_sha)."""
    rows = [dict(r.data) for r in event.metadata["datom/source_lineage"].value.records]
    return [
        {"project": r["project"], "table": r["table"], "version_sha": r["data_sha"]} for r in rows
    ]
