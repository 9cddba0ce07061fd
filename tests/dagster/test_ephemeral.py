"""``DatomResource(ephemeral=True)``: every step in a fresh home clones the tip only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from dulwich.repo import Repo

from dagster import asset, materialize
from datom_dagster import DatomIOManager, DatomResource, S3Storage
from tests.gitserver import counted_requests

from .conftest import latest, meta


@asset
def readings() -> pd.DataFrame:
    return pd.DataFrame({"R": [1, 2, 3]})


@asset
def reading_count(readings: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"n": [len(readings)]})


def _commits(clone: Path) -> int:
    with Repo(str(clone)) as r:
        return len({s for s in r.object_store if r.object_store[s].type_name == b"commit"})


def _requests(server) -> list[str]:
    return counted_requests(server, by_service=True)


@pytest.mark.usefixtures("accelerated")  # requests counted: _fast/_prime, _fast/_advert
def test_fresh_home_steps_of_an_ephemeral_resource_clone_the_tip_only(
    fresh_instance, tmp_path, s3_endpoint, s3_bucket, any_git_http_server, monkeypatch
):
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("meta")
    storage = S3Storage(bucket=s3_bucket, prefix="eph", endpoint_url=s3_endpoint)

    def step(home: str, selection: list, ephemeral: bool = True) -> DatomIOManager:
        datom = DatomResource(
            project_name="EPH",
            home=str(tmp_path / home),  # an empty home: a fresh container
            storage=storage,
            remote=server.url_for("meta"),
            ephemeral=ephemeral,
        )
        io = DatomIOManager(datom=datom)
        assert materialize(
            [readings, reading_count],
            instance=fresh_instance,
            resources={"io_manager": io},
            selection=selection,
        ).success
        return io

    step("creator", [readings], ephemeral=False)  # creates the project
    for i in range(3):  # a history the later steps need not fetch
        step(f"hist{i}", [readings])
    seen = _requests(server)
    last = step("last", [reading_count])
    # The step's clone is one fetch (one advertisement, one pack), the push's
    # advertisement read alongside; its write then pushes straight away.
    clone = ["GET git-upload-pack", "GET git-receive-pack", "POST git-upload-pack"]
    assert sorted(seen[:3]) == sorted(clone) and seen[3] == "POST git-receive-pack"
    conn = last.datom.connection()
    assert (conn.path / ".git" / "shallow").exists()
    assert _commits(conn.path) == 2  # the tip it cloned, and its own write
    assert conn.read("reading_count")["n"].tolist() == [3]
    assert meta(latest(fresh_instance, "reading_count"), "datom/version")
    assert conn.validate().ok


def test_the_component_passes_ephemeral_to_its_resource():
    from datom_dagster import DatomComponent

    assert DatomComponent(project="EPH", ephemeral=True).resource().ephemeral is True
    assert DatomComponent(project="EPH").resource().ephemeral is False
