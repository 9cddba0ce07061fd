"""Group commit over HTTP(S), counted at the server: writers that share a clone prepare
their writes while a group's push holds the clone's lock, and the next group reads the
remote's tip once for all of them."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import ObjectID
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import Author, GitCredentials, MetadataRepo
from datom_core._git._fast._tipnote import note_tip
from tests.core.projects import frame
from tests.gitserver import GitHTTPServer, counted_requests

pytestmark = pytest.mark.timeout(300)

_ADVERTISEMENTS = (
    "GET info/refs?service=git-upload-pack",
    "GET info/refs?service=git-receive-pack",
)
_PUSH = "POST git-receive-pack"


_count = counted_requests


class _ManifestsWritten(dc.LocalStore):
    """A local store that logs each manifest a write's mirror puts (one file per write)."""

    def __init__(self, root: str, log: str) -> None:
        super().__init__(root)
        self._log = Path(log)

    def write_in_order(self, documents: Any, after: Any = None) -> None:
        for key, data, _ in documents:
            if key == ".metadata/manifest.json":
                (self._log / f"{os.getpid()}.json").write_bytes(bytes(data))
        super().write_in_order(documents, after)


def _write(clone: str, store: str, table: str, seed: int, out: str) -> None:
    conn = dc.connect(clone, store=_ManifestsWritten(store, out))
    try:
        result = conn.write(table, frame(seed=seed))
        Path(out, table).write_text(f"ok {result.version} {result.commit}")
    except Exception as e:  # what the test looks at
        Path(out, table).write_text(f"failed {type(e).__name__}: {e}")


def _queued(clone: Path) -> int:
    folder = clone / ".git" / "datom-queue"
    return len(list(folder.glob("*.req"))) if folder.exists() else 0


@pytest.mark.usefixtures("accelerated")  # one look for the group: _fast/_advert
def test_writers_behind_a_push_queue_without_the_lock_and_share_one_look(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the clone's lock is held (a group's push under way), K writers classify on
    the clone's newest look and queue; once it is free, one of them records all K in one
    push whose tip is read once: one advertisement before the push, not one per writer.
    Each version is one commit on the one before it and one history entry."""
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    store = tmp_path / "store"
    conn = dc.init_repo(tmp_path / "p", "P", dc.LocalStore(store), server.url_for("proj"))
    conn.write("seed", frame(seed=99))
    base = conn.repo.remote_head()
    out = tmp_path / "out"
    out.mkdir()
    k = 4
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_write, args=(str(conn.path), str(store), f"t{i}", i, str(out)))
        for i in range(k)
    ]
    with conn.repo.lock():  # a group's leader, mid-push
        for p in procs:
            p.start()
        deadline = time.monotonic() + 120
        while _queued(conn.path) < k and time.monotonic() < deadline:
            conn.repo.remote_head()  # the clone's newest look (a settling writer's)
            time.sleep(0.3)
        queued = _queued(conn.path)
        seen = _count(server)
    assert queued == k, "writers waited for the clone's lock to read the tip"
    for p in procs:
        p.join(120)
    results = {f"t{i}": (out / f"t{i}").read_text() for i in range(k)}
    assert all(r.startswith("ok") for r in results.values()), results
    before_push = seen[: seen.index(_PUSH)]
    assert seen.count(_PUSH) == 1, seen  # one group
    assert sum(before_push.count(a) for a in _ADVERTISEMENTS) == 1, seen
    tip = conn.repo.remote_head()
    assert tip is not None
    with Repo(str(tmp_path / "p" / ".git")) as r:  # the clone's copy of the remote's commits
        chain = []
        for entry in r.get_walker(include=[ObjectID(tip.encode())]):
            chain.append(entry.commit)
            if len(chain) == k:
                break
    assert [len(c.parents) for c in chain] == [1] * k
    assert chain[-1].parents[0].decode() == base  # exact parents: each on the one before
    for newer, older in zip(chain, chain[1:], strict=False):
        assert newer.parents[0] == older.id
    # Every writer of the group mirrored the manifest of the group's last commit: one
    # shared document, the same bytes from each (no conditional write refuses another).
    manifests = {p.read_bytes() for p in out.glob("*.json")}
    assert len(list(out.glob("*.json"))) == k
    assert manifests == {conn.repo.read_at(tip, ".datom/manifest.json")}
    commits = {c.id.decode() for c in chain}
    conn.pull()
    for i in range(k):
        history = conn.history(f"t{i}")
        assert len(history) == 1 and history[0].commit_sha in commits
        assert results[f"t{i}"].split()[2] == history[0].commit_sha
    assert conn.validate().ok


ME = Author("Ada Lovelace", "ada@example.org")


@pytest.mark.usefixtures("accelerated")
def test_a_sharers_newer_push_is_the_tip_classified_on_without_a_request(
    any_git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    """Two handles on one clone (two processes sharing it): the tip one pushed is what
    the other classifies on, taken from the clone with no request, though its own look
    of a moment ago saw the tip before that push."""
    server = any_git_http_server
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    first = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    first.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
    other = MetadataRepo.open(tmp_path / "a", credentials=creds)
    before = other.remote_head()  # its own fresh look
    made = first.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    seen = _count(server)
    view = other.remote_tip(recent=True)
    assert (before, view.commit, view.kept, seen) == (before, made, True, [])
    assert view.read("t/x.json") == b"1\n"


def test_a_note_older_than_the_own_look_is_never_taken(
    any_git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    """A note a sharer wrote from a look older than this process's own (another clone
    pushed in between) is not classified or settled on: the newer look wins."""
    server = any_git_http_server
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    a = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    old = a.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
    b = MetadataRepo.clone(url, tmp_path / "b", credentials=creds)
    theirs = b.commit_and_push(lambda tree: {"t/y.json": b"b\n"}, "b's", ME)
    assert a.remote_head() == theirs  # a's own look: the newer tip
    assert old is not None
    note_tip(a.controldir, b"refs/heads/main", old.encode())  # a sharer's older look
    view = a.remote_tip(recent=True)
    assert view.commit == theirs and view.read("t/y.json") == b"b\n"


def _look(clone: str, token: str) -> tuple[str | None, bool]:
    view = MetadataRepo.open(clone, credentials=GitCredentials(token)).remote_tip(recent=True)
    return view.commit, view.kept


@pytest.mark.parametrize("plain", ["0", "group"])
def test_a_sharers_note_is_taken_by_the_accelerator_only(
    any_git_http_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    plain: str,
) -> None:
    """Another process sharing the clone classifies on the tip a sharer noted (a kept
    look, no request) with the accelerator; on its plain path (``DATOM_PLAIN=group``) it
    looks at the remote itself. The tip is the same."""
    server = any_git_http_server
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    first = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    first.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
    made = first.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    monkeypatch.setenv("DATOM_PLAIN", plain)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        assert pool.apply(_look, (str(tmp_path / "a"), server.token)) == (made, plain == "0")
