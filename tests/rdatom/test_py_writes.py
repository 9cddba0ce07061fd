"""This package writes a project; R datom 0.2.0 opens the clone as a developer and the
store as a reader, and writes into it. An R twin (the same steps, the same project name,
written by R) is the reference for every document R's bytes depend on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import datom_core as dc
from tests.rdatom.frames import CSV, frame
from tests.rdatom.rsession import RSession
from tests.rdatom.scenarios import (
    ENTRY_ORDER,
    EXPECTED_CHANGES,
    HISTORY_ORDER,
    MANIFEST_ORDER,
    METADATA_ORDER,
    STANDARD_TABLES,
    SUMMARY_ORDER,
    Project,
    in_order,
    keys,
    load_json,
    py_standard_project,
    r_standard_project,
    remote_head,
    tree_snapshot,
)

# One worker per module under `--dist loadgroup`: its R process and projects are built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rdatom-py_writes")]
PROJECT = "STUDY"
# Keys whose values are the same whoever writes the same content.
SAME_VALUE = (
    "schema_version",
    "kind",
    "data_sha",
    "hash_algo",
    "table_type",
    "nrow",
    "ncol",
    "colnames",
    "project",
    "original_file_sha",
    "original_format",
    "parents",
    "source_lineage",
    "custom",
)


@pytest.fixture(scope="module")
def pyproj(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return py_standard_project(tmp_path_factory.mktemp("py"), PROJECT)


@pytest.fixture(scope="module")
def twin(r020: RSession, tmp_path_factory: pytest.TempPathFactory) -> Project:
    return r_standard_project(r020, tmp_path_factory.mktemp("twin"), PROJECT)


@pytest.fixture(scope="module")
def r_clone(r020: RSession, pyproj: Project, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rclone") / "clone"
    r020.call("r_clone", path=path, store=pyproj.store, remote=pyproj.remote)
    return path


@pytest.fixture(scope="module", params=["developer", "reader"])
def r_view(request: pytest.FixtureRequest, r020: RSession, pyproj: Project) -> dict[str, Any]:
    if request.param == "developer":
        conn = pyproj.r_conn(request.getfixturevalue("r_clone"))
    else:
        conn = pyproj.r_reader()
    return r020.call("r_describe", conn=conn)


def _git_doc(p: Project, path: str) -> Any:
    return load_json(p.clone / path)


# -- R reads what Python wrote -------------------------------------------------------------


def test_same_changes_and_versions_as_r(pyproj: Project, twin: Project) -> None:
    """The same steps give the same change kinds and the same version ids in both languages."""
    assert [(t, c) for t, c, _ in pyproj.steps] == EXPECTED_CHANGES
    assert pyproj.steps == twin.steps


def test_r_lists_reads_and_rehashes_every_version(r_view: dict[str, Any], pyproj: Project) -> None:
    py = pyproj.py_reader()
    assert {n: e["current_version"] for n, e in r_view.items()} == {
        t.name: t.current_version for t in py.tables()
    }
    assert sorted(r_view) == list(STANDARD_TABLES)
    for name, entry in r_view.items():
        assert [(v["version"], v["data_sha"]) for v in entry["versions"]] == [
            (v.version, v.data_sha) for v in py.history(name)
        ], name
        for v in entry["versions"]:
            assert v["rehash"] == v["data_sha"], (name, v)


def test_r_sees_the_parents(r_view: dict[str, Any], pyproj: Project) -> None:
    for name in ("adsl", "adae"):
        doc = pyproj.store_doc(f"{name}/.metadata/metadata.json")
        assert r_view[name]["parents"] == doc["parents"], name


def test_r_validate_is_clean(r020: RSession, pyproj: Project, r_clone: Path) -> None:
    assert r020.call("r_validate", conn=pyproj.r_conn(r_clone)) == {"valid": True, "bad_rows": []}


def test_identical_r_writes_are_noops(r020: RSession, tmp_path: Path) -> None:
    p = py_standard_project(tmp_path / "py", PROJECT)
    clone = tmp_path / "rclone"
    r020.call("r_clone", path=clone, store=p.store, remote=p.remote)
    before = (remote_head(p.remote), tree_snapshot(p.store))
    for name in ("adae", "adsl", "dm", "lb"):
        res = r020.call("r_rewrite_current", conn=p.r_conn(clone), name=name)
        assert res["action"] == "none", (name, res)
    (clone / "input_files").mkdir(exist_ok=True)  # git does not carry the (ignored) inbox
    (clone / "input_files" / "ae.csv").write_bytes(CSV["ae"])
    assert r020.call("r_scan", conn=p.r_conn(clone)) == [{"name": "ae", "status": "unchanged"}]
    assert (remote_head(p.remote), tree_snapshot(p.store)) == before


def test_r_new_version_reads_back_in_python(r020: RSession, tmp_path: Path) -> None:
    p = py_standard_project(tmp_path / "py", PROJECT)
    clone = tmp_path / "rclone"
    r020.call("r_clone", path=clone, store=p.store, remote=p.remote)
    # A metadata-only version of lb, and a new table derived from it.
    res = r020.call("r_write", conn=p.r_conn(clone), name="lb", data="lb_v2", metadata={"by": "r"})
    assert res["action"] == "metadata_only"
    res2 = r020.call(
        "r_write",
        conn=p.r_conn(clone),
        name="adlb",
        data="lb_v3",
        parents=[{"table": "lb", "version": res["version"]}],
    )
    assert res2["action"] == "full"
    conn = dc.connect(p.clone)
    conn.pull()
    for name, r in (("lb", res), ("adlb", res2)):
        assert conn.resolve(name) == r["version"]
        assert dc.hash_table(conn.read(name, as_="arrow")).data_sha == r["data_sha"]
    assert sorted(t.name for t in conn.tables()) == sorted([*STANDARD_TABLES, "adlb"])
    node = conn.lineage("adlb", depth="parents")
    assert [(x.table, x.version) for x in node.parents] == [("lb", res["version"])]
    assert conn.validate().problems == ()
    again = conn.write("lb", conn.read("lb", as_="arrow"), metadata={"by": "r"})
    assert again.change == "none"


# -- documents, key by key, against R's twin ----------------------------------------------


def _documents(p: Project, name: str) -> dict[str, Any]:
    snaps = {
        s.stem: load_json(s)
        for s in (p.datom_root / name / ".metadata").glob("*.json")
        if s.stem not in ("metadata", "version_history")
    }
    return {
        "git": _git_doc(p, f"{name}/metadata.json"),
        "store": p.store_doc(f"{name}/.metadata/metadata.json"),
        "snapshots": snaps,
    }


@pytest.mark.parametrize("name", STANDARD_TABLES)
def test_metadata_documents_as_r_writes_them(pyproj: Project, twin: Project, name: str) -> None:
    py, r = _documents(pyproj, name), _documents(twin, name)
    assert sorted(py["snapshots"]) == sorted(r["snapshots"])
    pairs = [(py["git"], r["git"]), (py["store"], r["store"])]
    pairs += [(py["snapshots"][v], r["snapshots"][v]) for v in r["snapshots"]]
    for mine, theirs in pairs:
        assert keys(mine) == keys(theirs), name
        assert keys(mine) == in_order(keys(mine), METADATA_ORDER), name
        assert {k: mine[k] for k in SAME_VALUE if k in mine} == {
            k: theirs[k] for k in SAME_VALUE if k in theirs
        }
        assert mine["datom_version"].startswith("py-"), mine["datom_version"]
        assert "column_hashes" not in mine
    assert py["git"] == py["store"]


def test_manifest_v2_as_r_writes_it(pyproj: Project, twin: Project) -> None:
    r = _git_doc(twin, ".datom/manifest.json")
    for mine in (
        _git_doc(pyproj, ".datom/manifest.json"),
        pyproj.store_doc(".metadata/manifest.json"),
    ):
        assert keys(mine) == keys(r) == list(MANIFEST_ORDER)
        assert mine["schema_version"] == 2 and mine["project_name"] == PROJECT
        assert keys(mine["summary"]) == list(SUMMARY_ORDER)
        for k in ("total_tables", "total_versions", "total_sets"):
            assert mine["summary"][k] == r["summary"][k], k
        assert sorted(mine["artifacts"]) == sorted(r["artifacts"])
        for name, entry in mine["artifacts"].items():
            theirs = r["artifacts"][name]
            assert keys(entry) == keys(theirs) == in_order(keys(entry), ENTRY_ORDER), name
            for k in (
                "kind",
                "current_version",
                "current_data_sha",
                "version_count",
                "original_file_sha",
                "original_format",
            ):
                assert entry.get(k) == theirs.get(k), (name, k)


@pytest.mark.parametrize("name", STANDARD_TABLES)
def test_history_entries_as_r_writes_them(pyproj: Project, twin: Project, name: str) -> None:
    git = _git_doc(pyproj, f"{name}/version_history.json")
    store = pyproj.store_doc(f"{name}/.metadata/version_history.json")
    r_git = _git_doc(twin, f"{name}/version_history.json")
    assert [(e["version"], e["data_sha"]) for e in git] == [
        (e["version"], e["data_sha"]) for e in r_git
    ]
    for mine, theirs in zip(git, r_git, strict=True):
        # R's keys in R's order; free-form extras (which R carries verbatim) only after them.
        known = [k for k in keys(mine) if k in HISTORY_ORDER]
        assert known == keys(theirs) == in_order(keys(mine), HISTORY_ORDER)
        assert keys(mine)[: len(known)] == known
        assert keys(mine["author"]) == ["name", "email"]
    assert len(store) == len(git)
    for s, g in zip(store, git, strict=True):
        assert s == {**g, "commit_sha": s["commit_sha"]} and keys(s)[-1] == "commit_sha"
        # The first commit that produced this version: its metadata.json is that version.
        raw = subprocess.run(
            ["git", "-C", str(pyproj.remote), "show", f"{s['commit_sha']}:{name}/metadata.json"],
            check=True,
            capture_output=True,
        ).stdout
        assert dc.metadata_sha(json.loads(raw)) == s["version"]


def test_project_yaml_as_r_writes_it(pyproj: Project, twin: Project) -> None:
    mine = yaml.safe_load((pyproj.clone / ".datom" / "project.yaml").read_text())
    theirs = yaml.safe_load((twin.clone / ".datom" / "project.yaml").read_text())
    assert keys(mine) == keys(theirs)
    assert mine["schema_version"] == 1 and mine["project_name"] == PROJECT
    assert keys(mine["storage"]) == keys(theirs["storage"])
    assert {k: mine["storage"]["data"][k] for k in ("type", "root", "prefix")} == {
        "type": "local",
        "root": str(pyproj.store),
        "prefix": None,
    }
    assert keys(mine["repos"]) == ["data"] and keys(mine["repos"]["data"]) == ["remote_url"]
    assert Path(mine["repos"]["data"]["remote_url"]).resolve() == pyproj.remote.resolve()
    assert mine["sync"] == theirs["sync"] and mine["renv"] is False


def test_remote_head_names_the_pushed_branch(pyproj: Project) -> None:
    ref, tip = remote_head(pyproj.remote)
    assert ref == "refs/heads/main" and tip is not None
    local = subprocess.run(
        ["git", "-C", str(pyproj.clone), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert tip == local


def test_python_project_on_a_master_remote(r020: RSession, tmp_path: Path) -> None:
    """Into an existing bare remote whose HEAD is master, Python pushes master; R clones it."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(remote)], check=True)
    conn = dc.init_repo(
        tmp_path / "py", "MASTERED", dc.LocalStore(tmp_path / "store"), remote=remote
    )
    res = conn.write("dm", frame("dm_v1"))
    assert remote_head(remote) == ("refs/heads/master", res.commit)
    p = Project("MASTERED", tmp_path / "py", tmp_path / "store", remote)
    r020.call("r_clone", path=tmp_path / "rclone", store=p.store, remote=remote)
    seen = r020.call("r_describe", conn=p.r_conn(tmp_path / "rclone"))
    assert seen["dm"]["current_version"] == res.version
