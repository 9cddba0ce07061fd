"""Format-1 projects — written by R datom 0.1.1, and by this package's format-1 release
(``fixtures/py_format1``) — are read as they are, then converted by a first write, in
Python or in R 0.2.0; both languages read the result."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import yaml

import datom_core as dc
from tests.rdatom.rsession import RSession
from tests.rdatom.scenarios import (
    NOTE,
    STANDARD_TABLES,
    Project,
    keys,
    load_json,
    r_standard_project,
    tree_snapshot,
)

# One worker per module under `--dist loadgroup`: its R process and projects are built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rdatom-format1")]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "py_format1"


def restore_py_format1(base: Path) -> Project:
    """The committed format-1 project, as a bare remote and a store under ``base``."""
    meta = json.loads((FIXTURE / "steps.json").read_text())
    p = Project(meta["project"], base / "clone", base / "store", base / "remote.git")
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(FIXTURE / "remote.bundle"), str(p.remote)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["git", "-C", str(p.remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    shutil.copytree(FIXTURE / "store", p.store)
    _relocate(p, base / "relocate")
    p.steps = [tuple(s) for s in meta["steps"]]
    return p


def _relocate(p: Project, work: Path) -> None:
    """Point project.yaml at where the fixture now lives, as a team moving its store does
    (one plain git commit; the documents of the format-1 release stay as they were)."""
    git = ["git", "-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid"]
    subprocess.run([*git, "clone", "-q", str(p.remote), str(work)], check=True, capture_output=True)
    path = work / ".datom" / "project.yaml"
    config = yaml.safe_load(path.read_text())
    config["storage"]["root"] = str(p.store)
    config["repo"]["remote"] = str(p.remote)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    for args in (["commit", "-qam", "Move the store"], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run([*git, "-C", str(work), *args], check=True, capture_output=True)
    shutil.rmtree(work)


def make_project(kind: str, r011: RSession, base: Path) -> Project:
    if kind == "r011":
        return r_standard_project(r011, base, "OLDR")
    return restore_py_format1(base)


def py_clone(p: Project, path: Path) -> dc.Connection:
    return dc.clone(p.remote, path)


def current(p: Project) -> dict[str, str]:
    return {table: version for table, _, version in p.steps}


def versions(p: Project, table: str) -> list[str]:
    """The history, newest first: a revert to a recorded version adds no entry."""
    seen: list[str] = []
    for t, _, v in p.steps:
        if t == table and v not in seen:
            seen.append(v)
    return seen[::-1]


@pytest.fixture(scope="module", params=["r011", "py_format1"])
def old(
    request: pytest.FixtureRequest, r011: RSession, tmp_path_factory: pytest.TempPathFactory
) -> Project:
    return make_project(request.param, r011, tmp_path_factory.mktemp(request.param))


def test_documents_are_format1(old: Project) -> None:
    manifest = old.store_doc(".metadata/manifest.json")
    assert "tables" in manifest and "artifacts" not in manifest and "schema_version" not in manifest
    doc = old.store_doc("dm/.metadata/metadata.json")
    assert "kind" not in doc and "schema_version" not in doc


@pytest.mark.parametrize("role", ["developer", "reader"])
def test_format1_reads(old: Project, role: str, tmp_path: Path) -> None:
    conn = py_clone(old, tmp_path / "c") if role == "developer" else old.py_reader()
    assert {t.name: t.current_version for t in conn.tables()} == current(old)
    for name in STANDARD_TABLES:
        hist = conn.history(name)
        assert [v.version for v in hist] == versions(old, name), name
        for v in hist:
            table = conn.read(name, version=v.version, as_="arrow")
            assert dc.hash_table(table).data_sha == v.data_sha, (name, v.version)
        for snap in (old.datom_root / name / ".metadata").glob("*.json"):
            if snap.stem not in ("metadata", "version_history"):
                assert dc.metadata_sha(load_json(snap)) == snap.stem, snap


def test_format1_validates_clean(old: Project, tmp_path: Path) -> None:
    conn = py_clone(old, tmp_path / "c")
    before = tree_snapshot(old.store)
    assert conn.validate().problems == ()
    assert conn.validate(fix=True).problems == ()
    assert tree_snapshot(old.store) == before, "validate(fix=True) changed a clean format-1 store"


def _messages(
    caught: list[warnings.WarningMessage],
    records: list[logging.LogRecord],
    capsys: pytest.CaptureFixture[str],
) -> list[str]:
    """What a call said, on any channel: warnings, log records, stdout/stderr lines."""
    out, err = capsys.readouterr()
    said = [str(w.message) for w in caught] + [r.getMessage() for r in records]
    return said + (out + err).splitlines()


@pytest.mark.parametrize("kind", ["r011", "py_format1"])
def test_python_write_converts(
    kind: str,
    r011: RSession,
    r020: RSession,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    p = make_project(kind, r011, tmp_path / "p")
    conn = py_clone(p, tmp_path / "c")
    dm = conn.read("dm", as_="arrow")
    before_entries = p.store_doc(".metadata/manifest.json")["tables"]
    old_sha = p.store_doc("dm/.metadata/metadata.json")["data_sha"]
    caplog.set_level(logging.INFO)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capsys.readouterr()
        first = conn.write("dm", dm, metadata=NOTE)
        said = [m for m in _messages(caught, caplog.records, capsys) if "v2" in m]
        caplog.clear()
        caught.clear()
        second = conn.write("dm", dm, metadata=NOTE)
        said_again = [m for m in _messages(caught, caplog.records, capsys) if "v2" in m]
    # One metadata-only version (kind is now written), nothing uploaded; then a no-op.
    assert (first.change, first.data_sha, first.uploaded) == ("metadata_only", old_sha, False)
    assert second.change == "none"
    assert len(said) == 1 and "0.1" in said[0], said
    assert said_again == []
    for manifest in (
        load_json(conn.path / ".datom" / "manifest.json"),
        p.store_doc(".metadata/manifest.json"),
    ):
        assert manifest["schema_version"] == 2 and "tables" not in manifest
        assert sorted(manifest["artifacts"]) == list(STANDARD_TABLES)
        for name, entry in manifest["artifacts"].items():
            assert entry["kind"] == "table"
            if name != "dm":  # untouched entries: kind put first, nothing else changed
                assert keys(entry) == ["kind", *before_entries[name]], name
                assert entry == {"kind": "table", **before_entries[name]}, name
        assert manifest["artifacts"]["dm"]["current_version"] == first.version
    assert conn.validate().problems == ()
    # R 0.2.0 lists the converted project and reads every version of it.
    seen = r020.call("r_describe", conn=p.r_reader())
    assert sorted(seen) == list(STANDARD_TABLES)
    assert seen["dm"]["current_version"] == first.version
    for name, entry in seen.items():
        assert all(v["rehash"] == v["data_sha"] for v in entry["versions"]), name


@pytest.mark.parametrize("kind", ["r011", "py_format1"])
def test_r_write_converts(kind: str, r011: RSession, r020: RSession, tmp_path: Path) -> None:
    p = make_project(kind, r011, tmp_path / "p")
    rclone = tmp_path / "rclone"
    r020.call("r_clone", path=rclone, store=p.store, remote=p.remote)
    res = r020.call("r_write", conn=p.r_conn(rclone), name="dm", data="dm_v1", metadata=NOTE)
    assert res["action"] == "metadata_only"
    manifest = p.store_doc(".metadata/manifest.json")
    assert manifest["schema_version"] == 2 and sorted(manifest["artifacts"]) == list(
        STANDARD_TABLES
    )
    for role in ("developer", "reader"):
        conn = py_clone(p, tmp_path / "c") if role == "developer" else p.py_reader()
        expected = {**current(p), "dm": res["version"]}
        assert {t.name: t.current_version for t in conn.tables()} == expected, role
        assert [v.version for v in conn.history("dm")] == [res["version"], *versions(p, "dm")]
        for name in STANDARD_TABLES:
            for v in conn.history(name):
                table = conn.read(name, version=v.version, as_="arrow")
                assert dc.hash_table(table).data_sha == v.data_sha, (role, name, v.version)
        if role == "developer":
            assert conn.validate().problems == ()
            again = conn.write("dm", conn.read("dm", as_="arrow"), metadata=NOTE)
            assert again.change == "none"
