"""commit_and_push, the remote's HEAD, stale git locks, compaction and the commit cache,
against real bare repositories and the smart-HTTP server on loopback (no mocks)."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from datom_core._errors import GitError, PushRejectedError
from datom_core._git import Author, GitCredentials, MetadataRepo, TreeReader, _gitlocks, _lock
from datom_core._git import _maintenance as maint
from datom_core._git._access import LOCK_NAME
from datom_core._git._fast import _compact
from datom_core._git._fast._packs import write_objects
from tests.core import test_git_roundtrips
from tests.gitcli import git, needs_git, write_beside_git
from tests.gitserver import GitHTTPServer

ME = Author("Ada Lovelace", "ada@example.org")


def make_bare(path: Path, branch: str = "main") -> Path:
    with closing(Repo.init_bare(str(path), mkdir=True, default_branch=branch.encode())):
        pass
    return path


def remote_state(bare: Path) -> tuple[bytes | None, dict[bytes, bytes], int]:
    """(the branch HEAD names, the branches, the number of objects) of a bare repository."""
    with closing(Repo(str(bare))) as r:
        head = r.refs.get_symrefs().get(b"HEAD")
        heads = {k: v for k, v in r.refs.as_dict(b"refs/heads/").items()}
        return head, heads, sum(1 for _ in r.object_store)


def appender(line: bytes, own: str) -> object:
    """A build that appends ``line`` to the shared ``log.txt`` of whatever tip it is given."""

    def build(tree: TreeReader) -> Mapping[str, bytes]:
        return {"log.txt": (tree.read("log.txt") or b"") + line + b"\n", own: line}

    return build


# -- commit_and_push ------------------------------------------------------------------


def test_commit_and_push_builds_on_the_remote_tip_and_returns_none_when_unchanged(
    tmp_path: Path,
) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    first = a.commit_and_push(lambda tree: {"x.json": b"1"}, "one", ME)
    assert first is not None and a.head() == first and not a.has_unpushed_commits()
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    second = b.commit_and_push(appender(b"b", "b.txt"), "b", ME)
    # a is behind: its build sees b's tip, not its own working tree
    seen: list[bytes | None] = []

    def build(tree: TreeReader) -> Mapping[str, bytes]:
        seen.append(tree.read("b.txt"))
        return {"x.json": b"1"}

    assert a.commit_and_push(build, "unchanged", ME) is None
    assert seen == [b"b"] and a.head() == second and a.read("b.txt") == b"b"
    assert a.read("log.txt") == b"b\n"


def test_a_rejected_push_replays_build_on_the_new_tip_without_re_uploading(
    tmp_path: Path,
) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(lambda tree: {"seed": b"0"}, "seed", ME)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    tips: list[str | None] = []
    interloper: list[str | None] = []

    def build(tree: TreeReader) -> Mapping[str, bytes]:
        tips.append(tree.commit)
        if not interloper:  # another writer lands between our fetch and our push
            interloper.append(b.commit_and_push(appender(b"b", "b.txt"), "b", ME))
        return {"log.txt": (tree.read("log.txt") or b"") + b"a\n", "a.txt": b"a"}

    objects_before = remote_state(bare)[2]
    sha = a.commit_and_push(build, "a", ME)
    assert len(tips) == 2 and tips[1] == interloper[0] and tips[0] != tips[1]
    assert a.read_at(sha or "", "log.txt") == b"b\na\n"
    # b's commit (commit, root tree, log.txt, b.txt) and a's (commit, root, log.txt, a.txt):
    # the rejected first attempt sent nothing.
    assert remote_state(bare)[2] == objects_before + 8


def _writer(clone: str, worker: int, writes: int, token: str | None) -> None:
    creds = GitCredentials(token) if token else None
    repo = MetadataRepo.open(clone, credentials=creds)
    for i in range(writes):
        repo.commit_and_push(appender(f"{worker}:{i}".encode(), f"w{worker}/f"), f"w{worker}", ME)


def _run_writers(
    clones: list[Path], writes: int, token: str | None = None, target: Any = None
) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=target or _writer, args=(str(c), w, writes, token))
        for w, c in enumerate(clones)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def _check_log(repo: MetadataRepo, writers: int, writes: int) -> None:
    repo.fetch_and_reset()
    lines = (repo.read("log.txt") or b"").decode().splitlines()
    assert sorted(lines) == sorted(f"{w}:{i}" for w in range(writers) for i in range(writes))
    for w in range(writers):
        order = [line for line in lines if line.startswith(f"{w}:")]
        assert order == [f"{w}:{i}" for i in range(writes)]  # each writer's own order kept
    assert len(repo.log()) == 1 + writers * writes


def _compacting_writer(clone: str, worker: int, writes: int, token: str | None) -> None:
    """A writer whose budgets make every push compact the remote (and merge its packs)."""
    maint.LOOSE_BUDGET, maint.PACK_BUDGET = 4, 2
    maint.REMOTE_CHECK_EVERY = maint.CLONE_CHECK_EVERY = 1
    _writer(clone, worker, writes, token)


@pytest.mark.slow
@pytest.mark.parametrize("clones", ["own", "one"])
def test_writers_compacting_one_remote_all_the_time_never_fail(tmp_path: Path, clones: str) -> None:
    """8 processes (each with its clone, or all through one) whose every push compacts
    the remote: packs merged away under other processes' cached views, and a process's
    threads reading beside each other. A write had failed after its push
    (``PackFileDisappeared``)."""
    origin = MetadataRepo.init(tmp_path / "origin", None)
    origin.commit_and_push(lambda tree: {"log.txt": b""}, "seed", ME)
    paths = [tmp_path / (f"c{w}" if clones == "own" else "c") for w in range(8)]
    for c in set(paths):
        MetadataRepo.clone(origin.remote_url, c)
    _run_writers(paths, 8, target=_compacting_writer)
    _check_log(origin, 8, 8)
    git(MetadataRepo.embedded_remote_path(tmp_path / "origin"), "fsck", "--strict")


@pytest.mark.slow
def test_eight_clones_of_a_local_remote_never_lose_a_write(tmp_path: Path) -> None:
    origin = MetadataRepo.init(tmp_path / "origin", None)
    origin.commit_and_push(lambda tree: {"log.txt": b""}, "seed", ME)
    clones = [tmp_path / f"c{w}" for w in range(8)]
    for c in clones:
        MetadataRepo.clone(origin.remote_url, c)
    _run_writers(clones, 10)
    _check_log(origin, 8, 10)
    head, heads, _ = remote_state(MetadataRepo.embedded_remote_path(tmp_path / "origin"))
    assert head == b"refs/heads/main" and list(heads) == [b"main"]


@pytest.mark.slow
def test_concurrent_clones_over_https_never_lose_a_write(
    any_git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    """On dulwich's server and on git's own http-backend, whose receive-pack answers a
    compare-and-swap lost to a concurrent push with ``ng <ref> failed to update ref``."""
    server = any_git_http_server
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    origin = MetadataRepo.clone(url, tmp_path / "origin", credentials=creds)
    origin.commit_and_push(lambda tree: {"log.txt": b""}, "seed", ME)
    clones = [tmp_path / f"c{w}" for w in range(4)]
    for c in clones:
        MetadataRepo.clone(url, c, credentials=creds)
    _run_writers(clones, 5, server.token)
    _check_log(origin, 4, 5)


def test_commit_and_push_gives_up_at_its_deadline_with_nothing_recorded(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(lambda tree: {"seed": b"0"}, "seed", ME)
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    calls = [0]

    def always_beaten(tree: TreeReader) -> Mapping[str, bytes]:
        calls[0] += 1
        b.commit_and_push(lambda t: {"b": str(calls[0]).encode()}, "b", ME)
        return {"a": str(calls[0]).encode()}

    with pytest.raises(PushRejectedError, match="gave up after"):
        a.commit_and_push(always_beaten, "a", ME, deadline=0.5)
    assert calls[0] >= 2
    assert MetadataRepo.open(tmp_path / "b").read_at(b.head() or "", "a") is None


# -- the remote's HEAD ------------------------------------------------------------------


def test_the_embedded_remote_names_main(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit({"x": b"1"}, "x", ME)
    repo.push()
    head, heads, _ = remote_state(MetadataRepo.embedded_remote_path(tmp_path / "a"))
    assert head == b"refs/heads/main" and list(heads) == [b"main"]


@pytest.mark.parametrize("how", ["push", "commit_and_push"])
def test_into_a_remote_whose_head_is_master_datom_pushes_master(tmp_path: Path, how: str) -> None:
    bare = make_bare(tmp_path / "remote.git", branch="master")
    repo = MetadataRepo.init(tmp_path / "a", bare)
    if how == "push":
        repo.commit({"x": b"1"}, "x", ME)
        repo.push()
    else:
        repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    head, heads, _ = remote_state(bare)
    assert head == b"refs/heads/master" and list(heads) == [b"master"]
    assert repo.branch == "master" and not repo.has_unpushed_commits()
    other = MetadataRepo.clone(bare, tmp_path / "b")  # what R's datom_clone sees
    assert other.branch == "master" and other.read("x") == b"1"
    other.commit_and_push(lambda tree: {"y": b"2"}, "y", ME)
    assert list(remote_state(bare)[1]) == [b"master"]


def test_a_clone_of_an_empty_master_remote_follows_its_head(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "remote.git", branch="master")
    repo = MetadataRepo.clone(bare, tmp_path / "a")
    assert repo.branch == "master" and repo.head() is None
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    assert list(remote_state(bare)[1]) == [b"master"]


def test_after_a_push_a_local_remote_names_the_pushed_branch(tmp_path: Path) -> None:
    # An older release pushed main into a remote whose HEAD names master (R saw nothing).
    bare = make_bare(tmp_path / "remote.git", branch="master")
    seed = MetadataRepo.init(tmp_path / "seed", bare)
    seed.commit({"x": b"1"}, "x", ME)
    seed.push()
    with closing(Repo(str(bare))) as r:  # move the branch to main, leave HEAD on master
        r.refs[b"refs/heads/main"] = r.refs[b"refs/heads/master"]
        r.refs.remove_if_equals(b"refs/heads/master", None)
    repo = MetadataRepo.clone(bare, tmp_path / "a")
    assert repo.branch == "main" and repo.read("x") == b"1"
    assert remote_state(bare)[0] == b"refs/heads/master"
    repo.commit_and_push(lambda tree: {"y": b"2"}, "y", ME)
    assert remote_state(bare)[0] == b"refs/heads/main"
    assert MetadataRepo.clone(bare, tmp_path / "b").read("y") == b"2"


# -- git's lock files in a clone ----------------------------------------------------------

_GIT_LOCKS = ["refs/heads/main.lock", "refs/remotes/origin/main.lock", "index.lock"]


def _hold_and_die(clone: str, lock: str) -> None:
    """Take the clone's lock, make one of git's lock files as a write does, and be killed."""
    repo = MetadataRepo(clone)
    with repo.lock():
        _lock.note_tenure()  # what a write does before its first git lock
        (Path(clone) / ".git" / lock).write_bytes(b"0" * 40 + b"\n")
        os.kill(os.getpid(), 9)


@pytest.mark.parametrize("lock", _GIT_LOCKS)
@pytest.mark.parametrize("mode", ["0", "1"], ids=["accelerated", "plain"])
def test_a_git_lock_left_by_a_writer_killed_in_the_clone_is_cleared(
    tmp_path: Path, lock: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATOM_PLAIN", mode)  # the index patch, and dulwich's index update
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    child = multiprocessing.get_context("spawn").Process(
        target=_hold_and_die, args=(str(tmp_path / "a"), lock)
    )
    child.start()
    child.join(60)
    assert child.exitcode == -9
    planted = tmp_path / "a" / ".git" / lock
    assert planted.exists()
    assert repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME) is not None
    assert not planted.exists()
    assert repo.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME) is not None


@pytest.mark.parametrize("lock", _GIT_LOCKS)
def test_a_git_lock_no_datom_writer_left_is_never_removed(
    tmp_path: Path, lock: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock git holds (or a git that crashed left) is git's: waited for, then named in
    git's words, the file left alone: the write is refused, or (a lock met once the remote
    recorded the commit) recorded with the clone left behind; once the file is gone, the
    clone catches up and writes again."""
    monkeypatch.setattr(_gitlocks, "GIT_LOCK_WAIT", 0.3)
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    planted = tmp_path / "a" / ".git" / lock
    planted.write_bytes(b"git's\n")
    said = f"lock file {planted} stayed in the way.*rm {planted}"
    try:
        repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME)
    except GitError as e:
        assert re.search(said, str(e)), e
    else:  # met once the remote recorded the commit: the clone follows it later
        assert any(re.search(said, r.getMessage()) for r in caplog.records)
    assert planted.read_bytes() == b"git's\n"
    planted.unlink()
    assert repo.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME) is not None
    assert repo.read("x") == b"3"
    git(tmp_path / "a", "fsck", "--strict")


def test_a_git_lock_made_long_after_a_killed_writer_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A datom writer killed ten minutes ago; since then a colleague's ``git commit`` waits
    on its editor, holding ``index.lock``: the next write does not take it for the killed
    writer's (it removed it, as made since that writer's tenure began)."""
    monkeypatch.setattr(_gitlocks, "GIT_LOCK_WAIT", 0.3)
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    tenure = tmp_path / "a" / ".git" / "datom.lock"
    tenure.write_bytes(b"H 4242".ljust(24))
    planted = tmp_path / "a" / ".git" / "index.lock"
    planted.write_bytes(b"git's\n")
    now = time.time()
    os.utime(tenure, (now - 600, now - 600))
    os.utime(planted, (now - 60, now - 60))
    try:
        repo.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME)
    except GitError as e:
        assert f"rm {planted}" in str(e), e
    assert planted.read_bytes() == b"git's\n"
    assert tenure.read_bytes()[:1] == b"-"  # the killed writer's record is dealt with
    planted.unlink()
    assert repo.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME) is not None


@needs_git
def test_writes_beside_git_status_and_fetch_in_the_clone_wait_for_their_locks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An editor's git integration refreshes the index every few seconds (``git status``
    takes ``index.lock``), and ``git fetch`` moves ``origin/main``: datom waits for their
    locks and removes none of them (it removed ``index.lock`` in 35 of 200 writes beside
    a ``git status`` loop)."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"0"}, "seed", ME)
    loops = [(tmp_path / "a", ["status"]), (tmp_path / "a", ["fetch", "-q", "origin"])]
    failed = write_beside_git({"a": repo}, 60, loops)
    assert failed == []
    removed = [
        r for r in caplog.records if "removed" in r.getMessage() and ".lock" in r.getMessage()
    ]
    assert removed == []
    git(tmp_path / "a", "fsck", "--strict")
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    assert len(repo.log()) == 61


# -- compaction and the commit cache ----------------------------------------------------


def test_compaction_keeps_every_commit_readable(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    shas = [
        repo.commit_and_push(lambda tree, i=i: {f"t{i % 7}/m": str(i).encode()}, f"c{i}", ME)
        for i in range(maint.CLONE_CHECK_EVERY * 2 + 5)
    ]
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    for path in (tmp_path / "a" / ".git", bare):
        with closing(Repo(str(path))) as r:
            maint.compact(r)
            assert len(r.object_store.packs) <= maint.PACK_BUDGET
            assert r.object_store.count_loose_objects() <= maint.LOOSE_BUDGET
    for i, sha in enumerate(shas):
        assert sha is not None and repo.read_at(sha, f"t{i % 7}/m") == str(i).encode()
    fresh = MetadataRepo.clone(bare, tmp_path / "b")
    assert [c.id for c in fresh.log()] == list(reversed(shas))


two_clones = test_git_roundtrips.two_clones  # a seeded clone and a second one, over HTTP


def test_a_writer_losing_race_after_race_keeps_its_clone_compacted(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each try's look fetches what a colleague pushed meanwhile, a pack: compacted between
    tries, not only after a push (a writer losing beside a push loop gathered 670, each
    fetch slower than the last, so it lost the more)."""
    _server, colleague, mine = two_clones
    monkeypatch.setenv("DATOM_PLAIN", "0")  # the plain path merges no packs (_maintenance)
    remote = mine._remote()  # type: ignore[attr-defined]
    real_push, lost = remote.push, [0]

    def push_after_a_colleague(*args: Any, **kwargs: Any) -> None:
        if lost[0] < 3 * maint.PACK_BUDGET:  # the colleague's push lands first
            lost[0] += 1
            colleague.commit_and_push(lambda tree: {f"c{lost[0]}": b"1"}, "theirs", ME)
        real_push(*args, **kwargs)

    monkeypatch.setattr(remote, "push", push_after_a_colleague)
    monkeypatch.setattr("datom_core._git._backoff._CAP", 0.001)
    assert mine.commit_and_push(lambda tree: {"y": b"mine"}, "mine", ME) is not None
    assert lost[0] == 3 * maint.PACK_BUDGET
    packs = list((mine.path / ".git" / "objects" / "pack").glob("*.pack"))
    assert len(packs) <= maint.PACK_BUDGET + 1
    assert mine.read("y") == b"mine" and mine.read("c3") == b"1"


def test_last_commit_touching_agrees_with_the_log(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(30):
        repo.commit({f"t{i % 4}/m": str(i).encode(), "shared": str(i // 3).encode()}, f"c{i}", ME)
        if i % 7 == 0:
            repo.push()
    for path in ("t0/m", "t1/m", "t3/m", "shared"):
        assert repo.last_commit_touching(path) == repo.log(path)[0].id
    assert repo.last_commit_touching("missing") is None
    repo.commit({"t2/m": b"new"}, "new", ME)  # extends the cached map incrementally
    assert repo.last_commit_touching("t2/m") == repo.head()
    assert MetadataRepo.open(tmp_path / "a").last_commit_touching("t1/m") == repo.log("t1/m")[0].id


def test_over_https_datom_pushes_the_branch_the_remote_head_names(
    git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    # HEAD of an *empty* repository is not advertised by the smart protocol (v0): the
    # remote here already holds master, as one made by R or a hosting service does.
    bare = git_http_server.create_bare("proj", branch="master")
    seed = MetadataRepo.init(tmp_path / "seed", bare)
    seed.commit_and_push(lambda tree: {"seed": b"0"}, "seed", ME)
    url, creds = git_http_server.url_for("proj"), GitCredentials(git_http_server.token)
    repo = MetadataRepo.init(tmp_path / "a", url, credentials=creds)
    assert repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME) is not None
    head, heads, _ = remote_state(bare)
    assert head == b"refs/heads/master" and list(heads) == [b"master"]
    assert repo.branch == "master" and repo.read("seed") == b"0"
    other = MetadataRepo.clone(url, tmp_path / "b", credentials=creds)
    assert other.branch == "master" and other.read("x") == b"1"


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_a_remote_written_by_short_lived_processes_is_compacted(tmp_path: Path) -> None:
    """Every commit comes from a fresh handle, as each step of Dagster's multi-process
    executor or each CLI call opens one: no handle reaches its own count of pushes, yet
    the remote is checked as often (by the commits' ids) and stays within its budget."""
    MetadataRepo.init(tmp_path / "a", None).close()
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    commits = 300  # four loose objects each: 1,200 loose without a check
    for i in range(commits):
        repo = MetadataRepo.open(tmp_path / "a")
        repo.commit_and_push(lambda tree, i=i: {f"t{i % 20}/m": str(i).encode()}, f"c{i}", ME)
        repo.close()
    with closing(Repo(str(bare))) as r:
        loose, packs = r.object_store.count_loose_objects(), len(r.object_store.packs)
    # A check every 8 commits on average: 120 commits in a row without one has odds 1e-7.
    assert loose <= maint.LOOSE_BUDGET + 4 * 120
    assert 1 <= packs <= maint.PACK_BUDGET
    fresh = MetadataRepo.clone(bare, tmp_path / "b")
    assert len(fresh.log()) == commits
    assert fresh.read("t7/m") == b"287"


def test_a_clone_of_an_https_remote_written_by_short_lived_processes_is_compacted(
    git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    """The same through the smart-HTTP server: the clone keeps the objects it pushes (and
    the packs it fetches), and fresh handles keep it within its budget too."""
    git_http_server.create_bare("proj")
    url, creds = git_http_server.url_for("proj"), GitCredentials(git_http_server.token)
    MetadataRepo.clone(url, tmp_path / "a", credentials=creds).close()
    commits = 260  # four loose objects each in the clone: 1,040 without a check
    for i in range(commits):
        repo = MetadataRepo.open(tmp_path / "a", credentials=creds)
        repo.commit_and_push(lambda tree, i=i: {f"t{i % 9}/m": str(i).encode()}, f"c{i}", ME)
        repo.close()
    with closing(Repo(str(tmp_path / "a"))) as r:
        loose, packs = r.object_store.count_loose_objects(), len(r.object_store.packs)
    # A check every 16 commits on average: 150 commits in a row without one has odds 6e-5.
    assert loose <= maint.LOOSE_BUDGET + 4 * 150
    assert 1 <= packs <= maint.PACK_BUDGET


def _turn_is_free(bare: Path) -> bool:
    """Whether nobody (this process included) holds the remote's writers' turn: a fresh
    descriptor's ``flock`` conflicts with every other one."""
    fd = os.open(bare / "datom-writers.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_a_push_compacts_the_remote_after_the_writers_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other writers push while one compacts: the turn is free whenever it does."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 8)
    turn_free: list[bool] = []
    real = maint.compact_remote

    def watched(*args: Any, **kwargs: Any) -> bool:
        turn_free.append(_turn_is_free(bare))
        return real(*args, **kwargs)

    monkeypatch.setattr(maint, "compact_remote", watched)
    for i in range(3 * maint.REMOTE_CHECK_EVERY):
        repo.commit_and_push(lambda tree, i=i: {f"t{i % 3}/m": str(i).encode()}, f"c{i}", ME)
    assert turn_free and all(turn_free)
    with closing(Repo(str(bare))) as r:
        assert r.object_store.count_loose_objects() <= 8 + 4 * maint.REMOTE_CHECK_EVERY
    assert len(MetadataRepo.clone(bare, tmp_path / "b").log()) == 3 * maint.REMOTE_CHECK_EVERY


def _remote_of_six_pushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> Path:
    """A local remote six pushes old, with a loose-object budget it is over."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    for i in range(6):
        repo.commit_and_push(lambda tree, i=i: {f"t{i}/m": str(i).encode()}, f"c{i}", ME)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", budget)
    return MetadataRepo.embedded_remote_path(tmp_path / "a")


def _objects(bare: Path) -> dict[bytes, tuple[int, bytes]]:
    with closing(Repo(str(bare))) as r:
        return {sha: r.object_store.get_raw(sha) for sha in r.object_store}


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
@needs_git
def test_a_remote_compaction_deletes_only_when_nobody_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pack is written while a reader holds the remote; the loose objects it replaces
    stay until no reader does (the compaction then reports it did not finish), and every
    object reads the same throughout."""
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=4)
    before = _objects(bare)
    reader, compactor = maint.RemoteAccess(bare), maint.RemoteAccess(bare)
    with closing(Repo(str(bare))) as r:
        loose = r.object_store.count_loose_objects()
        with reader.shared():
            assert not maint.compact_remote(bare, lambda: r, compactor, wait=0.05)
            assert r.object_store.count_loose_objects() == loose  # nothing deleted
            assert len(list((bare / "objects" / "pack").glob("*.idx"))) == 1
            assert _objects(bare) == before
        assert maint.compact_remote(bare, lambda: r, compactor, wait=0.05)
        assert r.object_store.count_loose_objects() == 0
    assert _objects(bare) == before
    reader.close()
    compactor.close()
    git(bare, "fsck", "--strict", "--no-dangling")


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_one_process_at_a_time_compacts_a_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=4)
    access = maint.RemoteAccess(bare)
    fd = os.open(bare / "datom-compact.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process compacting it
        with closing(Repo(str(bare))) as r:
            loose = r.object_store.count_loose_objects()
            assert not maint.compact_remote(bare, lambda: r, access, wait=0.05)
            assert r.object_store.count_loose_objects() == loose
            assert not list((bare / "objects" / "pack").glob("*.pack"))
    finally:
        os.close(fd)
        access.close()


def test_a_fresh_handles_write_takes_the_writers_turn_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fresh process (a Dagster step, a CLI call) checks once that the remote's HEAD
    names its branch: a look, not another turn the other writers queue for."""
    MetadataRepo.init(tmp_path / "a", None).commit_and_push(lambda tree: {"x": b"0"}, "x", ME)
    taken: list[str] = []
    real = _lock.RepoLock.__enter__

    def counted(self: _lock.RepoLock) -> _lock.RepoLock:
        if self.lock_path.name == "datom-writers.lock" and self._key not in _lock._holds.held:
            taken.append(self._key)
        return real(self)

    monkeypatch.setattr(_lock.RepoLock, "__enter__", counted)
    for i in range(3):
        fresh = MetadataRepo.open(tmp_path / "a")
        fresh.commit_and_push(lambda tree, i=i: {"x": str(i).encode()}, f"c{i}", ME)
        fresh.close()
    assert len(taken) == 3


def test_a_compaction_that_fails_leaves_the_push_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk while packing the remote: the write it follows is recorded and
    returns, the failure is a warning, and the next check tries again."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 2)
    calls: list[int] = []

    def full(*args: Any, **kwargs: Any) -> bool:
        calls.append(1)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(maint, "compact_remote", full)
    shas = [
        repo.commit_and_push(lambda tree, i=i: {f"t{i}/m": b"x"}, f"c{i}", ME)
        for i in range(2 * maint.REMOTE_CHECK_EVERY + 1)
    ]
    assert len(calls) >= 2  # tried again after the first failure
    assert "could not compact" in caplog.text
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    assert [c.id for c in MetadataRepo.clone(bare, tmp_path / "b").log()] == shas[::-1]


def test_a_loose_object_deleted_meanwhile_does_not_stop_a_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=2)
    with closing(Repo(str(bare))) as r:
        store = r.object_store
        plan = _compact._prepare(store, (maint.LOOSE_BUDGET, maint.PACK_BUDGET))
        gone = plan.loose[0]
        os.remove(store._get_shafile_path(gone))  # as a compactor of an older datom would
        assert _compact._finish(store, plan) == (len(plan.loose), 0)
        assert store.count_loose_objects() == 0
        assert store.get_raw(gone)[0] in (1, 2, 3)  # still there, in the pack


@pytest.mark.usefixtures("accelerated")  # the path history's look near the tip
def test_a_fresh_handle_finds_a_recent_change_without_indexing_the_history(
    tmp_path: Path,
) -> None:
    """What ``last_commit_touching`` answers from the last commits equals the index's
    answer, for files changed recently or long ago, a folder, and a file never there."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"old/m": b"0", "gone/m": b"0"}, "seed", ME)
    for i in range(80):  # past the look back: "old/m" is only found by the index
        repo.commit_and_push(lambda tree, i=i: {f"t{i % 5}/m": str(i).encode()}, f"c{i}", ME)
    repo.commit({"gone/m": b"1"}, "edit", ME)
    made = MetadataRepo.open(tmp_path / "a")
    indexed = MetadataRepo.open(tmp_path / "a")
    assert indexed.last_commit_touching("t0/m") is not None  # builds its index
    for path in ("t0/m", "t4/m", "gone/m", "old/m", "never/m", "t1"):
        fresh = MetadataRepo.open(tmp_path / "a")
        assert fresh.last_commit_touching(path) == indexed.last_commit_touching(path), path
        built = fresh._history.head is not None
        assert built == (path in ("old/m", "never/m", "t1")), path  # recent ones: no index
    assert made.last_commit_touching("gone/m") == repo.head()


def _packs_of(bare: Path, n: int) -> None:
    """``n`` more packs in ``bare``, each holding a slice of its objects."""
    with closing(Repo(str(bare))) as r:
        shas = sorted(r.object_store)
        for i in range(n):
            write_objects(r.object_store, [r.object_store[s] for s in shas[i::n]])


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
def test_a_compaction_after_another_processes_merge_skips_the_packs_it_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handle that listed the remote's packs before another process merged them away
    (its cached packs are gone) compacts what is there now: it must not fail on a pack
    it never opened. Such a failure had escaped the write it followed (after its push)."""
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=10_000)
    monkeypatch.setattr(maint, "PACK_BUDGET", 1)
    _packs_of(bare, 3)
    before = _objects(bare)
    later, first = maint.RemoteAccess(bare), maint.RemoteAccess(bare)
    with closing(Repo(str(bare))) as stale, closing(Repo(str(bare))) as fresh:
        assert len(stale.object_store.packs) == 3  # listed, none of them opened
        assert maint.compact_remote(bare, lambda: fresh, first, wait=0.5)
        _packs_of(bare, 2)
        assert maint.compact_remote(bare, lambda: stale, later, wait=0.5)
        assert len(list((bare / "objects" / "pack").glob("*.pack"))) == 1
    assert _objects(bare) == before
    later.close()
    first.close()


def test_the_remotes_shared_hold_lasts_while_any_thread_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads of a process read the remote at once (threads writing through one
    connection; datom's own write path reads it from the writing thread only): the
    process's shared hold (one descriptor) ends when the last of them is done, never when
    the first is. The first's release had dropped it for the other, and left the count
    negative, so no later read of the process held it at all."""
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=10_000)
    access = maint.RemoteAccess(bare)

    def compactor_can_delete() -> bool:
        fd = os.open(bare / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the compaction deletes
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    entered, release = threading.Event(), threading.Event()

    def other_reader() -> None:
        with access.shared():
            entered.set()
            release.wait(5)

    for _ in range(2):  # the second round: the count is back where it started
        thread = threading.Thread(target=other_reader)
        with access.shared():
            thread.start()
            assert entered.wait(5)
        assert not compactor_can_delete()  # the other thread still reads
        release.set()
        thread.join()
        assert compactor_can_delete()
        with access.shared():
            assert not compactor_can_delete()
        entered.clear()
        release.clear()
    access.close()


def _read_in_child(access: maint.RemoteAccess) -> None:
    with access.shared():
        pass


def test_a_child_forked_while_a_thread_counts_holders_reads_the_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count of the process's holders is guarded by a thread lock: a child forked
    while another thread held it starts its own count instead of waiting on that lock."""
    bare = _remote_of_six_pushes(tmp_path, monkeypatch, budget=10_000)
    access = maint.RemoteAccess(bare)
    with access.shared():
        pass  # the parent has used it
    with access._count:  # a thread of the parent in the middle of counting
        child = multiprocessing.get_context("fork").Process(target=_read_in_child, args=(access,))
        child.start()
        child.join(timeout=10)
        hung = child.is_alive()
        if hung:
            child.kill()
    assert not hung and child.exitcode == 0
    access.close()


def test_a_clone_compaction_meeting_a_vanished_pack_leaves_the_push_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A pack deleted under the clone's compaction (a ``git gc`` run by hand in the clone)
    is dulwich's ``PackFileDisappeared``: the write it follows is recorded and returns,
    the failure is a warning, and the next write compacts again."""
    repo = MetadataRepo.init(tmp_path / "a", None)

    def vanished(r: Repo) -> tuple[int, int]:
        raise PackFileDisappeared(object())

    monkeypatch.setattr(maint, "may_need_compaction", lambda r, loose=0: True)
    monkeypatch.setattr(maint, "compact", vanished)
    shas = [
        repo.commit_and_push(lambda tree, i=i: {f"t{i}/m": b"x"}, f"c{i}", ME)
        for i in range(maint.CLONE_CHECK_EVERY + 1)
    ]
    assert "could not follow" in caplog.text
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    assert [c.id for c in MetadataRepo.clone(bare, tmp_path / "b").log()] == shas[::-1]
