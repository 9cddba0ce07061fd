"""Set writes from several clones of one product repo, and writes that converge after an
interrupted mirror."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import datom_core as dc
from datom_core._sets import get_set, write_set
from tests.core.test_sets_support import frame, member_of, new_product, opener, read


def test_a_stale_clone_writes_on_top_of_the_remote(tmp_path: Path) -> None:
    a = new_product(tmp_path)
    a.write("dm", frame())
    a.write("ae", frame(seed=3))
    b = dc.clone(a.repo.remote_url, tmp_path / "second", a.store)
    first = write_set(a, [member_of(a, "dm")], tags={"by": "a"})
    second = write_set(b, [member_of(a, "ae")], tags={"by": "b"})  # b never pulled
    assert second.change == "full"
    history = json.loads(a.store.read_bytes("adam/.metadata/version_history.json"))
    assert [h["version"] for h in history] == [second.version, first.version]
    assert [h["commit_sha"] for h in history] == [second.commit, first.commit]
    a.pull()
    assert json.loads((a.path / "adam" / "version_history.json").read_bytes())[1]["version"] == (
        first.version
    )
    assert read(a).version == second.version


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    origin = new_product(tmp_path)
    origin.write("dm", frame())
    clones = [
        dc.clone(origin.repo.remote_url, tmp_path / f"clone{i}", origin.store) for i in range(3)
    ]

    def write(i: int) -> str:
        return write_set(clones[i], [member_of(origin, "dm")], tags={"writer": str(i)}).version

    with ThreadPoolExecutor(3) as pool:
        versions = set(pool.map(write, range(3)))
    history = json.loads(origin.store.read_bytes("adam/.metadata/version_history.json"))
    assert {h["version"] for h in history} == versions and len(history) == 3
    assert all(h.get("commit_sha") for h in history)
    current = json.loads(origin.store.read_bytes("adam/.metadata/metadata.json"))
    manifest = json.loads(origin.store.read_bytes(".metadata/manifest.json"))
    assert manifest["artifacts"]["adam"]["version_count"] == 3
    assert get_set(origin.store, "STUDY_001", opener=opener).data_sha == current["data_sha"]


def test_an_interrupted_mirror_converges_on_the_next_write(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    r = write_set(conn, [member_of(conn, "dm")])
    # What a writer killed after the push leaves: git has the version, the store does not.
    for key in (
        f"adam/{r.data_sha}.json",
        f"adam/.metadata/{r.version}.json",
        "adam/.metadata/metadata.json",
        "adam/.metadata/version_history.json",
    ):
        conn.store.delete(key)
    again = write_set(conn, [member_of(conn, "dm")])
    assert (again.change, again.version) == ("none", r.version)
    restored = read(conn)
    assert restored.version == r.version and restored.document_sha == r.document_sha
    history = json.loads(conn.store.read_bytes("adam/.metadata/version_history.json"))
    assert history[0]["commit_sha"] == r.commit  # derived from git for the gap


def test_a_mirror_stopped_before_the_manifest_converges(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    before = conn.store.read_bytes(".metadata/manifest.json")
    r = write_set(conn, [member_of(conn, "dm")])
    conn.store.write_bytes(".metadata/manifest.json", before)  # the last mirror step was lost
    assert write_set(conn, [member_of(conn, "dm")]).change == "none"
    manifest = json.loads(conn.store.read_bytes(".metadata/manifest.json"))
    assert manifest["artifacts"]["adam"]["current_version"] == r.version
