"""Set writes from several clones of one product repo, and writes that converge after an
interrupted mirror."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._sets import get_set, write_set
from datom_core._sets._mirror import settle_copies
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


def _table_writer(clone: str, table: str, n: int) -> None:
    conn = dc.connect(clone)
    for k in range(n):
        conn.write(table, frame(seed=100 + k))


def _set_writer(clone: str, n: int) -> None:
    conn = dc.connect(clone)
    for k in range(n):
        write_set(conn, [member_of(conn, "dm")], tags={"round": str(k)})


@pytest.mark.slow
def test_set_and_table_writers_in_other_clones_leave_the_store_manifest_current(
    tmp_path: Path,
) -> None:
    """The manifest is shared by the set and the tables: whichever mirror lands last, the
    store must end with the remote's manifest (a set mirror settles like a table's)."""
    origin = new_product(tmp_path)
    origin.write("dm", frame())
    clones = [
        str(dc.clone(origin.repo.remote_url, tmp_path / f"c{i}", origin.store).path)
        for i in range(3)
    ]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(3, mp_context=ctx) as pool:
        jobs = [
            pool.submit(_set_writer, clones[0], 6),
            pool.submit(_table_writer, clones[1], "ae", 6),
            pool.submit(_table_writer, clones[2], "lb", 6),
        ]
        for job in jobs:
            job.result()
    origin.pull()
    assert (
        origin.store.read_bytes(".metadata/manifest.json")
        == (origin.path / ".datom" / "manifest.json").read_bytes()
    )
    assert (
        origin.store.read_bytes("adam/.metadata/metadata.json")
        == (origin.path / "adam" / "metadata.json").read_bytes()
    )
    assert len(json.loads(origin.store.read_bytes("adam/.metadata/version_history.json"))) == 6
    report = origin.validate()
    assert report.ok, report


def test_a_set_mirror_landing_after_a_newer_one_is_put_right_by_its_writer(
    tmp_path: Path,
) -> None:
    a = new_product(tmp_path)
    a.write("dm", frame())
    b = dc.clone(a.repo.remote_url, tmp_path / "second", a.store)
    write_set(a, [member_of(a, "dm")])
    head, old = a.repo.head(), a.store.read_bytes(".metadata/manifest.json")
    b.write("ae", frame(seed=5))  # the remote moves on; b mirrors the newer manifest
    newer = b.store.read_bytes(".metadata/manifest.json")
    assert newer != old
    a.store.write_bytes(".metadata/manifest.json", old)  # a's mirror lands only now
    settle_copies(a.store, a.repo, {".metadata/manifest.json": (".datom/manifest.json", old)}, head)
    assert a.store.read_bytes(".metadata/manifest.json") == newer

    # A copy another writer rewrote since is that writer's: left as it is.
    a.store.write_bytes(".metadata/manifest.json", b"theirs")
    settle_copies(a.store, a.repo, {".metadata/manifest.json": (".datom/manifest.json", old)}, head)
    assert a.store.read_bytes(".metadata/manifest.json") == b"theirs"


def test_validate_judges_a_product_repo_with_its_set_clean(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    write_set(conn, [member_of(conn, "dm")])
    report = conn.validate()
    assert report.ok, report  # the set's folder is not a table with a missing parquet
    conn.store.write_bytes("dm/.metadata/metadata.json", b"{}")
    assert [p.table for p in conn.validate().problems] == ["dm"]  # tables are still judged
