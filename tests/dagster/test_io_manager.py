"""DatomIOManager: storing and loading pandas, polars and pyarrow; refusals; records."""

import datetime as dt
import decimal
import re
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import datom_core as dc
from dagster import (
    AssetIn,
    AssetKey,
    DagsterEventType,
    RetryPolicy,
    asset,
    build_input_context,
    build_output_context,
    materialize,
)
from datom_dagster import DatomIOManager, DatomResource, UrlStorage, datom_home

from .conftest import latest, meta

PANDAS = pd.DataFrame(
    {
        "i": [1, 2, 3],
        "f": [0.5, None, 2.25],
        "s": ["a", None, "c"],
        "d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None],
        "t": pd.to_datetime(["2024-01-01 10:00", None, "2024-01-03 00:00"], utc=True),
        "b": [True, False, None],
    }
)
POLARS = pl.DataFrame({"i": [1, 2, None], "s": ["x", "y", None], "d": [dt.date(2024, 1, 1)] * 3})
ARROW = pa.table({"i": pa.array([1, 2], pa.int32()), "s": pa.array(["p", "q"], pa.large_string())})


@asset
def pd_out() -> pd.DataFrame:
    return PANDAS


@asset
def pl_out() -> pl.DataFrame:
    return POLARS


@asset
def pa_out() -> pa.Table:
    return ARROW


@asset
def lazy_out() -> pl.LazyFrame:
    return POLARS.lazy()


@asset
def consumer(pd_out: pd.DataFrame, pl_out: pl.DataFrame, pa_out: pa.Table, lazy_out: pl.LazyFrame):
    # Each input arrives as its annotation asks, equal to what was stored.
    pd.testing.assert_frame_equal(pd_out, PANDAS, check_dtype=False)
    assert pl_out.equals(POLARS)
    assert pa_out.equals(ARROW)
    assert isinstance(lazy_out, pl.LazyFrame) and lazy_out.collect().equals(POLARS)
    return pd.DataFrame({"ok": [True]})


@asset
def as_other_types(pd_out: pl.DataFrame, pl_out: pa.Table, pa_out) -> pa.Table:
    # Crossing libraries keeps identity; an unannotated input comes as pandas.
    assert isinstance(pd_out, pl.DataFrame) and isinstance(pl_out, pa.Table)
    assert isinstance(pa_out, pd.DataFrame)
    hashes = [dc.hash_table(x).data_sha for x in (pd_out, pl_out, pa_out)]
    return pa.table({"sha": hashes})


def test_pandas_polars_arrow_round_trip(instance, io_manager):
    assets = [pd_out, pl_out, pa_out, lazy_out, consumer, as_other_types]
    assert materialize(assets, instance=instance, resources={"io_manager": io_manager}).success

    conn = io_manager.connection()
    originals = {"pd_out": PANDAS, "pl_out": POLARS, "pa_out": ARROW, "lazy_out": POLARS}
    for name, original in originals.items():
        assert meta(latest(instance, name), "datom/data_sha") == dc.hash_table(original).data_sha
    shas = conn.read("as_other_types", as_="arrow").column("sha").to_pylist()
    assert shas == [dc.hash_table(x).data_sha for x in (PANDAS, POLARS, ARROW)]
    current = {t.name: t.current_data_sha for t in conn.tables()}
    assert current["lazy_out"] == current["pl_out"] == dc.hash_table(POLARS).data_sha


@asset(ins={"pd_out": AssetIn(metadata={"columns": ["s", "i"]})})
def narrow(pd_out):
    assert list(pd_out.columns) == ["s", "i"]
    return pd_out


def test_column_selection(instance, io_manager):
    materialize([pd_out, narrow], instance=instance, resources={"io_manager": io_manager})
    assert io_manager.connection().metadata("narrow")["colnames"] == ["s", "i"]


@asset(retry_policy=RetryPolicy(max_retries=2))
def not_a_table():
    return [1, 2, 3]


@asset(retry_policy=RetryPolicy(max_retries=2))
def unhashable() -> pd.DataFrame:
    return pd.DataFrame({"ok": [1, 2], "money": [decimal.Decimal("1.5"), decimal.Decimal("2")]})


def _failure(result):
    [failure] = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
    retries = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_UP_FOR_RETRY]
    assert not retries, "a deterministic refusal must not be retried"
    return failure.step_failure_data.error.to_string()


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (not_a_table, r"DatomIOManager stores a pandas DataFrame.*returned builtins.list"),
        (unhashable, r"money \(object\): cast it to float64"),
    ],
)
def test_refused_outputs_fail_the_step_and_write_nothing(instance, io_manager, node, expected):
    result = materialize(
        [node], instance=instance, resources={"io_manager": io_manager}, raise_on_error=False
    )
    assert not result.success
    message = _failure(result)
    assert re.search(expected, message, re.DOTALL)
    assert "nothing was written" in message.lower()
    assert io_manager.connection().tables() == []


@asset
def numbers() -> pd.DataFrame:
    return pd.DataFrame({"n": [1, 2, 3]})


def test_commit_and_history_name_the_asset_and_the_run(instance, io_manager):
    first = materialize([numbers], instance=instance, resources={"io_manager": io_manager})
    conn = io_manager.connection()
    [entry] = conn.history("numbers")
    assert entry.extra["dagster_run_id"] == first.run_id
    assert entry.extra["dagster_asset_key"] == "numbers"
    assert entry.extra["dagster_step_key"] == "numbers"
    assert first.run_id in entry.commit_message and "numbers" in entry.commit_message
    commit = meta(latest(instance, "numbers"), "datom/commit")
    assert conn.repo.log()[0].id == commit and first.run_id in conn.repo.log()[0].message

    # An unchanged re-run records nothing and points at the commit that recorded the version.
    second = materialize([numbers], instance=instance, resources={"io_manager": io_manager})
    again = latest(instance, "numbers")
    assert second.run_id != first.run_id
    assert meta(again, "datom/change") == "none" and meta(again, "datom/commit") == commit
    assert len(conn.history("numbers")) == 1


def test_zero_config_lives_under_datom_home(instance, tmp_path, monkeypatch):
    monkeypatch.delenv("DATOM_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert datom_home() == tmp_path / "user" / ".datom"
    materialize([numbers], instance=instance, resources={"io_manager": DatomIOManager()})
    clone = tmp_path / "user" / ".datom" / "dagster" / "repo"
    assert dc.connect(clone).read("numbers")["n"].tolist() == [1, 2, 3]
    assert (tmp_path / "user" / ".datom" / "dagster" / "repo.remote.git").is_dir()
    assert (tmp_path / "user" / ".datom" / "dagster" / "store" / "datom").is_dir()

    monkeypatch.setenv("DATOM_HOME", str(tmp_path / "elsewhere"))
    materialize([numbers], instance=instance, resources={"io_manager": DatomIOManager()})
    assert dc.connect(tmp_path / "elsewhere" / "dagster" / "repo").tables()[0].name == "numbers"


def test_hand_built_contexts_work_without_a_step(io_manager):
    # Unit-testing an asset with build_output_context: stored, no data version hook.
    out = build_output_context(asset_key=AssetKey("numbers"))
    io_manager.handle_output(out, pd.DataFrame({"n": [7]}))
    assert out.get_logged_metadata()["datom/change"].value == "full"
    loaded = io_manager.load_input(build_input_context(asset_key=AssetKey("numbers")))
    assert loaded["n"].tolist() == [7]


def test_a_clone_of_another_project_is_refused(tmp_path, io_manager):
    io_manager.connection()
    other = DatomResource(project_name="other", clone_path=io_manager.datom.clone_path)
    with pytest.raises(dc.ProjectConfigError, match="holds project 'study'"):
        other.connection()


def test_storage_is_one_choice(tmp_path: Path):
    # Two locations cannot both be given: the storage is one variant, chosen by its kind.
    with pytest.raises(Exception, match="exactly one key"):
        DatomResource(storage={"s3": {"bucket": "b"}, "local": {"path": str(tmp_path)}})
    assert DatomResource(storage={"s3": {"bucket": "b"}}).storage.bucket == "b"
    url = DatomResource(storage=UrlStorage(url=f"file://{tmp_path}/s"))
    assert url.configured_store().url == f"file://{tmp_path}/s/datom"
    assert DatomResource().configured_store() is None


@asset(metadata={"datom_table": "Adverse events (AE)"})
def ae() -> pd.DataFrame:
    return pd.DataFrame({"term": ["headache"]})


@asset
def ae_count(ae: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"n": [len(ae)]})


def test_datom_table_metadata_names_the_table(instance, io_manager):
    materialize([ae, ae_count], instance=instance, resources={"io_manager": io_manager})
    conn = io_manager.connection()
    assert {t.name for t in conn.tables()} == {"Adverse events (AE)", "ae_count"}
    assert meta(latest(instance, "ae"), "datom/table") == "Adverse events (AE)"
    assert conn.metadata("ae_count")["parents"][0]["table"] == "Adverse events (AE)"
