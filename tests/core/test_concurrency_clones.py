"""Eight clones of one local remote writing at once while the remote is being packed under
them (by dulwich under the maintenance lock, and by datom's own compaction, whose packs
are written while the clones push): the objects the clones link from the remote move into
packs mid-run. Nothing may be lost, and the real ``git`` must find every repository whole.
Then the whole write path, with every writer compacting the remote after each push."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import Author, MetadataRepo, TreeReader
from datom_core._git import _maintenance as maint
from datom_core._plain import PLAIN_ENV
from tests.gitserver import GitHTTPServer
from tests.kills import kill_round, told

ME = Author("Ada Lovelace", "ada@example.org")
WRITERS, WRITES = 8, 6


def _writer(clone: str, worker: int) -> None:
    repo = MetadataRepo.open(clone)
    for i in range(WRITES):
        line = f"{worker}:{i}".encode()

        def build(tree: TreeReader, line: bytes = line) -> Mapping[str, bytes]:
            return {"log.txt": (tree.read("log.txt") or b"") + line + b"\n",
                    f"w{worker}/f.json": line * 400}  # fmt: skip

        repo.commit_and_push(build, f"w{worker} {i}", ME)


def _pack_while(bare: Path, running: threading.Event, packed: list[int]) -> None:
    """Pack the remote's loose objects again and again, as its compaction does (under the
    maintenance lock, taken exclusively)."""
    fd = os.open(bare / "datom-maintenance.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while running.is_set():
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                with closing(Repo(str(bare))) as r:
                    packed.append(r.object_store.pack_loose_objects())
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            time.sleep(0.05)
    finally:
        os.close(fd)


def _compact_while(bare: Path, running: threading.Event, packed: list[int]) -> None:
    """Compact the remote again and again as datom does: packs written while the clones
    push and read, the loose objects and old packs deleted when nobody reads."""
    access = maint.RemoteAccess(bare)
    try:
        while running.is_set():
            with closing(Repo(str(bare))) as r:
                loose = r.object_store.count_loose_objects()
                if maint.compact_remote(bare, lambda: r, access, wait=0.5):
                    packed.append(loose)
            time.sleep(0.02)
    finally:
        access.close()


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(repo))
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="the git command line is not installed")
@pytest.mark.parametrize("packer", [_pack_while, _compact_while], ids=["dulwich", "datom"])
def test_eight_clones_lose_nothing_while_the_remote_is_packed_under_them(
    tmp_path: Path, packer: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # datom's packer, in this process only, compacts at every turn and merges past 2 packs
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 0)
    monkeypatch.setattr(maint, "PACK_BUDGET", 2)
    origin = MetadataRepo.init(tmp_path / "origin", None)
    origin.commit_and_push(lambda tree: {"log.txt": b""}, "seed", ME)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "origin")
    clones = [tmp_path / f"c{w}" for w in range(WRITERS)]
    for c in clones:
        MetadataRepo.clone(origin.remote_url, c)
    running, packed = threading.Event(), list[int]()
    running.set()
    packer = threading.Thread(target=packer, args=(bare, running, packed))
    packer.start()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(c), w)) for w, c in enumerate(clones)]
    try:
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=600)
    finally:
        running.clear()
        packer.join()
    assert [p.exitcode for p in procs] == [0] * WRITERS
    assert sum(packed) > 0  # objects did move into packs while the writers ran
    origin.fetch_and_reset()
    lines = (origin.read("log.txt") or b"").decode().splitlines()
    assert sorted(lines) == sorted(f"{w}:{i}" for w in range(WRITERS) for i in range(WRITES))
    assert len(origin.log()) == 1 + WRITERS * WRITES
    _git(bare, "fsck", "--strict", "--no-dangling")
    for clone in [tmp_path / "origin", *clones]:
        MetadataRepo.open(clone).fetch_and_reset()
        _git(clone, "fsck", "--strict", "--no-dangling")
        assert _git(clone, "status", "--porcelain") == ""
        assert _git(clone, "rev-parse", "HEAD") == _git(bare, "rev-parse", "main")


def _exit_codes(target: Callable[..., None], args: list[tuple[Any, ...]]) -> list[int | None]:
    """Run ``target`` in one spawned process per argument tuple; their exit codes."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    return [p.exitcode for p in procs]


def _table_writer(clone: str, store: str, worker: int, table: str, plain: bool = False) -> None:
    """Writes through the whole write path (the store mirror in its worker thread while
    the clone moves) with budgets that compact the remote at every push (``plain``: a
    writer on the compaction's plain path, which leaves the remote alone but still holds
    it shared while it reads)."""
    if plain:
        os.environ[PLAIN_ENV] = "compact"
    maint.LOOSE_BUDGET, maint.PACK_BUDGET = 4, 2
    maint.REMOTE_CHECK_EVERY = maint.CLONE_CHECK_EVERY = 1
    conn = dc.connect(clone, store=dc.LocalStore(store))
    for i in range(WRITES):
        conn.write(table or f"w{worker}", pa.table({"k": [f"{worker}-{i}-{j}" for j in range(3)]}))


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one clone", "one table", "one table, half plain"])
def test_writes_lose_nothing_while_every_push_compacts_the_remote(
    tmp_path: Path, shape: str
) -> None:
    """A version is recorded once and mirrored, and ``validate`` is clean, when 8 writers
    (all through one clone, or each through its own onto one table) compact the remote
    after every push (or half of them do, the others on the compaction's plain path). A
    write had failed after its push there, its mirror left stale."""
    store = tmp_path / "store"
    dc.init_repo(tmp_path / "origin", "C", dc.LocalStore(store))
    remote = str(MetadataRepo.embedded_remote_path(tmp_path / "origin"))
    clones = [tmp_path / ("c" if shape == "one clone" else f"c{w}") for w in range(WRITERS)]
    for c in set(clones):
        dc.clone(remote, c, dc.LocalStore(store))
    table = "" if shape == "one clone" else "shared"
    mixed = shape.endswith("half plain")
    args = [(str(c), str(store), w, table, mixed and w % 2 == 1) for w, c in enumerate(clones)]
    assert _exit_codes(_table_writer, args) == [0] * WRITERS
    conn = dc.connect(tmp_path / "origin", store=dc.LocalStore(store))
    report = conn.validate()
    assert report.ok, report
    tables = ["shared"] if table else [f"w{w}" for w in range(WRITERS)]
    versions = [v.version for t in tables for v in conn.history(t)]
    assert len(versions) == len(set(versions)) == WRITERS * WRITES


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="the git command line is not installed")
def test_writers_killed_at_random_moments_leave_a_project_validate_repairs(
    tmp_path: Path,
) -> None:
    """Six writers (four clones, and two processes through a fifth), compacting at every
    push, three rounds in which two of them are SIGKILLed at a random moment (seeded): every
    version a writer was told of is recorded once; before any repair no recorded version
    lacks its store snapshot (a killed writer leaves at most a lagging mirror), and
    ``validate(fix=True)`` repairs that; then every recorded version reads from the store
    alone, and git finds the remote whole."""
    rng = random.Random(20261204)
    store = tmp_path / "store"
    dc.init_repo(tmp_path / "origin", "K", dc.LocalStore(store))
    remote = str(MetadataRepo.embedded_remote_path(tmp_path / "origin"))
    clones = [tmp_path / f"c{w}" for w in range(4)] + [tmp_path / "shared"] * 2
    for c in set(clones):
        dc.clone(remote, c, dc.LocalStore(store))
    spec = {"kind": "local", "path": str(store)}
    logs: list[Path] = []
    for round_ in range(3):
        mine = [tmp_path / f"log{round_}-{w}" for w in range(len(clones))]
        codes = kill_round(rng, clones, spec, 15, mine, longest_pause=1.0)
        assert all(c in (0, -signal.SIGKILL) for c in codes), codes
        logs += mine
    conn = dc.connect(tmp_path / "origin", store=dc.LocalStore(store))
    before = conn.validate()
    assert not [p for p in before.problems if p.kind == "missing_snapshot"], before
    conn.validate(fix=True)
    report = conn.validate()
    assert report.ok, report
    landed = told(logs)
    assert landed  # the survivors wrote
    reader = dc.connect(store=dc.LocalStore(store), project_name="K")
    for table in ("t0", "t1", "t2"):
        versions = [v.version for v in conn.history(table)]
        assert len(versions) == len(set(versions))
        assert {v for t, v in landed if t == table} <= set(versions)
        for version in versions:
            assert reader.read(table, version=version, as_="arrow").num_rows == 3
    _git(Path(remote), "fsck", "--strict")
    for clone in set(clones):
        assert dc.connect(clone, store=dc.LocalStore(store)).validate().ok


def _https_writer(clone: str, store: str, worker: int) -> None:
    maint.LOOSE_BUDGET, maint.PACK_BUDGET = 4, 2  # slower writes: wider races
    maint.CLONE_CHECK_EVERY = 1
    conn = dc.connect(clone, store=dc.LocalStore(store))
    for i in range(12):
        data = pa.table({"k": [f"{worker}-{i}-{j}" for j in range(3)]})
        conn.write(f"t{(worker + i) % 3}", data)


@pytest.mark.slow
def test_writers_through_the_whole_write_path_over_https_lose_nothing(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six writers (four clones of one HTTPS remote, and two processes through a fifth),
    compacting their clones at every write, writing three tables: every write lands once
    and the store agrees with git. (The fetch's retry when the tip moved between its two
    requests is pinned down by ``test_git.py``'s server-error tests; this run meets that
    race only now and then.)"""
    server = any_git_http_server  # dulwich's server, and git's own http-backend
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    url, store = server.url_for("proj"), tmp_path / "store"
    dc.init_repo(tmp_path / "origin", "H", dc.LocalStore(store), url)
    clones = [tmp_path / f"c{w}" for w in range(4)] + [tmp_path / "shared"] * 2
    for c in set(clones):
        dc.clone(url, c, dc.LocalStore(store))
    args = [(str(c), str(store), w) for w, c in enumerate(clones)]
    assert _exit_codes(_https_writer, args) == [0] * len(clones)
    conn = dc.connect(tmp_path / "origin", store=dc.LocalStore(store))
    assert conn.validate().ok
    assert sum(len(conn.history(f"t{t}")) for t in range(3)) == 72
