"""The git layer against real repositories: local bare repos, file:// URLs and a real
smart-HTTP server on 127.0.0.1 (tests/gitserver.py). No mocks."""

from __future__ import annotations

import multiprocessing
import os
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

from datom_core._errors import GitError, InvalidNameError, PushRejectedError
from datom_core._git import Author, CommitInfo, GitCredentials, MetadataRepo
from datom_core._git import _transport as transport
from datom_core._git._refstatus import check_ref_status
from datom_core._git._remote import normalize_remote, scrub
from tests.gitbackend import GitBackendServer
from tests.gitserver import GitHTTPServer, serving

ME = Author("Ada Lovelace", "ada@example.org")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "DATOM_GIT_TOKEN",
        "DATOM_GIT_USERNAME",
        "DATOM_AUTHOR_NAME",
        "DATOM_AUTHOR_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


def make_bare(path: Path) -> Path:
    with closing(Repo.init_bare(str(path), mkdir=True, default_branch=b"main")):
        pass
    return path


def remote_head(bare: Path, branch: str = "main") -> str | None:
    with closing(Repo(str(bare))) as r:
        try:
            return r.refs[f"refs/heads/{branch}".encode()].decode()
        except KeyError:
            return None


def full_error_text(exc: BaseException) -> str:
    """The whole traceback, causes included, as a user would see it."""
    return "".join(traceback.format_exception(exc))


def all_bytes_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


@pytest.fixture
def git_http_server(any_git_http_server: GitHTTPServer) -> GitHTTPServer:
    """Every HTTP test here runs on dulwich's server and on git's own ``git http-backend``
    (its receive-pack words refusals and lost races its own way)."""
    return any_git_http_server


@pytest.fixture(params=["path", "file-url", "http", "git-http-backend"])
def remote(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """An empty remote of each supported kind (HTTP with the token in DATOM_GIT_TOKEN), on
    dulwich's server and on git's own http-backend."""
    if request.param in ("http", "git-http-backend"):
        kind = GitHTTPServer if request.param == "http" else GitBackendServer
        (tmp_path / "served").mkdir()
        for server in serving(kind(tmp_path / "served", secrets.token_urlsafe(24))):
            server.create_bare("proj")
            monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
            yield server.url_for("proj")
        return
    bare = make_bare(tmp_path / "remote.git")
    yield str(bare) if request.param == "path" else bare.as_uri()


@pytest.fixture
def http_repo(git_http_server: GitHTTPServer, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(URL, bare path) of an HTTP repository holding one pushed commit."""
    bare = git_http_server.create_bare("proj")
    url = git_http_server.url_for("proj")
    seed = MetadataRepo.clone(
        url, tmp_path / "seed", credentials=GitCredentials(git_http_server.token)
    )
    seed.commit({"t/metadata.json": b"{}"}, "seed", ME)
    seed.push()
    yield url, bare


# -- init, clone, commit, push --------------------------------------------------------


def test_init_with_embedded_default_pushes_to_the_sibling_bare_repo(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "proj", None)
    bare = tmp_path / "proj.remote.git"
    assert MetadataRepo.embedded_remote_path(tmp_path / "proj") == bare
    assert repo.remote_url == str(bare)
    assert repo.branch == "main" and repo.head() is None
    assert remote_head(bare) is None

    sha = repo.commit({".datom/project.yaml": b"project_name: P\n"}, "Create project", ME)
    assert sha is not None and repo.head() == sha
    assert repo.has_unpushed_commits()
    repo.push()
    assert remote_head(bare) == sha
    assert not repo.has_unpushed_commits()


def test_clone_commit_push_round_trip_on_every_remote_kind(remote: str, tmp_path: Path) -> None:
    a = MetadataRepo.clone(remote, tmp_path / "a")
    assert a.head() is None and a.branch == "main"  # an empty remote clones fine
    first = a.commit({"dm/metadata.json": b'{"v": 1}\n'}, "Update dm", ME)
    a.push()

    b = MetadataRepo.clone(remote, tmp_path / "b")
    assert b.head() == first
    assert b.read("dm/metadata.json") == b'{"v": 1}\n'
    assert b.remote_url == remote
    second = b.commit({"dm/metadata.json": b'{"v": 2}\n'}, "Update dm again", ME)
    b.push()
    a.pull()
    assert a.head() == second
    assert a.read("dm/metadata.json") == b'{"v": 2}\n'


def test_a_clone_of_an_empty_remote_catches_up_by_pull(tmp_path: Path) -> None:
    writer = MetadataRepo.init(tmp_path / "w", None)
    early = MetadataRepo.clone(writer.remote_url, tmp_path / "early")
    assert early.head() is None and not early.has_unpushed_commits()
    early.pull()  # still empty: nothing to do
    sha = writer.commit({"dm/metadata.json": b"1"}, "first", ME)
    writer.push()
    early.pull()
    assert early.head() == sha and early.read("dm/metadata.json") == b"1"
    assert early.commit({}, "nothing") is None


def test_bytes_are_kept_exactly(tmp_path: Path) -> None:
    files = {
        "crlf.json": b'{"a": 1}\r\n{"b": 2}\r\n',
        "no-final-newline.txt": b"abc",
        "latin1.txt": "caf\u00e9\n".encode("latin-1"),
        "bin/all-bytes": bytes(range(256)),
        "empty": b"",
    }
    repo = MetadataRepo.init(tmp_path / "a", None)
    sha = repo.commit(files, "bytes", ME)
    assert sha is not None
    repo.push()
    clone = MetadataRepo.clone(repo.remote_url, tmp_path / "b")
    for relpath, data in files.items():
        assert repo.read(relpath) == data
        assert (tmp_path / "a" / relpath).read_bytes() == data
        assert repo.read_at(sha, relpath) == data
        assert clone.read(relpath) == data


def test_commit_without_changes_creates_nothing(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    sha = repo.commit({"t/metadata.json": b"1", "t/version_history.json": b"[]"}, "one", ME)
    assert repo.commit({"t/metadata.json": b"1"}, "again", ME) is None
    assert repo.head() == sha
    assert [c.id for c in repo.log()] == [sha]


def test_commit_stages_exactly_the_given_files(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    first = repo.commit({"a.json": b"a1", "b.json": b"b1"}, "first", ME)
    (tmp_path / "a" / "stray.txt").write_bytes(b"not for git")
    (tmp_path / "a" / "b.json").write_bytes(b"edited but not given")
    second = repo.commit({"a.json": b"a2"}, "second", ME)
    assert second is not None and first is not None
    assert repo.read_at(second, "a.json") == b"a2"
    assert repo.read_at(second, "b.json") == b"b1"  # carried over, not the edit
    assert repo.read_at(second, "stray.txt") is None
    assert repo.read_at(first, "a.json") == b"a1"  # history untouched
    assert repo.read("stray.txt") is None  # git's copy: none
    assert (tmp_path / "a" / "stray.txt").read_bytes() == b"not for git"  # left in place


def test_log_is_newest_first_filtered_and_utc(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    assert repo.log() == []
    before = datetime.now(UTC).replace(microsecond=0)
    c1 = repo.commit({"dm/metadata.json": b"1"}, "Update dm", ME)
    c2 = repo.commit({"ae/metadata.json": b"1"}, "Update ae\n\nwith a body", Author("Bob", "b@x"))
    c3 = repo.commit({"dm/metadata.json": b"2"}, "Update dm 2", ME)
    log = repo.log()
    assert [c.id for c in log] == [c3, c2, c1]
    assert [c.id for c in repo.log("dm/metadata.json")] == [c3, c1]
    assert [c.id for c in repo.log("ae/metadata.json")] == [c2]
    assert [c.id for c in repo.log(max_entries=2)] == [c3, c2]
    assert repo.log("zz/metadata.json") == []
    entry = log[1]
    assert isinstance(entry, CommitInfo)
    assert entry.message == "Update ae\n\nwith a body"
    assert entry.author == Author("Bob", "b@x")
    assert entry.timestamp.tzinfo == UTC
    assert before <= entry.timestamp <= datetime.now(UTC)


def test_read_at_rejects_unknown_commits(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    sha = repo.commit({"x": b"1"}, "x", ME)
    assert sha is not None
    assert repo.read_at(sha, "missing") is None
    for bad in ("0" * 40, "xyz", sha[:12], "HEAD"):
        with pytest.raises(GitError, match="full 40-hex"):
            repo.read_at(bad, "x")


@pytest.mark.parametrize(
    "relpath",
    ["", "/etc/passwd", "../x", "a/../../x", ".git/config", "a//b", "a\\b", "dir/", "a/./b"]
    + ["a/.GIT/config", ".Git/x", "x\0y"],
)
def test_paths_outside_the_working_tree_are_refused(tmp_path: Path, relpath: str) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    with pytest.raises(InvalidNameError):
        repo.commit({relpath: b"x"}, "m", ME)
    with pytest.raises(InvalidNameError):
        repo.read(relpath)
    assert repo.head() is None


def test_open_refuses_what_is_not_a_clone(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository"):
        MetadataRepo.open(tmp_path / "nothing")
    with pytest.raises(GitError, match="bare"):
        MetadataRepo.open(make_bare(tmp_path / "bare.git"))
    MetadataRepo.init(tmp_path / "a", None)
    with pytest.raises(GitError, match="already a git repository"):
        MetadataRepo.init(tmp_path / "a", None)
    assert MetadataRepo.open(tmp_path / "a").path == tmp_path / "a"


def test_init_refuses_an_embedded_remote_that_already_holds_a_project(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit({"x": b"1"}, "x", ME)
    repo.push()
    (tmp_path / "b").mkdir()
    os.rename(tmp_path / "a.remote.git", tmp_path / "b.remote.git")
    with pytest.raises(GitError, match="clone it instead"):
        MetadataRepo.init(tmp_path / "b", None)


def test_clone_refuses_a_non_empty_target_and_cleans_up_after_failure(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(GitError, match="not an empty directory"):
        MetadataRepo.clone(str(make_bare(tmp_path / "r.git")), tmp_path / "full")
    with pytest.raises(GitError):
        MetadataRepo.clone(str(tmp_path / "missing.git"), tmp_path / "c")
    assert not (tmp_path / "c").exists()


# -- concurrent writers ---------------------------------------------------------------


def test_second_push_is_rejected_then_succeeds_after_fetch_and_reset(
    remote: str, tmp_path: Path
) -> None:
    seed = MetadataRepo.clone(remote, tmp_path / "seed")
    base = seed.commit({"dm/metadata.json": b"v0"}, "seed", ME)
    seed.push()
    a = MetadataRepo.clone(remote, tmp_path / "a")
    b = MetadataRepo.clone(remote, tmp_path / "b")
    assert a.head() == b.head() == base

    a_sha = a.commit({"dm/metadata.json": b"from a"}, "a writes dm", ME)
    b_sha = b.commit({"ae/metadata.json": b"from b"}, "b writes ae", ME)
    a.push()
    with pytest.raises(PushRejectedError, match="fetch_and_reset"):
        b.push()
    assert b.head() == b_sha  # a rejected push changes nothing locally

    assert b.fetch_and_reset() == a_sha
    assert b.head() == a_sha and b.read("ae/metadata.json") is None
    assert b.read("dm/metadata.json") == b"from a"
    assert not b.has_unpushed_commits()
    b_again = b.commit({"ae/metadata.json": b"from b"}, "b writes ae", ME)
    b.push()

    a.pull()
    assert a.head() == b_again
    assert [c.message for c in a.log()] == ["b writes ae", "a writes dm", "seed"]


def test_a_push_the_server_acknowledged_but_did_not_apply_is_rejected(
    http_repo: tuple[str, Path], git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    # A pre-receive hook moves main under the push, as a concurrent writer would. The
    # dulwich server then still answers "ok": the client must notice on its own; git's
    # answers "failed to update ref" (its compare-and-swap lost): a race too.
    url, bare = http_repo
    git_http_server.acknowledge_lost_swaps()
    creds = GitCredentials(git_http_server.token)
    other = MetadataRepo.clone(url, tmp_path / "other", credentials=creds)
    other.commit({"x": b"other"}, "other", ME)
    with closing(Repo(str(other.path))) as r:
        other_sha = r.refs[b"refs/heads/main"]
    with closing(Repo(str(bare))) as r:
        r.object_store.add_objects([(r2, None) for r2 in _all_objects(other.path)])
        r.refs[b"refs/heads/other"] = other_sha
    git_http_server.add_pre_receive_hook(
        "proj",
        '#!/bin/sh\ncat >/dev/null\ncp "$GIT_DIR/refs/heads/other" "$GIT_DIR/refs/heads/main"\n',
    )
    mine = MetadataRepo.clone(url, tmp_path / "mine", credentials=creds)
    mine.commit({"y": b"mine"}, "mine", ME)
    with pytest.raises(PushRejectedError, match="lost a race|another writer moved it"):
        mine.push()
    assert remote_head(bare) == other_sha.decode()
    assert mine.has_unpushed_commits()


def _all_objects(clone: Path) -> list[object]:
    with closing(Repo(str(clone))) as r:
        return [r.object_store[sha] for sha in r.object_store]


def test_fetch_and_reset_on_an_empty_remote_empties_the_clone(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit({"dm/metadata.json": b"1"}, "never pushed", ME)
    (tmp_path / "a" / "input_files").mkdir()
    (tmp_path / "a" / "input_files" / "dm.csv").write_bytes(b"a,b\n")
    assert repo.fetch_and_reset() is None
    assert repo.head() is None and repo.log() == []
    assert repo.read("dm/metadata.json") is None
    assert not (tmp_path / "a" / "dm" / "metadata.json").exists()
    assert (tmp_path / "a" / "input_files" / "dm.csv").read_bytes() == b"a,b\n"  # untracked
    assert repo.commit({"dm/metadata.json": b"2"}, "again", ME) is not None
    repo.push()


def test_pull_fast_forwards_only(tmp_path: Path) -> None:
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit({"x": b"1"}, "one", ME)
    a.push()
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    c = MetadataRepo.clone(a.remote_url, tmp_path / "c")

    ahead = b.commit({"y": b"b"}, "b only", ME)
    b.pull()  # ahead of origin: nothing to do
    assert b.head() == ahead

    a.commit({"x": b"2"}, "two", ME)
    a.push()
    with pytest.raises(GitError, match="diverged"):
        b.pull()
    assert b.head() == ahead and b.read("x") == b"1"

    (tmp_path / "c" / "x").write_bytes(b"uncommitted edit")
    with pytest.raises(GitError, match="uncommitted changes"):
        c.pull()
    assert (tmp_path / "c" / "x").read_bytes() == b"uncommitted edit"  # kept
    (tmp_path / "c" / "x").write_bytes(b"1")
    c.pull()
    assert c.head() == a.head() and c.read("x") == b"2"


# -- the cross-process lock -----------------------------------------------------------


def _append_under_lock(path: str, worker: int, rounds: int) -> None:
    repo = MetadataRepo.open(path)
    journal = Path(path) / "journal.txt"
    for i in range(rounds):
        with repo.lock(timeout=60):
            text = journal.read_text()
            time.sleep(0.002)  # widen the read-modify-write window
            journal.write_text(text + f"{worker}:{i}\n")


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_lock_serialises_processes(tmp_path: Path, start_method: str) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    (repo.path / "journal.txt").write_text("")
    ctx = multiprocessing.get_context(start_method)
    rounds = 25
    procs = [
        ctx.Process(target=_append_under_lock, args=(str(repo.path), w, rounds)) for w in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    lines = (repo.path / "journal.txt").read_text().splitlines()
    assert sorted(lines) == sorted(f"{w}:{i}" for w in range(4) for i in range(rounds))


def _try_lock(path: str) -> None:
    try:
        with MetadataRepo.open(path).lock(timeout=0.2):
            os._exit(1)  # got a lock its parent holds
    except GitError:
        os._exit(0)


def test_lock_times_out_is_reentrant_and_not_inherited_by_fork(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    outcome: list[str] = []

    def contend() -> None:
        try:
            with repo.lock(timeout=0.2):
                outcome.append("acquired")
        except GitError as e:
            outcome.append(str(e))

    with repo.lock():
        with repo.lock(timeout=0):  # same thread: re-entrant, no self-deadlock
            pass
        child = multiprocessing.get_context("fork").Process(
            target=_try_lock, args=(str(repo.path),)
        )
        child.start()
        child.join(timeout=60)
        assert child.exitcode == 0
        thread = threading.Thread(target=contend)
        thread.start()
        thread.join()
        assert len(outcome) == 1 and "Timed out" in outcome[0]  # still held after the child
    thread = threading.Thread(target=contend)
    thread.start()
    thread.join()
    assert outcome[-1] == "acquired"


# -- tokens and failures --------------------------------------------------------------


def test_https_token_from_env_is_used_and_never_stored(
    git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_http_server.create_bare("proj")
    url = git_http_server.url_for("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    monkeypatch.setenv("DATOM_GIT_USERNAME", "robot")
    repo = MetadataRepo.clone(url, tmp_path / "a")
    repo.commit({"x": b"1"}, "x", ME)
    repo.push()
    assert remote_head(git_http_server.root / "proj") == repo.head()
    assert set(git_http_server.usernames) == {"robot"}
    assert git_http_server.token.encode() not in all_bytes_under(tmp_path / "a" / ".git")


def test_token_in_the_url_is_stripped_and_kept_in_memory_only(
    git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    git_http_server.create_bare("proj")
    token = git_http_server.token
    url = f"http://x-access-token:{token}@127.0.0.1:{git_http_server.port}/proj"
    repo = MetadataRepo.clone(url, tmp_path / "a")
    repo.commit({"x": b"1"}, "x", ME)
    repo.push()
    assert repo.remote_url == git_http_server.url_for("proj")
    assert token not in repr(repo.credentials)
    assert token.encode() not in all_bytes_under(tmp_path / "a" / ".git")
    with pytest.raises(GitError, match="DATOM_GIT_TOKEN"):
        MetadataRepo.open(tmp_path / "a").fetch_and_reset()  # nothing was persisted


def test_explicit_credentials_and_a_custom_token_env(
    git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_http_server.create_bare("proj")
    url = git_http_server.url_for("proj")
    creds = GitCredentials(git_http_server.token, username="svc")
    repo = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    repo.commit({"x": b"1"}, "x", ME)
    repo.push()
    monkeypatch.setenv("MY_TOKEN", git_http_server.token)
    other = MetadataRepo.clone(url, tmp_path / "b", token_env="MY_TOKEN")
    assert other.head() == repo.head()
    assert git_http_server.usernames[0] == "svc"


def test_wrong_or_missing_token_fails_clearly_without_leaking(
    http_repo: tuple[str, Path],
    git_http_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, bare = http_repo
    wrong = "wrong-" + git_http_server.token[::-1]
    monkeypatch.setenv("DATOM_GIT_TOKEN", wrong)
    with pytest.raises(GitError) as failed:
        MetadataRepo.clone(url, tmp_path / "a")
    text = full_error_text(failed.value)
    assert "authentication" in str(failed.value).lower() and "DATOM_GIT_TOKEN" in str(failed.value)
    assert wrong not in text and git_http_server.token not in text
    assert not (tmp_path / "a").exists()

    monkeypatch.setenv("DATOM_GIT_TOKEN", git_http_server.token)
    repo = MetadataRepo.clone(url, tmp_path / "a")
    before = repo.commit({"y": b"1"}, "y", ME)
    monkeypatch.setenv("DATOM_GIT_TOKEN", wrong)
    with pytest.raises(GitError) as failed:
        repo.push()
    assert not isinstance(failed.value, PushRejectedError)
    assert "DATOM_GIT_TOKEN" in str(failed.value)
    assert wrong not in full_error_text(failed.value)
    assert repo.head() == before and repo.has_unpushed_commits()

    monkeypatch.delenv("DATOM_GIT_TOKEN")
    with pytest.raises(GitError, match="no token was sent: set DATOM_GIT_TOKEN"):
        repo.push()
    assert remote_head(bare) != before


def test_unreachable_remotes_raise_git_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    for remote in (f"http://127.0.0.1:{port}/proj", str(tmp_path / "missing.git")):
        name = "http" if remote.startswith("http") else "path"
        repo = MetadataRepo.init(tmp_path / name, remote)
        sha = repo.commit({"x": b"1"}, "x", ME)
        with pytest.raises(GitError) as failed:
            repo.push()
        assert not isinstance(failed.value, PushRejectedError)
        assert "Cannot push to" in str(failed.value)
        with pytest.raises(GitError):
            repo.fetch_and_reset()
        assert repo.head() == sha and repo.read("x") == b"1"


@pytest.mark.parametrize("address", ["unknown-host", "closed-port"])
def test_a_remote_out_of_reach_is_named_at_once_not_asked_for_the_fetch_patience(
    tmp_path: Path, address: str
) -> None:
    """A mistyped host or a server that is down: named as such (the host, or the address
    and what the system said), after urllib3's few quick tries, not after the 30 s a
    fetch racing pushes is given; nothing is left where the clone was to be."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    url, named = (
        (
            "https://git.no-such-host.invalid/proj",
            "host name 'git.no-such-host.invalid' is not known",
        )
        if address == "unknown-host"
        else (f"http://127.0.0.1:{port}/proj", f"nothing answers at 127.0.0.1:{port}")
    )
    started = time.monotonic()
    with pytest.raises(GitError, match=named) as failed:
        MetadataRepo.clone(url, tmp_path / "c")
    assert time.monotonic() - started < transport.FETCH_PATIENCE
    assert "nothing was sent" in str(failed.value) and "remote -v" in str(failed.value)
    assert not (tmp_path / "c").exists()


def test_a_remote_that_forbids_pushes_leaves_local_state_unchanged(
    http_repo: tuple[str, Path], git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    url, bare = http_repo
    published = remote_head(bare)
    repo = MetadataRepo.clone(
        url, tmp_path / "a", credentials=GitCredentials(git_http_server.token)
    )
    git_http_server.deny_push("proj")
    sha = repo.commit({"x": b"1"}, "x", ME)
    with pytest.raises(GitError, match="403") as failed:
        repo.push()
    assert not isinstance(failed.value, PushRejectedError)
    assert repo.head() == sha and repo.has_unpushed_commits()
    assert remote_head(bare) == published
    repo.close()  # the error's traceback holds it in a cycle: its packs closed now


# Every wording git's receive-pack (old and new), dulwich's server and hosting services
# give a ref whose compare-and-swap lost to a concurrent push, with what the server said.
_LOST = "error: cannot lock ref 'refs/heads/main': is at 1111 but expected 2222"
_LOCKED = "error: cannot lock ref 'refs/heads/main': Unable to create 'x/main.lock': File exists."
_RACES = [
    ("failed to lock", ""),  # git before 2.2
    ("failed to write", ""),  # git before 2.2; dulwich's server, with the ref moved
    ("failed to update ref", _LOST),  # git 2.2 to 2.49
    ("failed to update ref", _LOCKED),  # a concurrent push held the ref's lock
    ("atomic transaction failed", ""),
    ("atomic push failure", ""),
    ("incorrect old value provided", ""),  # git 2.50 on
    ("reference already exists", ""),  # git 2.50 on: a first push lost to another
    ("reference does not exist", ""),
    ("failed to update refs", _LOST),
    ("non-fast-forward", ""),
    ("fetch first", ""),
    ("stale info", ""),
]


@pytest.mark.parametrize(("status", "said"), _RACES)
def test_every_lost_race_wording_is_a_rejection_to_redo(status: str, said: str) -> None:
    moved = status == "failed to write" or status == "failed to lock"
    with pytest.raises(PushRejectedError, match="another writer moved it"):
        check_ref_status({b"refs/heads/main": status}, "URL", lambda: moved, said)


@pytest.mark.parametrize("status", ["failed to update ref", "failed to write", "unknown failure"])
def test_a_failed_ref_update_that_is_no_race_is_a_git_error_with_the_servers_reason(
    status: str,
) -> None:
    """The ref did not move and the server names a lasting cause: redoing the write would
    only fail again until the deadline, under advice that does not fit."""
    said = "error: Unable to create 'x/main.lock': Permission denied"
    with pytest.raises(GitError, match="Permission denied") as failed:
        check_ref_status({b"refs/heads/main": status}, "URL", lambda: False, said)
    assert not isinstance(failed.value, PushRejectedError)


def test_a_declining_pre_receive_hook_is_a_git_error_not_a_rejection(
    http_repo: tuple[str, Path], git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    url, bare = http_repo
    published = remote_head(bare)
    git_http_server.add_pre_receive_hook(
        "proj", "#!/bin/sh\ncat >/dev/null\necho 'policy: no' >&2\nexit 1\n"
    )
    repo = MetadataRepo.clone(
        url, tmp_path / "a", credentials=GitCredentials(git_http_server.token)
    )
    sha = repo.commit({"x": b"1"}, "x", ME)
    with pytest.raises(GitError, match="pre-receive hook.*policy: no") as failed:
        repo.push()
    assert not isinstance(failed.value, PushRejectedError)
    assert repo.head() == sha and remote_head(bare) == published


# -- remotes, credentials, authors ----------------------------------------------------


def test_remote_normalisation(tmp_path: Path) -> None:
    url, creds = normalize_remote("https://bot:s%40cret@git.example.org:8443/team/proj.git")
    assert url == "https://git.example.org:8443/team/proj.git"
    assert creds == GitCredentials(token="s@cret", username="bot")
    assert "s@cret" not in repr(creds)
    assert normalize_remote("https://git.example.org/p.git") == (
        "https://git.example.org/p.git",
        None,
    )
    assert normalize_remote(tmp_path / "r.git") == (str(tmp_path / "r.git"), None)
    assert normalize_remote((tmp_path / "r.git").as_uri())[0] == (tmp_path / "r.git").as_uri()
    for unsupported in ("ssh://git@host/p.git", "git@github.com:team/p.git", "git://host/p"):
        with pytest.raises(GitError, match="Unsupported"):
            normalize_remote(unsupported)


def test_scrub_removes_tokens_in_every_form() -> None:
    text = "push https://u:p@h/x failed; token s3/cr+t or s3%2Fcr%2Bt"
    assert scrub(text, "s3/cr+t") == "push https://***@h/x failed; token *** or ***"


def test_default_author_from_env_then_git_config_then_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = MetadataRepo.init(tmp_path / "a", None)
    fallback = Author.default()
    assert "@" in fallback.email and fallback.name

    (home / ".gitconfig").write_text("[user]\n\tname = Global Name\n\temail = global@example.org\n")
    assert Author.default() == Author("Global Name", "global@example.org")
    with open(tmp_path / "a" / ".git" / "config", "a") as f:
        f.write("[user]\n\tname = Repo Name\n")
    assert repo.default_author() == Author("Repo Name", "global@example.org")

    monkeypatch.setenv("DATOM_AUTHOR_NAME", "Env Name")
    monkeypatch.setenv("DATOM_AUTHOR_EMAIL", "env@example.org")
    assert repo.default_author() == Author("Env Name", "env@example.org")
    repo.commit({"x": b"1"}, "x")
    assert repo.log()[0].author == Author("Env Name", "env@example.org")


def test_invalid_author_is_refused() -> None:
    with pytest.raises(InvalidNameError):
        Author("Eve <evil>", "e@x")
    with pytest.raises(InvalidNameError):
        Author("Eve", "e@x\nSigned-off-by: x")


def _hold_lock(path: str, held: Any, release: Any) -> None:
    with MetadataRepo.open(path).lock(timeout=60):
        held.set()
        release.wait(60)


def test_the_remotes_head_is_read_while_another_process_holds_the_clones_lock(
    tmp_path: Path,
) -> None:
    """What a settling writer asks after its push, while other processes sharing its clone
    write through it (they hold the clone's lock for their whole write)."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    first = repo.commit_and_push(lambda tree: {"x.json": b"1\n"}, "c0", ME)
    other = MetadataRepo.clone(MetadataRepo.embedded_remote_path(tmp_path / "a"), tmp_path / "b")
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(repo.path), held, release))
    holder.start()
    try:
        assert held.wait(60)
        assert repo.remote_head() == first
        theirs = other.commit_and_push(lambda tree: {"x.json": b"2\n"}, "c1", ME)
        assert repo.remote_head() == theirs != first
        with pytest.raises(GitError):  # the locked look would wait for the holder
            with repo.lock(timeout=0.2):
                pass
    finally:
        release.set()
        holder.join(60)
    assert repo.remote_tip().commit == theirs


def _answer_pack_requests(server: GitHTTPServer, status: str, times: int) -> list[str]:
    """Make the next ``times`` pack requests of fetches (``git-upload-pack`` POSTs) get
    ``status``; returns the list the server appends each such request to."""
    seen: list[str] = []
    app = server._app

    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        wanted = environ.get("PATH_INFO", "").endswith("/git-upload-pack")
        if wanted and environ.get("REQUEST_METHOD") == "POST":
            seen.append(status)
            if len(seen) <= times:
                start_response(status, [("Content-Type", "text/plain")])
                return [b"not now"]
        return app(environ, start_response)

    server._app = wrapped
    return seen


@pytest.fixture
def behind(
    git_http_server: GitHTTPServer, http_repo: tuple[str, Path], tmp_path: Path
) -> tuple[MetadataRepo, MetadataRepo]:
    """(a clone that pushed a commit, a clone behind it) of the HTTP repository."""
    creds = GitCredentials(git_http_server.token)
    seed = MetadataRepo.open(tmp_path / "seed", credentials=creds)
    other = MetadataRepo.clone(http_repo[0], tmp_path / "other", credentials=creds)
    seed.commit({"t/metadata.json": b'{"v": 2}'}, "second", ME)
    seed.push()
    return seed, other


def test_a_fetch_asks_again_after_server_errors(
    git_http_server: GitHTTPServer, behind: tuple[MetadataRepo, MetadataRepo]
) -> None:
    """A server's 5xx (dulwich's server answers 500 when the tip moved between a fetch's
    two requests, which concurrent writers make common) is asked again, at random moments
    within ``FETCH_PATIENCE``: more times than the five the fetch used to allow."""
    seed, other = behind
    seen = _answer_pack_requests(git_http_server, "500 Internal Server Error", times=8)
    assert other.fetch_and_reset() == seed.head()
    assert len(seen) >= 9  # git's server may take two pack requests to negotiate


def test_a_fetch_the_server_refuses_is_not_asked_again(
    git_http_server: GitHTTPServer, behind: tuple[MetadataRepo, MetadataRepo]
) -> None:
    seed, other = behind
    seen = _answer_pack_requests(git_http_server, "403 Forbidden", times=100)
    with pytest.raises(GitError, match="403"):
        other.fetch_and_reset()
    assert len(seen) == 1


def test_a_missing_local_remote_is_named_and_nothing_is_made(tmp_path: Path) -> None:
    """A local remote path that holds no repository (yet, or any more): clone and push say
    so naming the path, and the clone folder is not made."""
    missing = tmp_path / "nowhere.git"
    with pytest.raises(GitError, match="no git repository there") as e:
        MetadataRepo.clone(missing, tmp_path / "clone")
    assert str(missing) in str(e.value) and "Check the remote path/URL" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit({"x": b"1"}, "x", ME)
    remote = tmp_path / "a.remote.git"
    remote.rename(tmp_path / "moved.git")
    with pytest.raises(GitError, match="no git repository there") as e:
        repo.push()
    assert str(remote) in str(e.value)
