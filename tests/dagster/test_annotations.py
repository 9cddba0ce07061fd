"""Typed annotations: datom_annotations and datom_pin, checked when the definitions load."""

import pandas as pd
import pytest

import datom_core as dc
from dagster import AssetIn, Config, Definitions, asset, materialize
from datom_dagster import datom_annotations, datom_pin, validate_datom_definitions

from .conftest import latest, meta


class Month(Config):
    n: int = 1


@asset(metadata=datom_annotations(table="Vital signs", key=["id"], description="Vitals, SDTM"))
def vitals(config: Month) -> pd.DataFrame:
    return pd.DataFrame({"id": [1, 2], "v": [config.n, config.n * 10]})


def _pinned(version: str):
    @asset(name="vitals_then", ins={"vitals": AssetIn(metadata=datom_pin(version=version))})
    def _asset(vitals: pd.DataFrame) -> pd.DataFrame:
        return vitals

    return _asset


def test_annotations_name_the_table_key_the_rows_and_record_the_description(instance, io_manager):
    def run(n: int):
        config = {"ops": {"vitals": {"config": {"n": n}}}}
        result = materialize(
            [vitals], instance=instance, resources={"io_manager": io_manager}, run_config=config
        )
        assert result.success
        return latest(instance, "vitals")

    first = run(1)
    second = run(2)
    conn = io_manager.connection()
    assert meta(second, "datom/table") == "Vital signs"
    assert conn.metadata("Vital signs")["custom"] == {"description": "Vitals, SDTM"}
    assert meta(second, "datom/rows_changed") == 2 and meta(second, "datom/rows_added") == 0

    # datom_pin: an input pinned to the first version loads it, whatever is current.
    old = meta(first, "datom/version")
    result = materialize(
        [vitals, _pinned(old[:8])],
        instance=instance,
        resources={"io_manager": io_manager},
        selection=["vitals_then"],
    )
    assert result.success
    assert conn.read("vitals_then")["v"].tolist() == [1, 10]
    assert conn.metadata("vitals_then")["parents"][0]["version"] == old


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: datom_annotations(table="1 starts with a digit"), "datom_table"),
        (lambda: datom_annotations(key=[]), "datom_key must be a non-empty list"),
        (lambda: datom_pin(version="not-hex"), "datom_version"),
        (lambda: datom_pin(version="abc"), "datom_version"),  # too short for a prefix
        (lambda: datom_pin(version="0123abcd", set="p/s@0123abcd"), "not both"),
        (lambda: datom_pin(set="just-a-name"), "<project>/<set>"),
        (lambda: datom_pin(columns=[1]), "columns"),
    ],
)
def test_helpers_refuse_bad_options_at_once(call, message):
    with pytest.raises(dc.InvalidArgumentError, match=message):
        call()


@asset(metadata={"datom_tabel": "typo"})
def misspelt() -> pd.DataFrame:
    return pd.DataFrame({"a": [1]})


@asset(metadata={"datom_table": "_hidden"})
def badly_named() -> pd.DataFrame:
    return pd.DataFrame({"a": [1]})


@asset(ins={"misspelt": AssetIn(metadata={"datom_version": "zzzzzz", "datom_concat": "yes"})})
def pins_badly(misspelt: pd.DataFrame) -> pd.DataFrame:
    return misspelt


@asset(ins={"misspelt": AssetIn(metadata={"datom_verison": "0123abcd"})})
def pins_with_a_typo(misspelt: pd.DataFrame) -> pd.DataFrame:
    return misspelt


def test_loose_keys_are_checked_when_the_definitions_load_naming_each_asset():
    defs = Definitions(assets=[misspelt, badly_named, pins_badly, pins_with_a_typo])
    with pytest.raises(dc.InvalidArgumentError) as info:
        validate_datom_definitions(defs)
    text = str(info.value)
    assert "asset misspelt: unknown datom option 'datom_tabel'" in text
    assert "asset badly_named: datom_table:" in text
    assert "asset pins_badly, input misspelt: datom_version:" in text
    assert "asset pins_badly, input misspelt: datom_concat must be true or false" in text
    assert "asset pins_with_a_typo, input misspelt: unknown datom option 'datom_verison'" in text
    assert "4 datom option" not in text  # every problem is listed, not just the first
    good = Definitions(assets=[vitals, _pinned("0123abcd")])
    assert validate_datom_definitions(good) is good


def test_loose_keys_keep_working(instance, io_manager):
    @asset(metadata={"datom_table": "loose", "datom_key": ["a"]})
    def loose_asset() -> pd.DataFrame:
        return pd.DataFrame({"a": [1, 2]})

    assert materialize([loose_asset], instance=instance, resources={"io_manager": io_manager})
    assert meta(latest(instance, "loose_asset"), "datom/table") == "loose"
    assert meta(latest(instance, "loose_asset"), "datom/rows_added") == 2


def test_unchecked_definitions_fail_the_run_before_writing(instance, io_manager):
    result = materialize(
        [misspelt], instance=instance, resources={"io_manager": io_manager}, raise_on_error=False
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "unknown datom option 'datom_tabel'" in str(failure.event_specific_data.error)
    assert io_manager.connection().tables() == []
