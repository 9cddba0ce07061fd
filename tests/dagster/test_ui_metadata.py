"""What the UI shows about a version: change summary, parents, typed column schema, links."""

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

import datom_core as dc
from dagster import Config, asset, build_metadata_bounds_checks, materialize
from datom_dagster._change import change_summary
from datom_dagster._metadata import arrow_type_name, commit_url

from .conftest import latest, meta, project_io_manager


class Visits(Config):
    month: int = 1


def _visits(month: int) -> pd.DataFrame:
    """Month 1: subjects s1-s3. Month 2: s3 corrected, s1 withdrawn, s4 added, a new column."""
    if month == 1:
        return pd.DataFrame(
            {
                "USUBJID": ["s1", "s2", "s3", "s1"],
                "VISITNUM": [1, 1, 1, 2],
                "AVAL": [1.0, 2.0, 3.0, 4.0],
                "SITE": ["a", "a", "b", "a"],
                "ARM": pd.Categorical(["x", "x", "y", "x"]),
            }
        )
    return pd.DataFrame(
        {
            "USUBJID": ["s2", "s3", "s4"],
            "VISITNUM": [1, 1, 1],
            "AVAL": [2.0, 30.0, 5.0],
            "SITE": ["a", "b", "c"],
            "ARM": pd.Categorical(["x", "y", "z"]),  # other categories, same kept values
            "FLAG": ["Y", "N", "Y"],
        }
    )


@asset(metadata={"datom_key": ["USUBJID", "VISITNUM"]})
def visits(config: Visits) -> pd.DataFrame:
    return _visits(config.month)


def _run(instance, io_manager, month):
    result = materialize(
        [visits],
        instance=instance,
        resources={"io_manager": io_manager},
        run_config={"ops": {"visits": {"config": {"month": month}}}},
    )
    assert result.success
    return latest(instance, "visits")


def test_change_summary_for_a_known_pair_of_versions_is_exact(instance, io_manager):
    first = _run(instance, io_manager, 1)
    assert meta(first, "datom/rows_after") == 4 and "datom/rows_before" not in first.metadata
    assert meta(first, "datom/rows_added") == 4 and meta(first, "datom/rows_removed") == 0

    second = _run(instance, io_manager, 2)
    v1, v2 = meta(first, "datom/version"), meta(second, "datom/version")
    assert meta(second, "datom/compared_with") == v1
    numbers = {
        k: meta(second, f"datom/{k}")
        for k in (
            "rows_before",
            "rows_after",
            "columns_added",
            "columns_removed",
            "rows_added",
            "rows_removed",
            "rows_changed",
        )
    }
    # Rows by key: s4/1 added; s1/1 and s1/2 removed; s2/1 and s3/1 changed (s3's AVAL
    # 3 -> 30, and both gained a FLAG value: a row differs when any of its values does).
    assert numbers == {
        "rows_before": 4,
        "rows_after": 3,
        "columns_added": 1,
        "columns_removed": 0,
        "rows_added": 1,
        "rows_removed": 2,
        "rows_changed": 2,
    }
    md = meta(second, "datom/changes")
    assert f"| version | `{v1[:12]}` | `{v2[:12]}` |" in md
    assert "| rows | 4 | 3 |" in md
    assert "columns added: `FLAG`" in md and "columns removed: none" in md
    assert "rows by key (`USUBJID`, `VISITNUM`): 1 added, 2 removed, 2 changed" in md
    # Rows moved, so every column's digest moved: columns are not called "changed".
    assert "datom/columns_changed" not in second.metadata
    assert "columns changed: not compared by column (see rows by key)" in md
    head = "v2 of 2, was v1 — full: +1 row, -2 rows, 2 rows changed, +1 column"
    assert meta(second, "datom/summary") == head and md.startswith(f"**visits**: {head}\n")

    again = _run(instance, io_manager, 2)  # nothing changed
    assert meta(again, "datom/change") == "none" and "unchanged" in meta(again, "datom/changes")
    written = io_manager.connection().history("visits")[0].timestamp
    assert meta(again, "datom/summary") == f"unchanged — still v2 (written {written})"
    assert meta(again, "datom/changes") == f"**visits**: unchanged — still v2 (written {written})"
    assert next(iter(again.metadata)) == "datom/summary"  # the first entry the UI shows
    assert meta(again, "datom/rows_changed") == 0 and meta(again, "datom/columns_changed") == 0


def test_an_unchanged_summary_from_the_record_equals_the_read_diff(instance, io_manager):
    """The unchanged path summarises from the recorded record alone; reading must agree."""
    _run(instance, io_manager, 1)
    conn = io_manager.connection()
    record = conn.version("visits")
    key = ["USUBJID", "VISITNUM"]
    fast = change_summary(conn, "visits", record, unchanged=True, key=key)
    assert fast == conn.diff("visits", record, record, key=key)
    assert change_summary(conn, "visits", record, unchanged=True) == conn.diff(
        "visits", record, record
    )
    with pytest.raises(dc.InvalidArgumentError, match="NOPE"):
        change_summary(conn, "visits", record, unchanged=True, key=["NOPE"])


@asset(metadata={"datom_key": ["nope"]})
def badly_keyed() -> pd.DataFrame:
    return pd.DataFrame({"a": [1]})


def test_a_key_that_is_not_a_column_fails_with_the_remedy(instance, io_manager):
    result = materialize(
        [badly_keyed],
        instance=instance,
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "key column(s) ['nope']" in str(failure.event_specific_data.error)


@asset
def typed() -> pa.Table:
    utc = pa.timestamp("us", tz="UTC")
    return pa.table(
        {
            "day": pa.array([dt.date(2024, 1, 31)]),
            "at": pa.array([dt.datetime(2024, 1, 31, 8, tzinfo=dt.UTC)], type=utc),
            "arm": pa.array(["placebo"]).dictionary_encode(),
            "name": pa.array(["x"]),
            "n": pa.array([1], type=pa.int32()),
        }
    )


@asset
def typed_pandas() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "day": [dt.date(2024, 1, 31)],  # an object column of dates
            "at": pd.to_datetime(["2024-01-31 08:00"]).tz_localize("Europe/Paris").as_unit("ns"),
            "arm": pd.Categorical(["placebo"]),
            "name": ["x"],
        }
    )


def test_column_schema_types_come_from_arrow(instance, io_manager):
    materialize([typed, typed_pandas], instance=instance, resources={"io_manager": io_manager})
    schema = meta(latest(instance, "typed"), "dagster/column_schema")
    assert [(c.name, c.type) for c in schema.columns] == [
        ("day", "date"),
        ("at", "timestamp[us, tz=UTC]"),
        ("arm", "categorical<string>"),
        ("name", "string"),
        ("n", "int32"),
    ]
    schema = meta(latest(instance, "typed_pandas"), "dagster/column_schema")
    assert [(c.name, c.type) for c in schema.columns] == [
        ("day", "date"),
        ("at", "timestamp[ns, tz=Europe/Paris]"),
        ("arm", "categorical<string>"),
        ("name", "string"),
    ]
    assert arrow_type_name(pa.duration("ms")) == "duration[ms]"


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/team/study.git", "https://github.com/team/study/commit/{c}"),
        (
            "https://x-access-token:ghp_secret@github.com/team/study",
            "https://github.com/team/study/commit/{c}",
        ),
        (
            "https://gitlab.com/group/sub/study.git",
            "https://gitlab.com/group/sub/study/-/commit/{c}",
        ),
        ("https://bitbucket.org/team/study.git", "https://bitbucket.org/team/study/commits/{c}"),
        ("http://github.com/team/study.git", None),
        ("git@github.com:team/study.git", None),
        ("/srv/git/study.git", None),
        ("https://git.example.com/team/study.git", None),
        ("https://github.com/study", None),
    ],
)
def test_commit_links_only_for_known_https_hosts_and_never_with_credentials(remote, expected):
    commit = "0123456789abcdef0123456789abcdef01234567"
    url = commit_url(remote, commit)
    assert url == (expected.format(c=commit) if expected else None)
    assert url is None or "secret" not in url


def test_commit_is_text_when_the_remote_is_not_a_known_host(instance, tmp_path):
    # A local bare remote has no web page: the commit id is shown as text.
    io = project_io_manager(tmp_path, "linked")
    materialize([typed], instance=instance, resources={"io_manager": io})
    entry = latest(instance, "typed").metadata["datom/commit"]
    assert type(entry).__name__ == "TextMetadataValue"
    assert entry.value == io.connection().commit_of("typed")


@pytest.mark.filterwarnings("ignore:Function `build_metadata_bounds_checks` is currently in beta")
def test_change_numbers_drive_dagsters_own_metadata_checks(instance, io_manager):
    # The numbers are plain int metadata: Dagster's metadata bounds checks read them.
    [check] = build_metadata_bounds_checks(
        assets=[visits], metadata_key="datom/rows_removed", max_value=1
    )
    config = {"ops": {"visits": {"config": {"month": 1}}}}
    resources = {"io_manager": io_manager}
    first = materialize([visits, check], instance=instance, resources=resources, run_config=config)
    assert [e.passed for e in first.get_asset_check_evaluations()] == [True]
    config = {"ops": {"visits": {"config": {"month": 2}}}}  # two rows removed by key
    second = materialize([visits, check], instance=instance, resources=resources, run_config=config)
    [evaluation] = second.get_asset_check_evaluations()
    assert not evaluation.passed
