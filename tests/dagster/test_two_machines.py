"""Past one machine: an S3 store and an HTTPS git remote (token auth), two workers' clones."""

from pathlib import Path

import pandas as pd

import datom_core as dc
from dagster import asset, materialize
from datom_dagster import DatomIOManager, DatomResource, S3Storage

from .conftest import latest, meta, parents_shown

STATE = {"visits": 3}


@asset
def visits() -> pd.DataFrame:
    return pd.DataFrame({"VISITNUM": list(range(1, STATE["visits"] + 1))})


@asset
def visit_count(visits: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"n": [len(visits)]})


def _worker(tmp_path: Path, name: str, bucket: str, endpoint: str, remote: str) -> DatomIOManager:
    storage = S3Storage(bucket=bucket, prefix="studies/s001", endpoint_url=endpoint)
    return DatomIOManager(
        datom=DatomResource(
            project_name="STUDY_001",
            clone_path=str(tmp_path / name / "repo"),
            storage=storage,
            remote=remote,
        )
    )


def test_two_workers_share_one_project_through_s3_and_an_https_remote(
    fresh_instance, tmp_path, s3_endpoint, s3_bucket, git_http_server, monkeypatch
):
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    git_http_server.create_bare("s001-metadata")
    remote = git_http_server.url_for("s001-metadata")
    first = _worker(tmp_path, "machine-a", s3_bucket, s3_endpoint, remote)
    second = _worker(tmp_path, "machine-b", s3_bucket, s3_endpoint, remote)

    def run(worker: DatomIOManager, asset) -> None:
        resources = {"io_manager": worker}
        both = [visits, visit_count]
        assert materialize(
            both, instance=fresh_instance, resources=resources, selection=[asset]
        ).success

    # Machine A creates the project on first use; machine B joins it by cloning the remote.
    run(first, visits)
    run(second, visit_count)
    v1 = meta(latest(fresh_instance, "visits"), "datom/version")
    parents = parents_shown(latest(fresh_instance, "visit_count"))
    assert [(p["table"], p["version"]) for p in parents] == [("visits", v1[:12])]

    STATE["visits"] = 4  # new data written on machine A, used on machine B
    try:
        run(first, visits)
        run(second, visit_count)
    finally:
        STATE["visits"] = 3
    v2 = meta(latest(fresh_instance, "visits"), "datom/version")
    parents = parents_shown(latest(fresh_instance, "visit_count"))
    assert v2 != v1 and [p["version"] for p in parents] == [v2[:12]]
    assert second.connection().read("visit_count")["n"].tolist() == [4]

    for worker in (first, second):
        conn = worker.connection()
        conn.pull()
        assert conn.validate().ok
        config = (conn.path / ".git" / "config").read_text()
        assert git_http_server.token not in config and remote in config
    reader = dc.connect(
        store=dc.S3Store(s3_bucket, "studies/s001", endpoint_url=s3_endpoint),
        project_name="STUDY_001",
    )
    assert {t.name: t.version_count for t in reader.tables()} == {"visits": 2, "visit_count": 2}
