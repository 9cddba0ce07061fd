"""The store's mirror converges on git's tip whatever order concurrent writers finish in.

Writers in their own clones of one remote write distinct tables and one shared table at
once; a writer's mirror lands after a newer writer finished; a writer is killed in the
middle of its mirror. Each time the store's manifest, metadata and history end equal to
git's tip (the history with each version's first commit), every version once, validate
clean.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import datom_core as dc
from datom_core._project import _commits
from datom_core._project import _layout as L
from datom_core._project._commits import commits_by_version
from datom_core._project._documents import dump
from datom_core._project._mirror import PushedMirror, TableDocuments, store_history
from tests.core.projects import frame, new_project

pytestmark = pytest.mark.timeout(300)


def _writes(clone: str, table: str, seeds: list[int]) -> list[str]:
    conn = dc.connect(clone)
    return [conn.write(table, frame(seed=s)).version for s in seeds]


def assert_store_is_git(conn: dc.Connection) -> None:
    """Every table's store documents equal the tip's; commit_sha is each version's first
    commit; the manifests are the same bytes."""
    conn.pull()
    repo, store = conn.repo, conn.store
    assert store.read_bytes(L.STORE_MANIFEST) == repo.read(L.MANIFEST)
    for table in conn.tables():
        name = table.name
        assert store.read_bytes(L.store_metadata(name)) == repo.read(L.git_metadata(name))
        stored = json.loads(store.read_bytes(L.store_history(name)))
        git = json.loads(repo.read(L.git_history(name)) or b"[]")
        assert [{k: v for k, v in e.items() if k != "commit_sha"} for e in stored] == git
        first = commits_by_version(repo, name)
        assert {e["version"]: e["commit_sha"] for e in stored} == {
            e["version"]: first[e["version"]] for e in git
        }
        for entry in git:
            assert store.exists(L.store_snapshot(name, entry["version"]))
    assert conn.validate().ok


def test_clones_writing_distinct_and_shared_tables_leave_the_store_equal_to_git(
    tmp_path: Path,
) -> None:
    conn = new_project(tmp_path)
    clones = [dc.clone(conn.repo.remote_url, tmp_path / f"c{i}", conn.store) for i in range(6)]
    jobs = [
        (str(c.path), "shared" if i % 2 else f"own{i}", [100 * i + k for k in range(5)])
        for i, c in enumerate(clones)
    ]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool:
        results = [f.result() for f in [pool.submit(_writes, *job) for job in jobs]]
    assert_store_is_git(conn)
    for (_, table, _), versions in zip(jobs, results, strict=True):
        recorded = Counter(h.version for h in conn.history(table))
        assert all(recorded[v] == 1 for v in versions)
        assert max(recorded.values()) == 1
    assert conn.history("shared") and len(conn.history("shared")) == 15


def test_a_mirror_landing_after_a_newer_one_is_put_right_by_its_writer(tmp_path: Path) -> None:
    first = new_project(tmp_path)
    second = dc.clone(first.repo.remote_url, tmp_path / "second", first.store)
    older = first.write("dm", frame(seed=1))
    docs = TableDocuments(
        "dm",
        first.repo.read(L.git_metadata("dm")) or b"",
        first.repo.read(L.git_history("dm")) or b"",
        first.repo.read(L.MANIFEST) or b"",
    )
    second.write("dm", frame(seed=2))
    second.write("ae", frame(seed=3))
    assert_store_is_git(second)
    # The first writer's mirror of its (now older) version lands only now, over the
    # newer one: its writer must leave the tip's documents behind.
    first.repo.fetch_and_reset()
    _reset_to(first, older.commit)
    mirror = PushedMirror(first.context, "dm", docs.metadata, older.version)
    mirror.start({L.git_history("dm"): docs.history, L.MANIFEST: docs.manifest}, older.commit)
    mirror.finish()
    assert_store_is_git(second)


def _reset_to(conn: dc.Connection, commit: str | None) -> None:
    """Put the clone's branch back on ``commit`` (it wrote it, then others pushed)."""
    assert commit is not None
    subprocess.run(
        ["git", "-C", str(conn.path), "reset", "-q", "--hard", commit],
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(conn.path)},
    )
    assert conn.repo.head() == commit


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import datom_core as dc
    from tests.core.projects import frame
    dc.connect({clone!r}).write("dm", frame(seed=7))
    """
)


def _write_and_die(clone: Path, step: str) -> int:
    code = _WRITER.format(root=str(Path(__file__).parents[2]), clone=str(clone))
    env = {**os.environ, "DATOM_CRASH_AT": step}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode


@pytest.mark.parametrize("step", ["mirror:snapshot", "mirror:history", "mirror:metadata"])
def test_a_writer_killed_mid_mirror_is_repaired_by_another_clone(tmp_path: Path, step: str) -> None:
    first = new_project(tmp_path)
    first.write("dm", frame(seed=1))
    second = dc.clone(first.repo.remote_url, tmp_path / "second", first.store)
    assert _write_and_die(first.path, step) == -signal.SIGKILL
    second.pull()
    assert not second.validate().ok  # the store lags git's tip
    second.write("dm", frame(seed=8))  # the next write of the table puts it right
    assert_store_is_git(second)


def test_a_writer_killed_mid_mirror_is_repaired_by_validate_fix(tmp_path: Path) -> None:
    first = new_project(tmp_path)
    first.write("dm", frame(seed=1))
    first.write("ae", frame(seed=2))
    second = dc.clone(first.repo.remote_url, tmp_path / "second", first.store)
    assert _write_and_die(first.path, "mirror:history") == -signal.SIGKILL
    second.write("ae", frame(seed=3))  # another table's write moves only the manifest
    second.pull()
    assert not second.validate().ok
    assert second.validate(fix=True).ok
    assert_store_is_git(second)


def test_versions_a_lagging_store_copy_lacks_get_the_commits_that_produced_them(
    tmp_path: Path,
) -> None:
    """Concurrent writers' mirrors not landed yet: the store's copy names an older version
    last; the versions after it get their first commits, not later ones holding them."""
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))
    lagging = conn.store.read_bytes(L.store_history("dm"))
    conn.write("dm", frame(seed=2))
    conn.write("ae", frame(seed=3))  # a commit that holds dm's second version unchanged
    conn.write("dm", frame(seed=4))
    conn.write("ae", frame(seed=5))
    conn.store.write_bytes(L.store_history("dm"), lagging)
    git = conn.repo.read(L.git_history("dm")) or b""
    copy = json.loads(store_history(conn.context, "dm", git))
    first = commits_by_version(conn.repo, "dm")
    assert [(e["version"], e["commit_sha"]) for e in copy] == [
        (e["version"], first[e["version"]]) for e in json.loads(git)
    ]
    assert len(copy) == 3


def test_a_new_tables_unmirrored_versions_are_found_without_indexing_the_whole_log(
    tmp_path: Path,
) -> None:
    """A fresh process (a Dagster step, a CLI call) writing a new table whose first
    writers have not mirrored yet: the store holds no copy, so the walk back ends where the
    table does not exist yet, not at the project's first commit."""
    conn = new_project(tmp_path)
    for i in range(30):  # a project's history before the table
        conn.write(f"t{i % 3}", frame(seed=i))
    conn.write("dm", frame(seed=100))
    conn.write("ae", frame(seed=101))  # a commit of another table, after dm's first
    conn.write("dm", frame(seed=102))
    conn.store.delete(L.store_history("dm"))  # the mirrors of dm have not landed
    git = conn.repo.read(L.git_history("dm")) or b""
    fresh = dc.connect(conn.repo.path, store=conn.store)
    copy = json.loads(store_history(fresh.context, "dm", git))
    assert fresh.repo._history.head is None  # no index of the 33 commits was built
    first = commits_by_version(conn.repo, "dm")
    assert [(e["version"], e["commit_sha"]) for e in copy] == [
        (e["version"], first[e["version"]]) for e in json.loads(git)
    ]
    assert len(copy) == 2


_OPEN: dict[str, dc.Connection] = {}  # per worker process: one connection kept open


def _write_reading_log(clone: str, table: str, seed: int) -> int:
    """One write in this (worker) process; how many commits ``MetadataRepo.log`` read."""
    conn = _OPEN.get(clone) or _OPEN.setdefault(clone, dc.connect(clone))
    real, read = type(conn.repo).log, []

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = real(self, *args, **kwargs)
        read.append(len(found))
        return found

    type(conn.repo).log = counted  # type: ignore[method-assign]
    try:
        conn.write(table, frame(seed=seed))
    finally:
        type(conn.repo).log = real  # type: ignore[method-assign]
    return sum(read)


def test_a_squashed_historys_versions_are_not_looked_for_by_every_write(tmp_path: Path) -> None:
    """A history listing versions no commit produced (squashed, or edited by hand), written
    by two processes in turn through their own clones: each write meets a store copy the
    other process made, without those versions' commits. The first write of a process
    learns they are not in git; later writes read a few commits, not as many as the
    history has versions (each write walked back ``versions + 4`` commits before)."""
    conn = new_project(tmp_path)
    for i in range(80):  # a project with a history
        conn.write(f"t{i % 4}", frame(seed=i))
    conn.write("old", frame(seed=100))
    hist = json.loads(conn.repo.read(L.git_history("old")) or b"")
    fakes = [dict(hist[0], version=f"{i:064x}") for i in range(60, 0, -1)]
    conn.repo.commit({L.git_history("old"): dump(hist + fakes)}, "Squash the history of old")
    conn.repo.push()
    clones = [tmp_path / "one", tmp_path / "two"]
    for clone in clones:
        dc.clone(conn.repo.remote_url, clone, store=conn.store)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, ctx) as one, ProcessPoolExecutor(1, ctx) as two:
        read = []
        for i in range(5):
            read.append(one.submit(_write_reading_log, str(clones[0]), "old", 200 + i).result())
            read.append(two.submit(_write_reading_log, str(clones[1]), "old", 300 + i).result())
    assert sum(read[2:]) <= 8 * 8, read  # past each process's first write
    conn.pull()
    repo, store = conn.repo, conn.store
    git = json.loads(repo.read(L.git_history("old")) or b"")
    stored = json.loads(store.read_bytes(L.store_history("old")))
    assert len(git) == 1 + 60 + 10
    assert [{k: v for k, v in e.items() if k != "commit_sha"} for e in stored] == git
    first = commits_by_version(repo, "old")  # none for the squashed versions
    assert {e["version"]: e.get("commit_sha") for e in stored} == {
        e["version"]: first.get(e["version"]) for e in git
    }
    assert sum(1 for e in stored if "commit_sha" in e) == 11
    assert store.read_bytes(L.STORE_MANIFEST) == repo.read(L.MANIFEST)
    assert store.read_bytes(L.store_metadata("old")) == repo.read(L.git_metadata("old"))


def test_a_write_whose_remote_did_not_move_settles_without_the_clones_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))
    looks: list[str] = []
    real = type(conn.repo).remote_tip

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        looks.append("locked")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(conn.repo), "remote_tip", counted)
    conn.write("dm", frame(seed=2))
    assert looks == ["locked"]  # the classification's look only; the settle's is lock-free


def _died_after_push(tmp_path: Path) -> tuple[dc.Connection, dc.Connection, str]:
    """A project whose writer (``first``) was killed right after pushing a second
    version of ``dm``; ``second``, another clone, has pulled it: (first, second, the
    killed writer's version)."""
    first = new_project(tmp_path)
    first.write("dm", frame(seed=1))
    second = dc.clone(first.repo.remote_url, tmp_path / "second", first.store)
    assert _write_and_die(first.path, "git:push:swapped") == -signal.SIGKILL
    second.pull()
    dead = json.loads(second.repo.read(L.git_history("dm")) or b"[]")[0]["version"]
    return first, second, dead


def test_a_version_whose_writer_died_right_after_its_push_reads_by_id_at_once(
    tmp_path: Path,
) -> None:
    """A writer puts its version's snapshot in the store before it pushes. Killed right
    after the push, before any mirror, it leaves a version that reads by id from the
    store alone as soon as the next writer of the table (another clone, at once: no
    waiting) names it, and ``validate`` is clean without a fix."""
    first, second, dead = _died_after_push(tmp_path)
    assert dead not in {v.version for v in second.history("dm")}  # the store's lacks it
    assert first.store.read_bytes(L.store_snapshot("dm", dead)) == second.repo.read(
        L.git_metadata("dm")
    )
    second.write("dm", frame(seed=8))
    assert second.validate().ok
    assert_store_is_git(second)
    reader = dc.connect(store=first.store, project_name=first.project_name)
    assert reader.read("dm", version=dead[:12], as_="arrow").equals(
        second.read("dm", version=dead, as_="arrow")
    )


@pytest.mark.parametrize("age", ["old enough", "too young", "waited out"])
def test_a_version_pushed_without_its_snapshot_gets_it_from_the_next_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, age: str
) -> None:
    """A version whose writer pushed it without its snapshot (an R writer, or an earlier
    release, killed after its push; a store restored from an older backup). The next
    writer of the table (another clone) records that version's commit in the store's
    history and, when the version is ``LIVE_MIRROR`` seconds old or more, puts its snapshot
    there first: it then reads by id from the store alone, and ``validate`` is clean without
    a fix. A younger one is its (maybe live) writer's: left for ``validate(fix=True)``."""
    first, second, dead = _died_after_push(tmp_path)
    first.store.delete(L.store_snapshot("dm", dead))
    if age == "waited out":  # the real window, as a step re-run after a kill meets it
        stamp = json.loads(second.repo.read(L.git_history("dm")) or b"[]")[0]["timestamp"]
        born = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        time.sleep(max(0.0, born + _commits.LIVE_MIRROR - time.time()))
    else:
        monkeypatch.setattr(_commits, "LIVE_MIRROR", 0.0 if age == "old enough" else 3600.0)
    second.write("dm", frame(seed=8))
    reader = dc.connect(store=first.store, project_name=first.project_name)
    if age != "too young":
        assert_store_is_git(second)
        assert reader.read("dm", version=dead[:12], as_="arrow").equals(
            second.read("dm", version=dead, as_="arrow")
        )
    else:
        assert not first.store.exists(L.store_snapshot("dm", dead))
        assert [p.kind for p in second.validate().problems] == ["missing_snapshot"]
        assert second.validate(fix=True).ok
        assert_store_is_git(second)
