"""A group's store mirror runs after its leader lets the clone's lock go, in the clone's
turn order (``_project/_mirrorturn``): the next group pushes meanwhile, its mirror waits
for the one before, and the store ends equal to git's tip."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._project import _mirrorturn
from datom_core._project._groupmirror import in_order
from datom_core._project._mirrorturn import followed_in_order, note_lone, take
from datom_core._project._queue import Answer, Queue
from tests.core.projects import frame, new_project
from tests.faultproxy import FaultProxy
from tests.gitserver import GitHTTPServer

pytestmark = pytest.mark.timeout(300)

MANIFEST = ".metadata/manifest.json"
_HOLD = 90.0  # seconds at most the first group's mirror is held (the test releases it)


class _HeldStore(dc.LocalStore):
    """A local store that logs each manifest put (a file per put, named by time) and,
    when ``<log>/hold`` exists, holds the first history copy put after it until
    ``<log>/release`` appears (the process that takes ``hold`` says so in ``held``)."""

    def __init__(self, root: str, log: str) -> None:
        super().__init__(root)
        self._log = Path(log)

    def _logged(self, data: bytes) -> None:
        (self._log / f"{time.time_ns():020d}-{os.getpid()}.manifest").write_bytes(bytes(data))

    def _maybe_hold(self, key: str) -> None:
        if not key.endswith("/version_history.json"):
            return
        try:
            os.rename(self._log / "hold", self._log / "held")
        except FileNotFoundError:
            return
        deadline = time.monotonic() + _HOLD
        while not (self._log / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def write_in_order(self, documents: Any, after: Any = None) -> None:
        for key, data, _ in documents:
            self._maybe_hold(key)
            if key == MANIFEST:
                self._logged(data)
        super().write_in_order(documents, after)

    def write_bytes(self, key: str, data: bytes) -> None:
        self._maybe_hold(key)
        if key == MANIFEST:
            self._logged(data)
        super().write_bytes(key, data)


def _write(clone: str, store: tuple[str, ...], table: str, seed: int, out: str) -> None:
    if store[0] == "s3":
        s: dc.Store = dc.S3Store(store[1], prefix=store[2], endpoint_url=store[3])
    else:
        s = _HeldStore(store[1], out)
    conn = dc.connect(clone, store=s)
    try:
        result = conn.write(table, frame(seed=seed))
        Path(out, f"{table}-{seed}.result").write_text(f"ok {result.version} {result.commit}")
    except Exception as e:  # what the test looks at
        Path(out, f"{table}-{seed}.result").write_text(f"failed {type(e).__name__}: {e}")


def _queued(clone: Path) -> int:
    folder = clone / ".git" / "datom-queue"
    return len(list(folder.glob("*.req"))) if folder.exists() else 0


def _start(
    clone: Path, store: tuple[str, ...], jobs: list[tuple[str, int]], out: Path
) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_write, args=(str(clone), store, table, seed, str(out)))
        for table, seed in jobs
    ]
    for p in procs:
        p.start()
    return procs


def _group(
    conn: dc.Connection, store: tuple[str, ...], jobs: list[tuple[str, int]], out: Path
) -> list:
    """``jobs`` queue while the clone's lock is held here, then go as one group."""
    with conn.repo.lock():
        procs = _start(conn.path, store, jobs, out)
        deadline = time.monotonic() + 120
        while _queued(conn.path) < len(jobs) and time.monotonic() < deadline:
            conn.repo.remote_head()  # the clone's newest look, for the writers to share
            time.sleep(0.3)
        assert _queued(conn.path) == len(jobs), "the writers did not queue"
    return procs


def _commits(bare: Path) -> list[str]:
    """The remote's commits, oldest first."""
    with Repo(str(bare)) as r:
        walk = r.get_walker(include=[r.head()])
        return [e.commit.id.decode() for e in walk][::-1]


def _results(out: Path) -> dict[str, str]:
    return {f.name: f.read_text() for f in out.glob("*.result")}


@pytest.mark.usefixtures("accelerated")
def test_the_next_group_pushes_during_a_mirror_and_mirrors_after_it(
    git_backend_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group A's mirror is held at its first history copy. Meanwhile group B's writers
    push (the clone's lock is free: A mirrors outside it); B's mirror waits for A's turn,
    so the manifests reach the store in push order (never an older one over a newer one)
    and the store ends as git's tip."""
    server = git_backend_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    bare = server.create_bare("proj")
    out = tmp_path / "out"
    out.mkdir()
    conn = dc.init_repo(
        tmp_path / "p", "P", dc.LocalStore(tmp_path / "store"), server.url_for("proj")
    )
    conn.write("seed", frame(seed=99))
    store = ("local", str(tmp_path / "store"))
    before = len(_commits(bare))
    a_jobs = [(f"a{i}", i) for i in range(3)]
    b_jobs = [(f"b{i}", 10 + i) for i in range(2)]
    (out / "hold").write_text("")
    procs = _group(conn, store, a_jobs, out)
    try:
        deadline = time.monotonic() + 60
        while not (out / "held").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (out / "held").exists(), "group A's mirror never started"
        assert len(_commits(bare)) == before + len(a_jobs)  # A pushed; its mirror is held
        procs += _start(conn.path, store, b_jobs, out)
        deadline = time.monotonic() + 40
        while len(_commits(bare)) < before + 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        pushed_meanwhile = len(_commits(bare))
        manifests_meanwhile = sorted(out.glob("*.manifest"))
    finally:
        (out / "release").write_text("")
        for p in procs:
            p.join(120)
    assert pushed_meanwhile == before + 5, "group B could not push while A mirrored"
    assert manifests_meanwhile == [], "a manifest was put before group A's"
    results = _results(out)
    assert len(results) == 5 and all(r.startswith("ok") for r in results.values()), results
    chain = _commits(bare)
    conn.pull()
    position = {conn.repo.read_at(c, ".datom/manifest.json"): i for i, c in enumerate(chain)}
    put = [position[p.read_bytes()] for p in sorted(out.glob("*.manifest"))]
    assert put == sorted(put), put  # in push order: none older over a newer one
    assert put[-1] == len(chain) - 1
    assert conn.store.read_bytes(MANIFEST) == conn.repo.read_at(chain[-1], ".datom/manifest.json")
    for table, _ in a_jobs + b_jobs:
        assert len(conn.history(table)) == 1
    assert conn.validate().ok


def _heads(proxy: FaultProxy, *suffixes: str) -> int:
    return sum(
        1
        for m, t in proxy.seen
        if m == "HEAD" and any(t.split("?")[0].endswith(s) for s in suffixes)
    )


@pytest.mark.usefixtures("accelerated")
def test_a_group_after_another_puts_its_documents_without_a_head(
    git_backend_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    s3_bucket: str,
    s3_proxy: FaultProxy,
) -> None:
    """Two groups in turn, each of other processes, over S3 (requests counted at the
    proxy): the second group's leader names in its conditional PUTs the ETags the first
    group put (the clone's turns carry them), so it sends no HEAD for the history copies,
    ``metadata.json`` files or the manifest; the store ends as git's tip."""
    server = git_backend_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    store = ("s3", s3_bucket, "proj", s3_proxy.url)
    first = dc.S3Store(s3_bucket, prefix="proj", endpoint_url=s3_proxy.url)
    conn = dc.init_repo(tmp_path / "p", "P", first, server.url_for("proj"))
    conn.write("seed", frame(seed=99))
    documents = ("/version_history.json", "/.metadata/metadata.json", "/manifest.json")
    heads = []
    for round_ in range(2):
        out = tmp_path / f"out{round_}"
        out.mkdir()
        s3_proxy.seen.clear()
        for p in _group(conn, store, [(f"t{i}", 10 * round_ + i) for i in range(3)], out):
            p.join(120)
        results = _results(out)
        assert len(results) == 3 and all(r.startswith("ok") for r in results.values()), results
        heads.append(_heads(s3_proxy, *documents))
    assert heads[1] == 0, heads
    conn.pull()
    for i in range(3):
        assert len(conn.history(f"t{i}")) == 2
    assert conn.validate().ok


def test_a_turn_waits_past_a_failed_one_for_the_one_before_it(tmp_path: Path) -> None:
    """Turns A, B, C taken in push order; B ends failed (it may never have waited for A)
    while A still mirrors: C's turn begins only once A's is over, not when B's is."""
    folder = tmp_path / "queue"
    a = take(folder, "c0", "c1")
    b = take(folder, "c1", "c2")
    c = take(folder, "c2", "c3")
    assert (b.pred, c.pred) == (a.gid, b.gid)
    b.end(done=False)
    began = threading.Event()

    def wait() -> None:
        c.wait()
        began.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert not began.wait(0.5)  # A still holds its turn
    a.end(done=True)
    assert began.wait(10)
    waiter.join()
    c.end(done=True)


def test_a_look_past_the_groups_after_it_needs_each_in_order(tmp_path: Path) -> None:
    """The remote moved from a group's last commit by later groups of the clone (each in
    or before its turn, or done) and writes pushed alone between turns: no settling.
    A later group whose turn ended failed, or a push the chain does not know, is not."""
    folder = tmp_path / "queue"
    a = take(folder, "c0", "c1")
    note_lone(folder, "c1", "c2")
    b = take(folder, "c2", "c3")
    a.end(done=True)
    assert followed_in_order(folder, "c1", "c3")  # b still holds its turn
    assert followed_in_order(folder, "c1", "c1")
    assert not followed_in_order(folder, "c1", "c9")  # another clone's push
    c = take(folder, "c3", "c4")
    b.end(done=False)
    assert not followed_in_order(folder, "c1", "c4")  # b failed: its writers mirror alone
    assert followed_in_order(folder, "c3", "c4")
    c.end(done=True)
    assert followed_in_order(folder, "c3", "c4")


def test_a_look_waits_for_the_clones_push_to_take_its_place(tmp_path: Path) -> None:
    """The look found a commit the chain does not know yet: a write of this clone
    between its push and its turn, holding the clone's lock. Once the lock is free the
    commit is in the chain, and the group settles nothing; a commit still unknown then
    is another clone's."""
    conn = new_project(tmp_path)
    folder = conn.repo.controldir / "datom-queue"
    a = take(folder, "c0", "c1")
    a.end(done=True)
    answer: list[bool] = []
    with conn.repo.lock():  # the next group: pushed c2, its turn not taken yet
        looking = threading.Thread(
            target=lambda: answer.append(in_order(conn.repo, folder, "c1", "c2"))
        )
        looking.start()
        looking.join(0.5)
        assert answer == []  # waits for the lock
        b = take(folder, "c1", "c2")
    looking.join(30)
    assert answer == [True]
    b.end(done=True)
    assert not in_order(conn.repo, folder, "c2", "c7")  # unknown once the lock is free


def test_a_turn_held_by_a_stopped_leader_is_waited_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader that stopped without dying (frozen, its store never answering) keeps its
    turn: the group after it gives up waiting after ``TURN_WAIT`` (a datom error), and a
    writer its group recorded reads its answer as not mirrored, to mirror its own write."""
    monkeypatch.setattr(_mirrorturn, "TURN_WAIT", 0.3)
    folder = tmp_path / "queue"
    stuck = take(folder, "c0", "c1")
    after = take(folder, "c1", "c2")
    with pytest.raises(dc.StoreError) as e:
        after.wait()
    assert stuck.gid in str(e.value) and "stop the stuck process" in str(e.value)
    waiting = Queue(tmp_path).wait(b"{}")
    try:
        pending = Answer("recorded", "c1", "c0", "c1", turn=stuck.gid)
        settled = waiting.settled(pending)
    finally:
        waiting.close()
    assert (settled.state, settled.commit, settled.mirrored, settled.turn) == (
        "recorded",
        "c1",
        False,
        None,
    )
    stuck.end(done=True)
    after.end(done=True)


@pytest.mark.timeout(120)
def test_a_write_behind_a_stopped_groups_mirror_still_lands_in_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clone's last group holds its turn (its leader stopped mid-mirror): a write then
    joins the turns, gives up waiting after ``TURN_WAIT`` and mirrors its own documents;
    the store ends as git's tip."""
    monkeypatch.setattr(_mirrorturn, "TURN_WAIT", 0.5)
    conn = new_project(tmp_path)
    conn.write("seed", frame(seed=1))
    tip = conn.repo.remote_head()
    assert tip is not None
    stuck = take(conn.repo.controldir / "datom-queue", tip, tip)
    try:
        result = conn.write("later", frame(seed=2))
    finally:
        stuck.end(done=False)
    assert result.commit == conn.repo.remote_head()
    assert conn.store.read_bytes(MANIFEST) == conn.repo.read_at(
        result.commit, ".datom/manifest.json"
    )
    assert [v.version for v in conn.history("later")] == [result.version]
    assert conn.validate().ok
