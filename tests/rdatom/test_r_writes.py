"""R datom 0.2.0 writes a project; this package opens it as a developer and as a reader.

The project: two plain derived tables, an onboarded csv, a derived table whose parent
carries no lineage (R writes ``source_lineage: []``), one whose parents do, a metadata-only
change, new data, a revert. Everything Python sees must be what R recorded.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import datom_core as dc
from tests.rdatom.frames import CSV, frame
from tests.rdatom.rsession import RSession
from tests.rdatom.scenarios import (
    EXPECTED_CHANGES,
    STANDARD_TABLES,
    Project,
    load_json,
    r_standard_project,
    remote_head,
    tree_snapshot,
)

# One worker per module under `--dist loadgroup`: its R process and projects are built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rdatom-r_writes")]


@pytest.fixture(scope="module")
def rproj(r020: RSession, tmp_path_factory: pytest.TempPathFactory) -> Project:
    return r_standard_project(r020, tmp_path_factory.mktemp("rstudy"))


@pytest.fixture(scope="module")
def r_view(r020: RSession, rproj: Project) -> dict:
    """What R itself lists, with every version read back and re-hashed by R."""
    return r020.call("r_describe", conn=rproj.r_conn())


@pytest.fixture(scope="module")
def dev(rproj: Project, tmp_path_factory: pytest.TempPathFactory) -> dc.Connection:
    """A Python developer: a clone of R's remote, the store taken from R's project.yaml."""
    return dc.clone(rproj.remote, tmp_path_factory.mktemp("pydev") / "clone")


@pytest.fixture(scope="module", params=["developer", "reader"])
def conn(request: pytest.FixtureRequest, rproj: Project) -> dc.Connection:
    if request.param == "developer":
        return request.getfixturevalue("dev")
    return rproj.py_reader()


def test_r_recorded_the_scenario(rproj: Project) -> None:
    assert [(t, c) for t, c, _ in rproj.steps] == EXPECTED_CHANGES


def test_same_tables_and_current_versions(conn: dc.Connection, r_view: dict) -> None:
    listed = {t.name: t.current_version for t in conn.tables()}
    assert listed == {name: e["current_version"] for name, e in r_view.items()}
    assert sorted(listed) == list(STANDARD_TABLES)


def test_same_histories(conn: dc.Connection, r_view: dict) -> None:
    for name, entry in r_view.items():
        got = [(v.version, v.data_sha) for v in conn.history(name)]
        assert got == [(v["version"], v["data_sha"]) for v in entry["versions"]], name


def test_every_version_reads_back_and_rehashes(conn: dc.Connection, r_view: dict) -> None:
    for name, entry in r_view.items():
        for v in entry["versions"]:
            table = conn.read(name, version=v["version"], as_="arrow")
            assert table.num_rows == v["nrow"], (name, v["version"])
            assert dc.hash_table(table).data_sha == v["data_sha"] == v["rehash"], (name, v)


def test_versions_certify_themselves(rproj: Project) -> None:
    """metadata_sha over the allowlist of every snapshot R stored is its file name."""
    for name in STANDARD_TABLES:
        for snap in (rproj.datom_root / name / ".metadata").glob("*.json"):
            if snap.stem in ("metadata", "version_history"):
                continue
            assert dc.metadata_sha(load_json(snap)) == snap.stem, snap


def test_same_parents_and_lineage(conn: dc.Connection, rproj: Project) -> None:
    for name in ("adsl", "adae"):
        doc = rproj.store_doc(f"{name}/.metadata/metadata.json")
        node = conn.lineage(name, depth="parents")
        assert node.version == conn.resolve(name)
        assert [(p.project, p.table, p.version, p.data_sha) for p in node.parents] == [
            (p["source"], p["table"], p["version"], p["data_sha"]) for p in doc["parents"]
        ]
        sources = conn.lineage(name, depth="source")
        assert [s.to_json() for s in sources] == doc["source_lineage"]
    # adsl's only parent carries no lineage: R records an empty list, not an absent key.
    assert rproj.store_doc("adsl/.metadata/metadata.json")["source_lineage"] == []
    ref = conn.parent("adae")
    assert (ref.source, ref.version) == (rproj.name, conn.resolve("adae"))


def test_validate_is_clean(dev: dc.Connection) -> None:
    report = dev.validate()
    assert report.problems == (), str(report)


def test_identical_python_writes_are_none(rproj: Project, tmp_path: Path) -> None:
    """Every derived table written back with its data, custom and parents: no new version,
    nothing committed, nothing stored; the onboarded csv scans as unchanged."""
    conn = dc.clone(rproj.remote, tmp_path / "clone")
    before_store = tree_snapshot(rproj.store)
    before_head = remote_head(rproj.remote)
    for name in ("adae", "adsl", "dm", "lb"):
        doc = rproj.store_doc(f"{name}/.metadata/metadata.json")
        parents = [{"table": p["table"], "version": p["version"]} for p in doc.get("parents", [])]
        res = conn.write(
            name, conn.read(name, as_="arrow"), parents=parents or None, metadata=doc.get("custom")
        )
        assert (res.change, res.version) == ("none", conn.resolve(name)), name
    (conn.path / "input_files" / "ae.csv").write_bytes(CSV["ae"])
    assert [(row.name, row.status) for row in conn.scan_inbox()] == [("ae", "unchanged")]
    assert [row for row in conn.sync() if row.status != "skipped"] == []
    assert remote_head(rproj.remote) == before_head
    assert tree_snapshot(rproj.store) == before_store


def test_python_write_keeps_r_project_whole(r020: RSession, tmp_path: Path) -> None:
    """A real Python write into an R project: R still lists every table and reads the new
    version; validate (and validate(fix=True)) in Python keeps R's store history intact;
    R's own validate agrees."""
    rproj = r_standard_project(r020, tmp_path / "r")
    conn = dc.clone(rproj.remote, tmp_path / "clone")
    histories = {
        n: rproj.datom_root.joinpath(n, ".metadata", "version_history.json").read_bytes()
        for n in STANDARD_TABLES
    }
    branch, _ = remote_head(rproj.remote)
    res = conn.write("lb", frame("lb_v3"), message="py")
    assert res.change == "full"
    # Pushed to the branch R's remote HEAD names (git2r made it), so R clones see it.
    assert remote_head(rproj.remote) == (branch, res.commit)
    for manifest in (
        rproj.store_doc(".metadata/manifest.json"),
        load_json(conn.path / ".datom" / "manifest.json"),
    ):  # a v2 manifest stays v2, every entry kept
        assert manifest["schema_version"] == 2 and "tables" not in manifest
        assert sorted(manifest["artifacts"]) == list(STANDARD_TABLES)
    for name in set(STANDARD_TABLES) - {"lb"}:
        path = rproj.datom_root / name / ".metadata" / "version_history.json"
        assert path.read_bytes() == histories[name], name
    lb_hist = rproj.store_doc("lb/.metadata/version_history.json")
    assert all("commit_sha" in e for e in lb_hist), lb_hist
    assert conn.validate(fix=True).problems == ()
    for name in set(STANDARD_TABLES) - {"lb"}:
        path = rproj.datom_root / name / ".metadata" / "version_history.json"
        assert path.read_bytes() == histories[name], f"validate(fix=True) rewrote {name}'s history"

    r020.call("r_pull", **rproj.r_conn())
    seen = r020.call("r_describe", conn=rproj.r_conn())
    assert sorted(seen) == list(STANDARD_TABLES)
    assert seen["lb"]["current_version"] == res.version
    assert seen["lb"]["versions"][0]["rehash"] == res.data_sha
    assert r020.call("r_validate", conn=rproj.r_conn()) == {"valid": True, "bad_rows": []}
    reader = r020.call("r_describe", conn=rproj.r_reader(), read_versions=False)
    assert reader["lb"]["current_version"] == res.version


def test_reader_needs_no_git(rproj: Project, tmp_path: Path) -> None:
    """The store alone (copied elsewhere, no clone, no remote) is a complete reader."""
    store = tmp_path / "copy"
    shutil.copytree(rproj.store, store)
    reader = dc.connect(store=dc.LocalStore(store), project_name=rproj.name)
    assert sorted(t.name for t in reader.tables()) == list(STANDARD_TABLES)
    with pytest.raises(dc.ReadOnlyError):
        reader.write("dm", reader.read("dm", as_="arrow"))


def test_r_arithmetic_na_is_not_called_tampering(r020: RSession, tmp_path: Path) -> None:
    """FORMAT2.md section 8: R hashed an NA that went through arithmetic with other bits,
    so nobody can reproduce that data_sha from the stored data; the bytes still verify,
    and a content check must name the R quirk, not tampering."""
    p = Project("QUIRK", tmp_path / "clone", tmp_path / "store", tmp_path / "remote.git")
    r020.call("r_init", path=p.clone, project=p.name, store=p.store, remote=p.remote)
    res = r020.call("r_write", conn=p.r_conn(), name="lb", data="lb_arith")
    fresh = dc.hash_table(frame("lb")).data_sha
    assert res["data_sha"] != fresh  # the quirk is real: same values, other hash in R
    reader = p.py_reader()
    table = reader.read("lb", as_="arrow")  # parquet_sha verifies: the bytes are intact
    assert dc.hash_table(table).data_sha == fresh
    with pytest.raises(dc.DatomError) as caught:
        reader.read("lb", verify="content")
    message = str(caught.value)
    assert "NA" in message and "R" in message and "tamper" not in message.lower(), message
