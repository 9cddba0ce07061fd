"""Group commit over HTTP(S), counted at the server: writers that share a clone prepare
their writes while a group's push holds the clone's lock, and the next group reads the
remote's tip once for all of them."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import ObjectID
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import Author, GitCredentials, MetadataRepo
from datom_core._git._fast._tipnote import note_tip
from tests.core.projects import frame
from tests.faultproxy import FaultProxy
from tests.gitbackend import GitBackendServer
from tests.gitserver import GitHTTPServer, counted_requests

pytestmark = pytest.mark.timeout(300)

_ADVERTISEMENTS = (
    "GET info/refs?service=git-upload-pack",
    "GET info/refs?service=git-receive-pack",
)
_PUSH = "POST git-receive-pack"


_count = counted_requests


class _ManifestsWritten(dc.LocalStore):
    """A local store that logs each manifest put in it (one file per put)."""

    def __init__(self, root: str, log: str) -> None:
        super().__init__(root)
        self._log = Path(log)

    def _logged(self, data: bytes) -> None:
        (self._log / f"{os.getpid()}-{uuid.uuid4().hex}.json").write_bytes(bytes(data))

    def write_in_order(self, documents: Any, after: Any = None) -> None:
        for key, data, _ in documents:
            if key == MANIFEST:
                self._logged(data)
        super().write_in_order(documents, after)

    def write_bytes(self, key: str, data: bytes) -> None:
        if key == MANIFEST:
            self._logged(data)
        super().write_bytes(key, data)


MANIFEST = ".metadata/manifest.json"


def _store(spec: tuple[str, ...], out: str) -> dc.Store:
    """``("local", root)`` (manifests logged in ``out``) or ``("s3", bucket, prefix,
    endpoint)``."""
    if spec[0] == "s3":
        return dc.S3Store(spec[1], prefix=spec[2], endpoint_url=spec[3])
    return _ManifestsWritten(spec[1], out)


def _write(clone: str, store: tuple[str, ...], table: str, seed: int, out: str) -> None:
    conn = dc.connect(clone, store=_store(store, out))
    try:
        result = conn.write(table, frame(seed=seed))
        Path(out, f"{table}-{seed}").write_text(f"ok {result.version} {result.commit}")
    except Exception as e:  # what the test looks at
        Path(out, f"{table}-{seed}").write_text(f"failed {type(e).__name__}: {e}")


def _queued(clone: Path) -> int:
    folder = clone / ".git" / "datom-queue"
    return len(list(folder.glob("*.req"))) if folder.exists() else 0


@dataclass
class _Group:
    conn: dc.Connection
    base: str | None  # the remote's tip before the group
    seen: list[str]  # the git requests while the writers queued
    results: dict[str, str]  # "<table>-<seed>": "ok <version> <commit>" or "failed ..."


def _queue_a_group(
    server: GitHTTPServer,
    root: Path,
    store: tuple[str, ...],
    jobs: list[tuple[str, int]],
    s3: FaultProxy | None = None,
) -> _Group:
    """A project whose writers ``jobs`` (table, seed) queue while the clone's lock is held
    (a group's leader, mid-push), then go: one of them leads the others. ``s3``: its
    requests are counted from the group on."""
    server.create_bare("proj")
    first = dc.LocalStore(store[1]) if store[0] == "local" else _store(store, "")
    conn = dc.init_repo(root / "p", "P", first, server.url_for("proj"))
    conn.write("seed", frame(seed=99))
    if s3 is not None:
        s3.seen.clear()
    base = conn.repo.remote_head()
    out = root / "out"
    out.mkdir()
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_write, args=(str(conn.path), store, table, seed, str(out)))
        for table, seed in jobs
    ]
    with conn.repo.lock():
        for p in procs:
            p.start()
        deadline = time.monotonic() + 120
        while _queued(conn.path) < len(jobs) and time.monotonic() < deadline:
            conn.repo.remote_head()  # the clone's newest look (a settling writer's)
            time.sleep(0.3)
        queued = _queued(conn.path)
        seen = _count(server)
    assert queued == len(jobs), "writers waited for the clone's lock to read the tip"
    for p in procs:
        p.join(120)
    results = {f.name: f.read_text() for f in out.iterdir() if not f.name.endswith(".json")}
    assert len(results) == len(jobs) and all(r.startswith("ok") for r in results.values()), results
    return _Group(conn, base, seen, results)


def _chain(clone: Path, tip: str, k: int) -> list[Any]:
    """The ``k`` commits up to ``tip``, newest first."""
    with Repo(str(clone / ".git")) as r:  # the clone's copy of the remote's commits
        chain = []
        for entry in r.get_walker(include=[ObjectID(tip.encode())]):
            chain.append(entry.commit)
            if len(chain) == k:
                break
    return chain


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
    k = 4
    store = ("local", str(tmp_path / "store"))
    group = _queue_a_group(server, tmp_path, store, [(f"t{i}", i) for i in range(k)])
    conn, seen = group.conn, group.seen
    before_push = seen[: seen.index(_PUSH)]
    assert seen.count(_PUSH) == 1, seen  # one group
    assert sum(before_push.count(a) for a in _ADVERTISEMENTS) == 1, seen
    tip = conn.repo.remote_head()
    assert tip is not None
    chain = _chain(conn.path, tip, k)
    assert [len(c.parents) for c in chain] == [1] * k
    assert chain[-1].parents[0].decode() == group.base  # exact parents: each on the one before
    for newer, older in zip(chain, chain[1:], strict=False):
        assert newer.parents[0] == older.id
    # The group's manifest went to the store once: the chain's last commit's, naming all.
    manifests = [p.read_bytes() for p in (tmp_path / "out").glob("*.json")]
    assert manifests == [conn.repo.read_at(tip, ".datom/manifest.json")]
    commits = {c.id.decode() for c in chain}
    conn.pull()
    for i in range(k):
        history = conn.history(f"t{i}")
        assert len(history) == 1 and history[0].commit_sha in commits
        assert group.results[f"t{i}-{i}"].split()[2] == history[0].commit_sha
    assert conn.validate().ok


def _puts(proxy: FaultProxy, suffix: str) -> int:
    return sum(1 for m, t in proxy.seen if m == "PUT" and t.split("?")[0].endswith(suffix))


@pytest.mark.usefixtures("accelerated")  # group commit: DATOM_PLAIN=group pushes alone
@pytest.mark.parametrize("shared", [False, True], ids=["distinct", "shared"])
def test_a_group_mirrors_the_store_once_with_one_manifest_put(
    any_git_http_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    s3_bucket: str,
    s3_proxy: FaultProxy,
    shared: bool,
) -> None:
    """A group of K queued writers, each of its own table or all of one: the store's
    manifest is put once (S3 requests counted at the proxy), each table's history copy
    and ``metadata.json`` once, those of the table's last write in the chain; every
    version of the group is in the store's history with the commit that produced it, and
    validate finds nothing to say."""
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    k = 4
    jobs = [("t" if shared else f"t{i}", i) for i in range(k)]
    store = ("s3", s3_bucket, "proj", s3_proxy.url)
    group = _queue_a_group(server, tmp_path, store, jobs, s3_proxy)
    assert group.seen.count(_PUSH) == 1, group.seen  # one group
    assert _puts(s3_proxy, "/.metadata/manifest.json") == 1
    for table in dict.fromkeys(t for t, _ in jobs):
        assert _puts(s3_proxy, f"/{table}/.metadata/version_history.json") == 1
        assert _puts(s3_proxy, f"/{table}/.metadata/metadata.json") == 1
    conn = group.conn
    conn.pull()
    tip = conn.repo.remote_head()
    assert tip is not None
    by_commit = {c.id.decode(): c for c in _chain(conn.path, tip, k)}
    recorded = {r.split()[1]: r.split()[2] for r in group.results.values()}
    assert set(recorded.values()) == set(by_commit)  # each write its commit of the chain
    in_store: dict[str, str] = {}  # version: commit_sha, as the store's history copies say
    for table in dict.fromkeys(t for t, _ in jobs):
        raw = conn.store.read_bytes(f"{table}/.metadata/version_history.json")
        entries = json.loads(raw)
        entries = entries["versions"] if isinstance(entries, dict) else entries
        in_store |= {e["version"]: e["commit_sha"] for e in entries}
    assert in_store == recorded
    report = conn.validate()
    assert report.ok, report


ME = Author("Ada Lovelace", "ada@example.org")


def _two_handles(server: GitHTTPServer, tmp_path: Path) -> tuple[MetadataRepo, MetadataRepo]:
    """Two handles on one clone of a seeded remote (two processes sharing the clone)."""
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    first = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    first.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
    return first, MetadataRepo.open(tmp_path / "a", credentials=creds)


@pytest.mark.usefixtures("accelerated")
def test_a_sharers_newer_push_is_the_tip_classified_on_without_a_request(
    any_git_http_server: GitHTTPServer, tmp_path: Path
) -> None:
    """Two handles on one clone (two processes sharing it): the tip one pushed is what
    the other classifies on, taken from the clone with no request, though its own look
    of a moment ago saw the tip before that push."""
    server = any_git_http_server
    first, other = _two_handles(server, tmp_path)
    before = other.remote_head()  # its own fresh look
    made = first.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    seen = _count(server)
    view = other.remote_tip(recent=True)
    assert (before, view.commit, view.kept, seen) == (before, made, True, [])
    assert view.read("t/x.json") == b"1\n"


@pytest.mark.parametrize("plain", ["0", "group"])
def test_a_sharers_newer_push_is_the_tip_a_write_pushes_from(
    any_git_http_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    plain: str,
) -> None:
    """A handle whose own kept look is older than a sharer's push (the next group's
    leader, after another process's group) builds on the sharer's tip and pushes in one
    request; its own look would have the push refused, then a new look and a second
    push. On the plain path (``DATOM_PLAIN=group``) that refusal is taken: the same
    commits, more requests."""
    monkeypatch.setenv("DATOM_PLAIN", plain)
    server = any_git_http_server
    first, other = _two_handles(server, tmp_path)
    other.remote_head()  # its own look, kept
    theirs = first.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    seen = _count(server)
    mine = other.commit_and_push(lambda tree: {"t/y.json": b"2\n"}, "two", ME)
    seen = list(seen)
    assert mine is not None and other.remote_head() == mine
    assert [p.id.decode() for p in _chain(tmp_path / "a", mine, 2)] == [mine, theirs]
    looked = (
        [] if isinstance(server, GitBackendServer) else ["GET info/refs?service=git-upload-pack"]
    )
    if plain == "0":
        assert seen == [_PUSH] + looked, seen
    else:
        assert seen.count(_PUSH) == 2, seen


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
    monkeypatch.setenv("DATOM_PLAIN", plain)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        # The other process is started (datom imported) before the note is made: a note
        # stands for FRESH_FOR seconds, which a loaded machine's spawn may take.
        pool.apply(_look, (str(tmp_path / "a"), server.token))
        made = first.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
        assert pool.apply(_look, (str(tmp_path / "a"), server.token)) == (made, plain == "0")
