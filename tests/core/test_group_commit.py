"""Group commit: writes waiting on one clone go out in one push, each its own commit."""

from __future__ import annotations

import multiprocessing
import os
import stat
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import ChainItem
from datom_core._git._objects import TreeReader
from tests.core.projects import frame, new_project
from tests.gitserver import GitHTTPServer

pytestmark = pytest.mark.timeout(300)


def _count_pushes(remote: str, log: Path) -> None:
    """A post-receive hook on the bare remote: one line per push received."""
    hook = Path(remote) / "hooks" / "post-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\nsleep 0.2\ncat >> {log}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)


def _chain(remote: str) -> list[tuple[str, list[str], str]]:
    """(commit, parents, message) from the remote's tip back to the root."""
    out = []
    with Repo(remote) as r:
        for entry in r.get_walker(include=[r.refs[b"refs/heads/main"]]):
            c = entry.commit
            out.append((c.id.decode(), [p.decode() for p in c.parents], c.message.decode()))
    return out


def test_a_chain_is_one_push_of_one_commit_per_write(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))
    log = tmp_path / "pushes.log"
    _count_pushes(conn.repo.remote_url, log)
    before = conn.repo.head()

    def build(name: str, body: bytes):  # noqa: ANN202
        return lambda tree: {f"{name}.txt": body}

    def refused(tree: TreeReader) -> dict[str, bytes]:
        raise dc.DatomError("refused on this tip")

    items = [
        ChainItem(build("a", b"1"), "write a", "A <a@example.org>"),
        ChainItem(refused, "write r", "R <r@example.org>"),
        ChainItem(build("b", b"2"), "write b", "B <b@example.org>"),
        ChainItem(build("a", b"1"), "write a again", "A <a@example.org>"),  # no change
    ]
    answers, tip, last = conn.repo.commit_chain_and_push(items)
    assert tip == before
    assert isinstance(answers[1], dc.DatomError) and answers[3] is None
    a, b = answers[0], answers[2]
    assert isinstance(a, str) and isinstance(b, str) and last == b
    assert log.read_text().count("\n") == 1  # one push
    chain = _chain(conn.repo.remote_url)
    assert chain[0] == (b, [a], "write b\n")
    assert chain[1] == (a, [before], "write a\n")
    assert conn.repo.head() == b and conn.repo.read("b.txt") == b"2"


def _writer(clone: str, table: str, seeds: list[int]) -> list[tuple[str, str]]:
    conn = dc.connect(clone)
    return [(conn.write(table, frame(seed=s)).version, table) for s in seeds]


def _run(jobs: list[tuple[str, str, list[int]]]) -> list[list[tuple[str, str]]]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool:
        futures = [pool.submit(_writer, *job) for job in jobs]
        return [f.result(timeout=240) for f in futures]


@pytest.mark.usefixtures("accelerated")
def test_processes_sharing_a_clone_push_fewer_times_than_they_write(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    log = tmp_path / "pushes.log"
    _count_pushes(conn.repo.remote_url, log)  # a slow remote: writers queue behind a push
    jobs = [(str(conn.path), f"t{i}", [10 * i + k for k in range(3)]) for i in range(6)]
    results = _run(jobs)
    writes = sum(len(r) for r in results)
    pushes = log.read_text().count("\n")
    assert pushes < writes, (pushes, writes)
    chain = _chain(conn.repo.remote_url)
    assert len(chain) == 1 + writes  # one commit per write, linear
    assert all(len(parents) <= 1 for _, parents, _ in chain)
    for (_, table, _), res in zip(jobs, results, strict=True):
        history = [h.version for h in conn.history(table)]
        assert sorted(history) == sorted(v for v, _ in res)  # one entry per write
        for h in conn.history(table):
            # the store's copy names the commit that produced each version
            assert h.commit_sha in {c for c, _, _ in chain}
    assert conn.validate().ok


@pytest.mark.parametrize(
    ("switch", "value"), [("DATOM_GROUP_COMMIT", "0"), ("DATOM_PLAIN", "group")]
)
def test_grouping_off_pushes_once_per_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str, value: str
) -> None:
    """Group commit's plain path: every write pushes alone, each its own commit."""
    monkeypatch.setenv(switch, value)
    conn = new_project(tmp_path)
    log = tmp_path / "pushes.log"
    _count_pushes(conn.repo.remote_url, log)
    jobs = [(str(conn.path), f"t{i}", [10 * i + k for k in range(2)]) for i in range(4)]
    results = _run(jobs)
    assert log.read_text().count("\n") == sum(len(r) for r in results)
    assert len(_chain(conn.repo.remote_url)) == 1 + sum(len(r) for r in results)
    assert os.environ[switch] == value
    assert conn.validate().ok


def _write_and_say(clone: str, table: str, seed: int, out: Path) -> None:
    conn = dc.connect(clone)
    try:
        result = conn.write(table, frame(seed=seed))
        (out / table).write_text(f"ok {result.version} {result.commit}")
    except Exception as e:  # what this test looks at
        (out / table).write_text(f"failed {type(e).__name__}: {e}")


def _queued(clone: Path) -> int:
    folder = clone / ".git" / "datom-queue"
    return len(list(folder.glob("*.req"))) if folder.exists() else 0


def _kill_round(server: GitHTTPServer, root: Path, step: str) -> tuple[dc.Connection, list, Path]:  # type: ignore[type-arg]
    """Six writers queue behind the clone's lock held here (a group's push under way:
    over HTTP(S) they classify on the clone's newest look without the lock); once it is
    free, one of them leads the others and is killed at ``step``."""
    root.mkdir()
    bare = server.create_bare(root.name)
    conn = dc.init_repo(root / "p", "P", dc.LocalStore(root / "store"), server.url_for(root.name))
    _count_pushes(str(bare), root / "pushes.log")
    out = root / "out"
    out.mkdir()
    ctx = multiprocessing.get_context("spawn")
    os.environ["DATOM_CRASH_AT"] = step  # only a group's leader reaches it
    try:
        procs = [
            ctx.Process(target=_write_and_say, args=(str(conn.path), f"t{i}", i, out))
            for i in range(6)
        ]
        with conn.repo.lock():
            for p in procs:
                p.start()
            deadline = time.monotonic() + 120
            while _queued(conn.path) < len(procs) and time.monotonic() < deadline:
                conn.repo.remote_head()  # the clone's newest look, for the writers to share
                time.sleep(0.3)
        for p in procs:
            p.join(240)
    finally:
        del os.environ["DATOM_CRASH_AT"]
    return conn, procs, out


@pytest.mark.usefixtures("accelerated")
@pytest.mark.parametrize(
    "step",
    [
        "git:chain:built",
        "git:chain:swapped",
        "group:turn",
        "group:mirror:start",
        "group:mirror:history",
        "group:mirror:metadata",
        "group:mirror:manifest",
    ],
)
def test_a_leader_killed_mid_group_converges(
    git_backend_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    """The leader of a group dies before or after its push, once its turn to mirror is
    taken (its writers answered "recorded, mirror under way"), or amid the group's store
    mirror, outside the clone's lock (before any document, after the history copies,
    after the ``metadata.json`` files, after the manifest: its writers not told the
    outcome): each writer it claimed completes (its version found recorded, or recorded
    by itself; mirrored by itself when its leader's turn ended without a word); the
    leader's own write run again converges."""
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_backend_server.token)
    for attempt in range(3):  # a round whose writers did not all queue in time is rerun
        conn, procs, out = _kill_round(git_backend_server, tmp_path / f"round{attempt}", step)
        killed = [f"t{i}" for i, p in enumerate(procs) if p.exitcode != 0]
        if killed:
            break
    assert killed, "no group formed (no leader reached the step)"
    for i, p in enumerate(procs):
        if p.exitcode == 0:
            assert (out / f"t{i}").read_text().startswith("ok"), (out / f"t{i}").read_text()
    for table in killed:  # the killed leader's write, run again
        dc.connect(conn.path).write(table, frame(seed=int(table[1:])))
    conn.pull()
    for i in range(6):
        assert len(conn.history(f"t{i}")) == 1  # recorded once
    assert conn.validate().ok
