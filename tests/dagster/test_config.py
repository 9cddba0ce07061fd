"""Project configuration: S3 with EnvVar credentials, re-cloning, first use."""

import shutil
import zlib
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from dagster import EnvVar, asset, materialize
from datom_dagster import DatomIOManager, DatomResource, LocalStorage, S3Storage

from .conftest import latest, meta

KEY_ID = "AKIDDATOMTEST0000001"
SECRET = "s3cr3t-value-that-must-not-leak-0001"


@asset
def measures() -> pd.DataFrame:
    return pd.DataFrame({"m": [1.5, 2.5]})


@asset
def uses_resource(datom: DatomResource) -> pd.DataFrame:
    return pd.DataFrame({"tables": [t.name for t in datom.connection().tables()]})


def test_s3_store_with_envvar_credentials_never_leaks_them(
    fresh_instance, tmp_path, s3_endpoint, s3_bucket, monkeypatch
):
    monkeypatch.setenv("STUDY_AWS_KEY_ID", KEY_ID)
    monkeypatch.setenv("STUDY_AWS_SECRET", SECRET)
    fields = {"project_name": "s3study", "clone_path": str(tmp_path / "repo")}
    storage = {"bucket": s3_bucket, "prefix": "team", "endpoint_url": s3_endpoint}
    # Configured in Python with EnvVar (the asset body's resource), and at launch with
    # {"env": ...} in the run config (the IO manager's project).
    in_python = S3Storage(
        **storage,
        aws_access_key_id=EnvVar("STUDY_AWS_KEY_ID"),
        aws_secret_access_key=EnvVar("STUDY_AWS_SECRET"),
    )
    launch_storage = {
        **storage,
        "aws_access_key_id": {"env": "STUDY_AWS_KEY_ID"},
        "aws_secret_access_key": {"env": "STUDY_AWS_SECRET"},
    }
    at_launch = DatomResource.configure_at_launch()
    resources = {
        "project": at_launch,
        "io_manager": DatomIOManager(datom=at_launch),
        "datom": DatomResource(**fields, storage=in_python),
    }
    launch = {**fields, "storage": {"s3": launch_storage}}
    result = materialize(
        [measures, uses_resource],
        instance=fresh_instance,
        resources=resources,
        run_config={"resources": {"project": {"config": launch}}},
    )
    assert result.success

    store = dc.S3Store(s3_bucket, "team", endpoint_url=s3_endpoint)
    reader = dc.connect(store=store, project_name="s3study")
    assert reader.read("measures")["m"].tolist() == [1.5, 2.5]
    assert reader.read("uses_resource")["tables"].tolist() == ["measures"]
    uri = meta(latest(fresh_instance, "measures"), "datom/data_sha")
    assert meta(latest(fresh_instance, "measures"), "dagster/uri") == (
        f"s3://{s3_bucket}/team/datom/measures/{uri}.parquet"
    )

    # The secret is in none of: the run record, the event log, the clone, the store.
    run = fresh_instance.get_run_by_id(result.run_id)
    places = [repr(run.run_config), repr(run)]
    places += [repr(e) for e in fresh_instance.all_logs(result.run_id)]
    places += [
        p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()
    ]
    places += [
        store.read_bytes(k).decode("utf-8", "replace")
        for k in store.list()
        if not k.endswith(".parquet")
    ]
    # the clone's and its embedded remote's (whose objects the clone reads in place)
    objects = [_text(p) for p in tmp_path.rglob("*") if p.is_file() and "objects" in p.parts]
    assert any("dagster: materialize measures" in t for t in objects)  # really decompressed
    for text in places:
        assert SECRET not in text and KEY_ID not in text
    assert "STUDY_AWS_SECRET" in repr(run.run_config)  # Dagster kept the variable's name only


def _text(path: Path) -> str:
    raw = path.read_bytes()
    if "objects" in path.parts:
        try:  # git's loose objects are zlib-compressed
            raw = zlib.decompress(raw)
        except zlib.error:
            pass
    return raw.decode("utf-8", "replace")


def test_a_lost_clone_is_recloned_from_its_remote(tmp_path):
    fields = {
        "clone_path": str(tmp_path / "repo"),
        "storage": LocalStorage(path=str(tmp_path / "store")),
    }
    first = DatomIOManager(datom=DatomResource(**fields)).connection()
    written = first.write("t", pd.DataFrame({"a": [1]}))
    shutil.rmtree(tmp_path / "repo")

    again = DatomResource(**fields).connection()
    assert again.resolve("t") == written.version and again.path == tmp_path / "repo"
    assert again.write("t", pd.DataFrame({"a": [1]})).change == "none"


def test_a_half_made_clone_is_reported_not_overwritten(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "notes.txt").write_text("mine")
    iom = DatomResource(
        clone_path=str(tmp_path / "repo"), storage=LocalStorage(path=str(tmp_path / "store"))
    )
    with pytest.raises(dc.ProjectConfigError, match="is not a datom clone"):
        iom.connection()
    assert (tmp_path / "repo" / "notes.txt").read_text() == "mine"
