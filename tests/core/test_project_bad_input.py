"""Bad input gets a specific error, and git, the store and the manifest stay exactly as they were."""

from __future__ import annotations

import pandas as pd
import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame, new_project
from tests.s3util import closed_loopback_port


@pytest.fixture
def project(tmp_path):
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    return conn


BAD_NAMES = [
    "../etc",
    "dm/../../x",
    "a/b",
    "a\\b",
    "datom",
    "DATOM",
    "input_files",
    ".git",
    ".metadata",
    "renv",
    "x" * 129,
    "1abc",
    "",
    "dm\0",
    "naïve",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_table_names_are_refused(project, name: str) -> None:
    before = fingerprint(project)
    with pytest.raises(dc.InvalidNameError):
        project.write(name, frame())
    with pytest.raises(dc.InvalidNameError):
        project.read(name)
    assert fingerprint(project) == before


def test_longest_valid_name_and_odd_characters_are_fine(project) -> None:
    for name in ("x" * 128, "Lab summary (v2)", "ae-raw_1"):
        assert project.write(name, frame()).change == "full"
        assert project.read(name).equals(frame())


@pytest.mark.parametrize("version", ["abc", "ABCDEF12", "../../x", "g" * 10, "a" * 65, "12345 "])
def test_invalid_versions_are_refused(project, version: str) -> None:
    with pytest.raises(dc.InvalidNameError, match="version"):
        project.read("dm", version)


def test_unknown_table_and_version(project) -> None:
    with pytest.raises(dc.NotFoundError, match="'nope'"):
        project.read("nope")
    with pytest.raises(dc.NotFoundError, match="no version"):
        project.read("dm", "0123456789abcdef")
    with pytest.raises(dc.NotFoundError):
        project.history("nope")


def test_unhashable_data_changes_nothing(project) -> None:
    before = fingerprint(project)
    bad = pd.DataFrame({"ok": [1, 2], "tags": [["a"], ["b"]], "blob": [b"x", b"y"]})
    with pytest.raises(dc.UnhashableColumnsError) as info:
        project.write("dm", bad)
    assert "tags" in str(info.value) and "blob" in str(info.value)
    assert fingerprint(project) == before


def test_bad_parents_and_custom_metadata_change_nothing(project) -> None:
    before = fingerprint(project)
    with pytest.raises(dc.NotFoundError):
        project.write("adsl", frame(), parents=["nope"])
    bad_ref = dc.ParentRef("STUDY_001", "dm", "zz", "yy")
    with pytest.raises(dc.InvalidNameError):
        project.write("adsl", frame(), parents=[bad_ref])
    with pytest.raises(dc.DatomError, match="not JSON"):
        project.write("adsl", frame(), metadata={"when": object()})
    assert fingerprint(project) == before


@pytest.mark.timeout(120)
def test_unreachable_store_changes_nothing(project) -> None:
    before = fingerprint(project)
    dead = dc.S3Store("bucket", endpoint_url=f"http://127.0.0.1:{closed_loopback_port()}")
    conn = dc.connect(project.path, store=dead)
    with pytest.raises(dc.StoreError):
        conn.write("dm", frame(seed=9))
    with pytest.raises(dc.StoreError):
        dc.connect(store=dead, project_name="STUDY_001")
    assert fingerprint(project) == before


def test_wrong_credentials_change_nothing(
    tmp_path, s3_endpoint, s3_bucket, iam_credentials
) -> None:
    key, secret = iam_credentials
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint, key=key, secret=secret)
    conn = new_project(tmp_path, store)
    conn.write("dm", frame())
    before = fingerprint(conn)
    wrong = dc.S3Store(
        s3_bucket, prefix="p", endpoint_url=s3_endpoint, key=key, secret="not-the-secret"
    )
    with pytest.raises(dc.StoreError) as info:
        dc.connect(conn.path, store=wrong).write("dm", frame(seed=3))
    assert "not-the-secret" not in str(info.value)
    with pytest.raises(dc.StoreError):
        dc.connect(store=wrong, project_name="STUDY_001")
    assert fingerprint(conn) == before


def test_remote_that_rejects_the_push_changes_nothing(
    tmp_path, git_http_server, monkeypatch
) -> None:
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    git_http_server.create_bare("study")
    store = dc.LocalStore(tmp_path / "store")
    conn = dc.init_repo(
        tmp_path / "repo", "STUDY_001", store, remote=git_http_server.url_for("study")
    )
    conn.write("dm", frame())
    before = fingerprint(conn)
    git_http_server.deny_push("study")
    with pytest.raises(dc.GitError) as info:
        conn.write("dm", frame(seed=5))
    assert not isinstance(info.value, dc.PushRejectedError) or "rejected" in str(info.value)
    assert git_http_server.token not in str(info.value)
    assert fingerprint(conn) == before


def test_init_refuses_a_store_that_holds_a_project(tmp_path, project) -> None:
    with pytest.raises(dc.DatomError, match="already holds project"):
        dc.init_repo(tmp_path / "other", "OTHER", project.store)
