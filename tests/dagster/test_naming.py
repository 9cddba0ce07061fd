"""Asset key + partition -> table name: documented, deterministic, always valid, injective."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import datom_core as dc
from dagster import (
    AssetKey,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
)
from datom_dagster import table_name

SAFE = re.compile(r".*-[0-9a-f]{10}")


@pytest.mark.parametrize(
    ("key", "partition", "expected"),
    [
        (AssetKey("sales"), None, "sales"),
        (AssetKey(["finance", "sales"]), None, "finance__sales"),
        (AssetKey(["a-b", "c"]), None, "a-b__c"),
        (AssetKey("sales"), "2024-01-31", "sales(2024-01-31)"),
        (AssetKey("sales"), "New York", "sales(New York)"),
        (
            AssetKey("sales"),
            MultiPartitionKey({"region": "eu", "date": "2024-01-31"}),
            "sales(2024-01-31)(eu)",
        ),
    ],
)
def test_readable_keys_keep_readable_names(key, partition, expected):
    assert table_name(key, partition) == expected


def test_multi_partition_key_given_as_a_string_is_split_by_the_definition():
    pdef = MultiPartitionsDefinition(
        {"date": StaticPartitionsDefinition(["d1"]), "region": StaticPartitionsDefinition(["eu"])}
    )
    assert table_name(AssetKey("s"), "d1|eu", partitions_def=pdef) == "s(d1)(eu)"


@pytest.mark.parametrize(
    ("key", "partition", "readable_part"),
    [
        (AssetKey("_staging"), None, "t_staging-"),
        (AssetKey("1st"), None, "t1st-"),
        (AssetKey("datom"), None, "datom-"),  # reserved name
        (AssetKey("NUL"), None, "NUL-"),  # a Windows device name: no folder can take it
        (AssetKey("com1"), None, "com1-"),
        (AssetKey(["a__b"]), None, "a__b-"),  # would read as two components
        (AssetKey(["a", "b c"]), None, "a__b_c-"),
        (AssetKey("events"), "2024-01-31-13:00", "events(2024-01-31-13_00)-"),
        (AssetKey("s"), "x)(y", "s(x__y)-"),  # would read as two dimensions
        (AssetKey("s"), "ünï", "s(_n_)-"),
    ],
)
def test_unsafe_keys_get_the_safe_form(key, partition, readable_part):
    name = table_name(key, partition)
    assert SAFE.fullmatch(name) and name.startswith(readable_part)
    assert dc.validate_table_name(name) == name


def test_long_names_are_cut_with_their_hash():
    a, b = AssetKey(["x" * 200]), AssetKey(["x" * 201])
    assert len(table_name(a)) == 128 and table_name(a) != table_name(b)


def test_override_replaces_the_base_name_and_is_validated():
    assert table_name(AssetKey("x"), "p1", override="dm (raw)") == "dm (raw)(p1)"
    with pytest.raises(dc.InvalidNameError, match="datom_table"):
        table_name(AssetKey("x"), override="bad/name")


components = st.text(min_size=1, max_size=12)
keys = st.lists(components, min_size=1, max_size=3)
partitions = st.none() | st.text(min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(key=keys, partition=partitions)
def test_always_a_valid_and_deterministic_name(key, partition):
    name = table_name(AssetKey(key), partition)
    assert dc.validate_table_name(name) == name
    assert table_name(AssetKey(list(key)), partition) == name


@settings(max_examples=300, deadline=None)
@given(a=st.tuples(keys, partitions), b=st.tuples(keys, partitions))
def test_different_assets_or_partitions_get_different_names(a, b):
    if a != b:
        assert table_name(AssetKey(a[0]), a[1]) != table_name(AssetKey(b[0]), b[1])
