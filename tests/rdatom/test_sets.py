"""Sets across languages: a set written here is read by R 0.2.0's datom_get_set (and
rewritten by R as a no-op), one written by R is read here; for the same members and labels
both write the same bytes, the same data_sha and the same version."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import datom_core as dc
from tests.rdatom.frames import frame
from tests.rdatom.rsession import RSession
from tests.rdatom.scenarios import (
    Project,
    in_order,
    keys,
    load_json,
    py_standard_project,
    remote_head,
    tree_snapshot,
)

# One worker per module under `--dist loadgroup`: its R process and projects are built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rdatom-sets")]
SET = "dblock"
PRODUCT = "PRODUCT"
SET_TAGS = {"description": "STUDY database lock", "milestone": ["lock", "interim"]}
# Labels as both languages normalise them: values sorted by bytes.
NORMALISED_TAGS = {"description": ["STUDY database lock"], "milestone": ["interim", "lock"]}
SET_METADATA_ORDER = (
    "schema_version", "kind", "data_sha", "hash_algo", "document_sha", "created_at",
    "datom_version", "project",
)  # fmt: skip
SET_ENTRY_ORDER = (
    "kind", "current_version", "current_data_sha", "last_updated", "member_count", "version_count",
)  # fmt: skip
SET_HISTORY_ORDER = ("version", "data_sha", "timestamp", "author", "commit_message", "document_sha")


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The source project whose versions both languages' sets pin."""
    return py_standard_project(tmp_path_factory.mktemp("src"), "SRC")


def member_specs(src: Project) -> list[dict[str, Any]]:
    first_lb = next(v for t, _, v in src.steps if t == "lb")
    adsl = dict((t, v) for t, _, v in src.steps)["adsl"]
    # dm at the version adsl was built from: a set refuses to pin an output beside an input
    # it was not built from (SETS.md; R checks this only for its own project's members).
    dm = next(p.version for p in src.py_reader().version("adsl", adsl).parents if p.table == "dm")
    return [
        {"name": "dm", "version": dm, "tags": {"type": "input"}},
        {"name": "adsl", "version": adsl,
         "tags": {"type": "output", "domain": ["safety", "efficacy"]}},
        {"name": "lb", "version": first_lb},
    ]  # fmt: skip


def _r_members(src: Project) -> list[dict[str, Any]]:
    return [{**m, "store": str(src.store), "project": src.name} for m in member_specs(src)]


@pytest.fixture(scope="module")
def py_set(src: Project, tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, Any]:
    base = tmp_path_factory.mktemp("pyset")
    p = Project(PRODUCT, base / "clone", base / "store", base / "clone.remote.git")
    conn = dc.init_repo(p.clone, PRODUCT, p.py_store(), mode="product", set=SET)
    source = src.py_reader()
    members = [
        source.member(m["name"], m["version"], tags=m.get("tags")) for m in member_specs(src)
    ]
    result = conn.write_set(members, tags=SET_TAGS, message="DB lock")
    return p, result


@pytest.fixture(scope="module")
def r_set(
    r020: RSession, src: Project, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Project, Any]:
    base = tmp_path_factory.mktemp("rset")
    p = Project(PRODUCT, base / "clone", base / "store", base / "remote.git")
    r020.call(
        "r_init",
        path=p.clone,
        project=PRODUCT,
        store=p.store,
        remote=p.remote,
        mode="product",
        set=SET,
    )
    result = r020.call(
        "r_write_set", conn=p.r_conn(), members=_r_members(src), tags=SET_TAGS, message="DB lock"
    )
    return p, result


def _as_lists(tags: Any) -> dict[str, list[str]]:
    """Labels as both languages normalise them: every value a list, sorted, no duplicates."""
    return {
        k: sorted(set(v if isinstance(v, list | tuple) else [v])) for k, v in (tags or {}).items()
    }


def test_same_version_data_sha_and_bytes(
    py_set: tuple[Project, Any], r_set: tuple[Project, Any]
) -> None:
    (pp, pres), (rp, rres) = py_set, r_set
    assert rres["action"] == "full" and pres.change == "full"
    assert (pres.version, pres.data_sha) == (rres["version"], rres["data_sha"])
    mine = (pp.clone / SET / "set.json").read_bytes()
    theirs = (rp.clone / SET / "set.json").read_bytes()
    assert mine == theirs
    key = f"{SET}/{rres['data_sha']}.json"
    assert (pp.datom_root / key).read_bytes() == (rp.datom_root / key).read_bytes() == theirs
    assert dc.hash_set(json.loads(theirs)) == rres["data_sha"]


def test_set_documents_as_r_writes_them(
    py_set: tuple[Project, Any], r_set: tuple[Project, Any]
) -> None:
    (pp, _), (rp, _) = py_set, r_set
    for path in (f"{SET}/metadata.json",):
        mine, theirs = load_json(pp.clone / path), load_json(rp.clone / path)
        assert keys(mine) == keys(theirs) == list(SET_METADATA_ORDER)
        for k in ("schema_version", "kind", "data_sha", "hash_algo", "document_sha", "project"):
            assert mine[k] == theirs[k], k
        assert pp.store_doc(f"{SET}/.metadata/metadata.json") == mine
    mine_m = load_json(pp.clone / ".datom" / "manifest.json")
    theirs_m = load_json(rp.clone / ".datom" / "manifest.json")
    entry, r_entry = mine_m["artifacts"][SET], theirs_m["artifacts"][SET]
    assert keys(entry) == keys(r_entry) == in_order(keys(entry), SET_ENTRY_ORDER)
    assert (entry["member_count"], entry["version_count"]) == (3, 1)
    assert mine_m["summary"] == theirs_m["summary"]
    assert (mine_m["summary"]["total_tables"], mine_m["summary"]["total_sets"]) == (0, 1)
    mine_y = yaml.safe_load((pp.clone / ".datom" / "project.yaml").read_text())
    theirs_y = yaml.safe_load((rp.clone / ".datom" / "project.yaml").read_text())
    # Python also records where the members' projects live (``member_stores``, which R
    # 0.2.0 ignores and keeps: tests/core/test_sets_rdatom.py opens such a repo with R).
    assert [k for k in keys(mine_y) if k != "member_stores"] == keys(theirs_y)
    assert keys(theirs_y)[-2:] == ["mode", "set"]
    assert (mine_y["mode"], mine_y["set"]) == ("product", SET)
    hist, r_hist = (
        load_json(pp.clone / SET / "version_history.json"),
        load_json(rp.clone / SET / "version_history.json"),
    )
    assert [keys(e) for e in hist] == [keys(e) for e in r_hist] == [list(SET_HISTORY_ORDER)]
    stored = pp.store_doc(f"{SET}/.metadata/version_history.json")
    assert stored == [{**hist[0], "commit_sha": stored[0]["commit_sha"]}]


def test_r_reads_the_python_set(r020: RSession, src: Project, py_set: tuple[Project, Any]) -> None:
    p, res = py_set
    got = r020.call("r_get_set", conn=p.r_reader(), name=SET, member_store=src.store)
    assert (got["version"], got["data_sha"]) == (res.version, res.data_sha)
    assert _as_lists(got["tags"]) == NORMALISED_TAGS
    expected = {(m["name"], m["version"]) for m in member_specs(src)}
    assert {(m["id"]["name"], m["id"]["version"]) for m in got["members"]} == expected
    reader = src.py_reader()
    for m in got["members"]:
        assert m["id"]["project"] == src.name and m["id"]["kind"] == "table"
        want = next(
            v.data_sha for v in reader.history(m["id"]["name"]) if v.version == m["id"]["version"]
        )
        assert m["rehash"] == want


def test_r_rewrite_of_the_python_set_is_a_noop(
    r020: RSession, src: Project, py_set: tuple[Project, Any], tmp_path: Path
) -> None:
    p, _ = py_set
    clone = tmp_path / "rclone"
    r020.call("r_clone", path=clone, store=p.store, remote=p.remote)
    before = (remote_head(p.remote), tree_snapshot(p.store))
    res = r020.call("r_write_set", conn=p.r_conn(clone), members=_r_members(src), tags=SET_TAGS)
    assert res["action"] == "none"
    assert (remote_head(p.remote), tree_snapshot(p.store)) == before


@pytest.mark.parametrize("role", ["developer", "reader"])
def test_python_reads_the_r_set(
    role: str, src: Project, r_set: tuple[Project, Any], tmp_path: Path
) -> None:
    p, res = r_set
    conn = dc.clone(p.remote, tmp_path / "c") if role == "developer" else p.py_reader()
    got = conn.get_set()
    assert (got.version, got.data_sha) == (res["version"], res["data_sha"])
    assert _as_lists(dict(got.tags)) == NORMALISED_TAGS
    specs = {(m["name"], m["version"]): m for m in member_specs(src)}
    assert {(m.name, m.version) for m in got.members} == set(specs)
    reader = src.py_reader()
    for m in got.members:
        assert (m.project, m.kind) == (src.name, "table")
        assert _as_lists(dict(m.tags)) == _as_lists(specs[(m.name, m.version)].get("tags"))
        data = m.fetch(store=src.py_store(), as_="arrow")
        want = next(v.data_sha for v in reader.history(m.name) if v.version == m.version)
        assert dc.hash_table(data).data_sha == want


def test_python_validates_the_r_set_clean(r_set: tuple[Project, Any], tmp_path: Path) -> None:
    """R's store copy of its set (payload, snapshot, mirrors) is what Python's validate
    expects from git: nothing reported, nothing written."""
    p, _ = r_set
    conn = dc.clone(p.remote, tmp_path / "c")
    before = tree_snapshot(p.store)
    report = conn.validate()
    assert report.ok and report.problems == (), report.problems
    assert tree_snapshot(p.store) == before


def test_identical_python_rewrite_of_the_r_set_is_none(
    src: Project, r_set: tuple[Project, Any], tmp_path: Path
) -> None:
    p, res = r_set
    conn = dc.clone(p.remote, tmp_path / "c")
    before = (remote_head(p.remote), tree_snapshot(p.store))
    source = src.py_reader()
    members = [
        source.member(m["name"], m["version"], tags=m.get("tags")) for m in member_specs(src)
    ]
    again = conn.write_set(members, tags=SET_TAGS)
    assert (again.change, again.version) == ("none", res["version"])
    # The set is untouched; the one commit records where its members' project lives
    # (project.yaml's member_stores, mirrored to the store), which R wrote nowhere.
    after = tree_snapshot(p.store)
    assert after.pop("datom/.metadata/member_stores.json")
    assert after == before[1]
    changed = subprocess.run(
        ["git", "-C", str(p.remote), "diff", "--name-only", before[0][1], "HEAD"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert changed == [".datom/project.yaml"]
    recorded = yaml.safe_load((conn.path / ".datom" / "project.yaml").read_text())
    assert set(recorded["member_stores"]) == {src.name}
    # Once recorded, an identical rewrite changes nothing at all.
    settled = (remote_head(p.remote), tree_snapshot(p.store))
    assert conn.write_set(members, tags=SET_TAGS).change == "none"
    assert (remote_head(p.remote), tree_snapshot(p.store)) == settled


def test_python_table_write_keeps_the_r_set(r020: RSession, src: Project, tmp_path: Path) -> None:
    """A Python write into R's product repo keeps the set's manifest entry as R wrote it."""
    p = Project(PRODUCT, tmp_path / "r", tmp_path / "store", tmp_path / "remote.git")
    r020.call(
        "r_init", path=p.clone, project=PRODUCT, store=p.store, remote=p.remote,
        mode="product", set=SET,
    )  # fmt: skip
    res = r020.call("r_write_set", conn=p.r_conn(), members=_r_members(src), tags=SET_TAGS)
    entry = p.store_doc(".metadata/manifest.json")["artifacts"][SET]
    conn = dc.clone(p.remote, tmp_path / "py")
    wrote = conn.write("adtte", frame("adae"), message="derived in Python")
    assert wrote.change == "full"
    for manifest in (
        p.store_doc(".metadata/manifest.json"),
        load_json(conn.path / ".datom" / "manifest.json"),
    ):
        assert manifest["schema_version"] == 2
        assert manifest["artifacts"][SET] == entry
        assert (manifest["summary"]["total_tables"], manifest["summary"]["total_sets"]) == (1, 1)
    r020.call("r_pull", **p.r_conn())
    got = r020.call("r_get_set", conn=p.r_conn(), name=SET)
    assert (got["version"], got["data_sha"]) == (res["version"], res["data_sha"])
    listed = r020.call("r_describe", conn=p.r_reader(), read_versions=False)
    assert {n: e["kind"] for n, e in listed.items()} == {SET: "set", "adtte": "table"}
