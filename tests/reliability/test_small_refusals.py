"""The smaller promises of the reliability issue: each refusal is clear and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame, new_project

DATOM = str(Path(sys.executable).with_name("datom"))


def _datom(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DATOM, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_a_bare_string_parent_is_one_parent(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    dm = conn.write("dm", frame())
    result = conn.write("adsl", frame(seed=3), parents="dm")
    parents = conn.metadata("adsl").parents
    assert [(p.table, p.version) for p in parents] == [("dm", dm.version)]
    assert result.change == "full"


@pytest.mark.parametrize(
    ("taken", "name", "reason"),
    [
        ("dm", "DM", "case"),
        ("dm", "Dm", "case"),
        ("dm", "dm ", "space"),
        (None, "CON", "device"),
        (None, "nul", "device"),
        (None, "com1", "device"),
        (None, "lpt9", "device"),
    ],
)
def test_names_that_collide_on_common_filesystems_are_refused(
    tmp_path: Path, taken: str | None, name: str, reason: str
) -> None:
    conn = new_project(tmp_path)
    if taken:
        conn.write(taken, frame())
    before = fingerprint(conn)
    with pytest.raises(dc.InvalidNameError) as caught:
        conn.write(name, frame(seed=1))
    assert reason in str(caught.value).lower()
    assert fingerprint(conn) == before


@pytest.mark.parametrize(
    "custom",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"nested": {"y": [1.0, float("-inf")]}},
        {"big": 10**400},
        {"text": "\ud800"},
        {"deep": {}},
    ],
    ids=["nan", "inf", "nested-inf", "huge-int", "lone-surrogate", "deep-nesting"],
)
def test_custom_metadata_json_cannot_carry_is_refused(tmp_path: Path, custom: dict) -> None:
    if "deep" in custom:
        node: dict = {}
        custom = {"deep": node}
        for _ in range(100_000):
            node["a"] = {}
            node = node["a"]
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    before = fingerprint(conn)
    with pytest.raises(dc.DatomError) as caught:
        conn.write("dm", frame(seed=2), metadata=custom)
    assert type(caught.value) is not dc.DatomError, "a specific subclass, not the root"
    assert "custom" in str(caught.value) or "metadata" in str(caught.value)
    assert fingerprint(conn) == before
    assert b"NaN" not in conn.store.read_bytes("dm/.metadata/metadata.json")


def test_validate_in_a_clone_behind_its_remote_fetches_first(tmp_path: Path) -> None:
    first = new_project(tmp_path)
    first.write("dm", frame())
    second = dc.clone(first.repo.remote_url, tmp_path / "second")
    second.write("ae", frame(seed=4))
    report = first.validate()
    assert report.ok, report
    assert {t.name for t in first.tables()} == {"dm", "ae"}


def test_temp_objects_left_by_killed_writers_are_reported_and_removed(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    result = conn.write("dm", frame())
    leftover = (
        tmp_path / "store" / "datom" / "dm" / f".{result.data_sha}.parquet.datom-tmp-0a1b2c3d"
    )
    leftover.write_bytes(b"half an upload")
    live = leftover.with_name(f".{result.data_sha}.parquet.datom-tmp-99aa88bb")
    live.write_bytes(b"a live writer's upload")
    two_hours_ago = time.time() - 7200
    os.utime(leftover, (two_hours_ago, two_hours_ago))  # older than the default grace period
    report = conn.validate()
    assert any(leftover.name in p.key for p in report.problems), report
    assert not any(live.name in p.key for p in report.problems), "a live upload is not a leftover"
    conn.validate(fix=True)
    assert not leftover.exists()
    assert live.exists(), "the fix never removes an upload younger than the grace period"
    assert conn.validate().ok
    assert any(live.name in p.key for p in conn.validate(grace_s=0).problems)
    conn.validate(fix=True, grace_s=0)
    assert not live.exists()


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (["read"], ["history"], ["--no-such-flag", "list"]):
        out = _datom(*args, cwd=tmp_path)
        assert out.returncode == 2, (args, out)
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)


def test_datom_alone_still_shows_the_whole_help(tmp_path: Path) -> None:
    out = _datom(cwd=tmp_path)
    assert "Commands:" in out.stdout + out.stderr and "datom: error" not in out.stderr


def test_a_repo_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    out = _datom("--repo", str(tmp_path / "nonexistent"), "list")
    assert out.returncode == 2, out
    assert "nonexistent" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_check_hashable_on_duplicate_columns_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("a,a,b\n1,2,3\n")
    out = _datom("check-hashable", str(path))
    assert out.returncode == 1, out


def test_init_honours_the_global_store(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere"
    out = _datom("--store", str(store), "init", str(tmp_path / "s1"), "--project", "S1")
    assert out.returncode == 0, out
    conn = dc.connect(tmp_path / "s1")
    conn.write("dm", pd.DataFrame({"a": [1]}))
    assert any(store.rglob("*.parquet")), "the parquet went to the store given by --store"
