"""The UI shows the metadata: on the instance's events and through the webserver's GraphQL API."""

import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from dagster._core.definitions.data_version import DATA_VERSION_TAG

import datom_core as dc
from dagster import AssetKey, materialize
from datom_dagster._metadata import DATOM_KEYS, STANDARD_KEYS

from .conftest import as_shown, dagster_process, latest
from .defs_webserver import ASSETS

REPO_ROOT = Path(__file__).resolve().parents[2]

QUERY = """
query Latest($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    dataVersion
    assetMaterializations(limit: 1) {
      runId
      tags { key value }
      metadataEntries {
        label
        ... on TextMetadataEntry { text }
        ... on IntMetadataEntry { intValue }
        ... on JsonMetadataEntry { jsonString }
        ... on UrlMetadataEntry { url }
        ... on TableSchemaMetadataEntry { schema { columns { name type } } }
        ... on TableMetadataEntry { table { records } }
        ... on MarkdownMetadataEntry { mdStr }
        ... on AssetMetadataEntry { assetKey { path } }
      }
    }
  }
}
"""


def _plain(entry: dict) -> object:
    """A GraphQL metadata entry's value, in the shape the instance event holds it."""
    if "jsonString" in entry:
        return json.loads(entry["jsonString"])
    if "schema" in entry:
        return [(c["name"], c["type"]) for c in entry["schema"]["columns"]]
    if "table" in entry:
        return [json.loads(r) for r in entry["table"]["records"]]
    if "assetKey" in entry:
        return entry["assetKey"]["path"]
    for field in ("text", "intValue", "url", "mdStr"):
        if field in entry:
            return entry[field]
    raise AssertionError(f"unexpected metadata entry {entry}")


def _event_plain(value: object) -> object:
    from dagster import AssetKey, TableMetadataValue, TableSchema

    if isinstance(value, TableSchema):
        return [(c.name, c.type) for c in value.columns]
    if isinstance(value, TableMetadataValue):
        return [dict(r.data) for r in value.records]
    if isinstance(value, AssetKey):
        return list(value.path)
    return value


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, payload: dict) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    request = urllib.request.Request(
        url, json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )
    with opener.open(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def webserver(fresh_instance, tmp_path):
    """``dagster-webserver`` on 127.0.0.1 over the test instance; yields its GraphQL URL."""
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": fresh_instance.root_directory,
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "NO_PROXY": "127.0.0.1",
    }
    command = [
        str(Path(sys.executable).parent / "dagster-webserver"),
        *("-h", "127.0.0.1", "-p", str(port)),
        *("-m", "tests.dagster.defs_webserver", "-d", str(REPO_ROOT)),
    ]
    with dagster_process(command, env, tmp_path / "webserver.log"):
        yield f"http://127.0.0.1:{port}/graphql"


def _query_when_loaded(url: str, keys: list[str], log: Path) -> list[dict]:
    variables = {"keys": [{"path": [k]} for k in keys]}
    deadline = time.monotonic() + 90
    while True:
        try:
            nodes = _post(url, {"query": QUERY, "variables": variables})["data"]["assetNodes"]
            if len(nodes) == len(keys):
                return nodes
        except OSError:
            pass  # not listening yet
        assert time.monotonic() < deadline, f"webserver never served the assets:\n{log.read_text()}"
        time.sleep(0.5)


def test_materialization_metadata_in_the_instance_and_the_ui(fresh_instance, webserver, tmp_path):
    clone = tmp_path / "project" / "repo"
    from datom_dagster import DatomIOManager, DatomResource, LocalStorage

    io = DatomIOManager(
        datom=DatomResource(
            clone_path=str(clone), storage=LocalStorage(path=str(tmp_path / "project" / "store"))
        )
    )
    assert materialize(ASSETS, instance=fresh_instance, resources={"io_manager": io}).success
    conn = dc.connect(clone)

    # 1. The instance's latest materialization event carries every key.
    events = {a.key.path[-1]: latest(fresh_instance, a.key) for a in ASSETS}
    derived = events["derived"]
    assert set(DATOM_KEYS + STANDARD_KEYS) <= set(derived.metadata)
    value = {k: _event_plain(v.value) for k, v in derived.metadata.items()}
    current = conn.metadata("derived")
    assert value["datom/version"] == dc.metadata_sha(current) == conn.resolve("derived")
    assert value["datom/data_sha"] == current["data_sha"] == derived.tags[DATA_VERSION_TAG]
    assert value["datom/parquet_sha"] == current["parquet_sha"]
    assert value["datom/change"] == "full"
    assert value["datom/table"] == "derived" and value["datom/project"] == "dagster"
    assert value["datom/commit"] == conn.repo.log()[0].id
    assert value["datom/parents"] == [as_shown(p) for p in current["parents"]]
    assert value["datom/parents"][0]["version"] == conn.resolve("source")[:12]
    assert value["datom/parent/source"] == ["source"]  # a link to the upstream asset
    assert value["datom/rows_after"] == 3 and "datom/rows_before" not in value
    assert "first version" in value["datom/changes"]
    assert value["datom/source_lineage"] == []
    assert value["dagster/row_count"] == 3
    assert value["dagster/column_schema"] == [
        ("id", "int64"),
        ("name", "string"),
        ("double", "int64"),
    ]
    uri = value["dagster/uri"]
    assert uri.startswith(conn.store.url) and uri.endswith(
        f"/derived/{current['data_sha']}.parquet"
    )
    assert dc.file_sha(uri) == current["parquet_sha"]  # the URI really is the stored object

    # 2. The webserver's GraphQL API returns the same values.
    nodes = _query_when_loaded(webserver, ["source", "derived"], tmp_path / "webserver.log")
    for node in nodes:
        key = node["assetKey"]["path"][-1]
        event = events[key]
        [shown] = node["assetMaterializations"]
        entries = {e["label"]: _plain(e) for e in shown["metadataEntries"]}
        expected = {k: _event_plain(v.value) for k, v in event.metadata.items()}
        assert set(DATOM_KEYS + STANDARD_KEYS) <= set(entries)
        assert entries == expected
        assert node["dataVersion"] == event.tags[DATA_VERSION_TAG]
        assert {t["key"]: t["value"] for t in shown["tags"]}[DATA_VERSION_TAG] == event.tags[
            DATA_VERSION_TAG
        ]
    assert AssetKey("derived") in fresh_instance.get_asset_keys()
