"""The first line of every materialization and the run log's line per written table:
the version's place in its history, the one before, and the change in words."""

import pandas as pd

from dagster import AssetKey, Config, DagsterInstance, asset, materialize
from datom_dagster import DatomIOManager

from .conftest import latest, meta


class Rows(Config):
    rows: int = 2
    bump: int = 0  # added to the values of column b


@asset
def unkeyed(config: Rows) -> pd.DataFrame:
    """No key: rows are appended, or one column's values change."""
    n = config.rows
    return pd.DataFrame({"a": range(n), "b": [10 * i + config.bump for i in range(n)]})


def _run(instance: DagsterInstance, io: DatomIOManager, rows: int, bump: int = 0) -> tuple:
    config = {"ops": {"unkeyed": {"config": {"rows": rows, "bump": bump}}}}
    result = materialize(
        [unkeyed], instance=instance, resources={"io_manager": io}, run_config=config
    )
    assert result.success
    logs = [
        e.user_message
        for e in instance.all_logs(result.run_id)
        if e.dagster_event is None and e.user_message.startswith("datom: ")
    ]
    return latest(instance, "unkeyed"), logs


def test_every_version_says_where_it_stands_and_what_changed(
    fresh_instance: DagsterInstance, io_manager: DatomIOManager
) -> None:
    first, logs = _run(fresh_instance, io_manager, 2)
    v1 = meta(first, "datom/version")
    assert meta(first, "datom/summary") == "v1 of 1 — first version: 2 rows, 2 columns"
    assert logs == [f"datom: unkeyed {v1[:12]}: v1 of 1 — first version: 2 rows, 2 columns"]

    # One row appended, no key: the row count moved, so no column is called "changed"
    # (every column's digest covers all its rows and moved with the new row).
    second, logs = _run(fresh_instance, io_manager, 3)
    v2 = meta(second, "datom/version")
    assert meta(second, "datom/summary") == "v2 of 2, was v1 — full: +1 row"
    assert "datom/columns_changed" not in second.metadata
    changes = meta(second, "datom/changes")
    assert "columns changed: not compared (rows were added or removed" in changes
    assert f"| version | `{v1[:12]}` | `{v2[:12]}` |" in changes
    assert logs == [f"datom: unkeyed {v2[:12]}: v2 of 2, was v1 — full: +1 row"]

    # The same rows, one column's values changed: exactly that column.
    third, _ = _run(fresh_instance, io_manager, 3, bump=1)
    assert meta(third, "datom/summary") == "v3 of 3, was v2 — full: 1 column changed"
    assert meta(third, "datom/columns_changed") == 1
    assert "columns changed: `b`" in meta(third, "datom/changes")

    # A re-run that changes nothing: still a materialization (the step did store the asset,
    # and Dagster's data version stays the data_sha), labelled as what it is.
    again, logs = _run(fresh_instance, io_manager, 3, bump=1)
    written = io_manager.connection().history("unkeyed")[0].timestamp
    line = f"unchanged — still v3 (written {written})"
    assert meta(again, "datom/summary") == line and meta(again, "datom/change") == "none"
    assert meta(again, "datom/changes") == f"**unkeyed**: {line}"
    v3 = meta(third, "datom/version")
    assert logs == [f"datom: unkeyed {v3[:12]}: {line}"]
    records = fresh_instance.fetch_materializations(AssetKey("unkeyed"), limit=10).records
    assert len(records) == 4
