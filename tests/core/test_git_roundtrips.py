"""Requests a write makes to a smart-HTTP git server, counted at the server.

With the accelerator ``_fast/_advert``, a write reads the branch tip once (one ref
advertisement, or none when the last one is a few seconds old) and pushes with that tip as
the expected old value in a single request; a push that lost a race costs one fetch and
the push again. Its plain path (``DATOM_PLAIN=advert``) asks dulwich's per-request
advertisements; the tests of what a write does, not of what it costs, pass in both. Run on dulwich's server and
on git's own ``git http-backend``; dulwich's server answers ``ok`` to a compare-and-swap
that failed, so there a push is looked at once more.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import datom_core as dc
from datom_core._git import Author, GitCredentials, MetadataRepo, _repo
from datom_core._git._fast import _advert
from tests.gitbackend import GitBackendServer
from tests.gitserver import GitHTTPServer, counted_requests

ME = Author("Ada Lovelace", "ada@example.org")
_GET_PUSH = "GET info/refs?service=git-receive-pack"
_GET_FETCH = "GET info/refs?service=git-upload-pack"
_PUSH = "POST git-receive-pack"
_FETCH = "POST git-upload-pack"


_count = counted_requests


def _git(server: GitHTTPServer) -> bool:
    return isinstance(server, GitBackendServer)


@pytest.fixture
def two_clones(
    any_git_http_server: GitHTTPServer, tmp_path: Path
) -> Iterator[tuple[GitHTTPServer, MetadataRepo, MetadataRepo]]:
    server = any_git_http_server
    server.create_bare("proj")
    url, creds = server.url_for("proj"), GitCredentials(server.token)
    a = MetadataRepo.clone(url, tmp_path / "a", credentials=creds)
    a.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
    b = MetadataRepo.clone(url, tmp_path / "b", credentials=creds)
    yield server, MetadataRepo.open(tmp_path / "a", credentials=creds), b


@pytest.mark.usefixtures("accelerated")  # the kept advertisements: _fast/_advert
def test_a_commit_and_push_is_two_requests(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
) -> None:
    """One ref advertisement (the tip, and the push's expected old value) and one push;
    dulwich's server, whose ``ok`` may hide a failed swap, is looked at once more."""
    server, a, _ = two_clones
    seen = _count(server)
    made = a.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    expected = [_GET_PUSH, _PUSH] + ([] if _git(server) else [_GET_FETCH])
    assert seen == expected
    assert a.remote_head() == made == a.head()


@pytest.mark.usefixtures("accelerated")  # the kept advertisements: _fast/_advert
def test_a_push_that_lost_a_race_costs_one_fetch(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
) -> None:
    """``a`` read the tip, ``b`` pushed meanwhile: ``a``'s push names the old tip and is
    refused, ``a`` fetches ``b``'s commit and pushes again on top of it (``b``'s file kept:
    the commit was rebuilt on the new tip)."""
    server, a, b = two_clones
    before = a.remote_tip().commit  # the look a write classifies on
    theirs = b.commit_and_push(lambda tree: {"t/y.json": b"b\n"}, "b's", ME)
    seen = _count(server)
    made = a.commit_and_push(lambda tree: {"t/x.json": b"a\n"}, "a's", ME)
    assert made is not None and before != theirs
    if _git(server):
        assert seen == [_PUSH, _GET_FETCH, _FETCH, _PUSH]
    else:  # its "ok" hides the failed swap: the push is looked at, then redone
        assert seen.count(_PUSH) == 2 and seen.count(_FETCH) == 1
    assert a.remote_head() == made
    assert a.tree().read("t/y.json") == b"b\n" and a.tree().read("t/x.json") == b"a\n"
    assert a.log(max_entries=2)[1].id == theirs


def test_a_stale_look_is_never_taken_for_the_remote_after_a_push(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
) -> None:
    """The refs kept from before a push are dropped by it: the next look asks."""
    server, a, _ = two_clones
    a.remote_tip()
    made = a.commit_and_push(lambda tree: {"t/x.json": b"2\n"}, "two", ME)
    seen = _count(server)
    assert a.remote_tip().commit == made
    assert seen  # asked the server, not the refs seen before the push


@pytest.mark.usefixtures("accelerated")  # the kept advertisements: _fast/_advert
def test_back_to_back_table_writes_make_two_git_requests_each(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the whole write path: the push, and the look after the store's documents
    are written (the mirror's settling), which the next write builds on."""
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    conn = dc.init_repo(tmp_path / "p", "P", dc.LocalStore(tmp_path / "s"), server.url_for("proj"))
    conn.write("t", pa.table({"k": [0]}))
    seen = _count(server)
    for i in range(1, 4):
        seen.clear()
        conn.write("t", pa.table({"k": [i]}))
        expected = [_PUSH, _GET_PUSH] if _git(server) else [_PUSH, _GET_FETCH, _GET_PUSH]
        assert seen == expected
    assert conn.validate().ok
    assert len(conn.history("t")) == 4


def test_a_write_recording_nothing_decides_on_a_new_look(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``a``'s last look (kept for its next write) shows its own data current; ``b`` then
    records other data. ``a`` writing its data again must not answer ``none`` from the
    kept look: it looks again and makes its data current once more."""
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    url, store = server.url_for("proj"), dc.LocalStore(tmp_path / "s")
    a = dc.init_repo(tmp_path / "a", "P", store, url)
    b_first = dc.clone(url, tmp_path / "b", store)
    mine = a.write("t", pa.table({"k": [1]}))
    theirs = b_first.write("t", pa.table({"k": [2]}))
    again = a.write("t", pa.table({"k": [1]}))
    assert again.change != "none" and again.version == mine.version
    assert a.repo.remote_head() == again.commit != theirs.commit
    assert a.read("t")["k"].tolist() == [1]


def test_a_clone_is_two_requests(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo], tmp_path: Path
) -> None:
    """One fetch: its advertisement names the branches and HEAD's (protocol v0: git's
    server answers v2 ref listings with a request of their own), then the pack; the
    remote's HEAD is still followed."""
    server, a, _ = two_clones
    seen = _count(server)
    c = MetadataRepo.clone(
        server.url_for("proj"), tmp_path / "c", credentials=GitCredentials(server.token)
    )
    assert seen == [_GET_FETCH, _FETCH]
    assert c.head() == a.head() and c.branch == "main"


def test_recording_nothing_on_a_kept_look_is_decided_again_on_a_new_one(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
) -> None:
    """``a``'s kept look holds ``x = 0``; ``b`` changes it to 1. ``a`` committing
    ``x = 0`` must not answer "already there" from the kept look: it looks again and
    records its bytes on top of ``b``'s."""
    server, a, b = two_clones
    a.remote_tip()  # the kept look
    b.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "b's", ME)
    made = a.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "a's", ME)
    assert made is not None and a.remote_head() == made
    assert a.tree().read("t/x.json") == b"0\n"


def test_a_token_refused_push_advertisements_still_reads_the_tip(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
) -> None:
    """A read-only token (the server refuses receive-pack to it) reads the tip from a
    fetch advertisement instead."""
    server, a, b = two_clones
    head = a.head()
    server.deny_push("proj")
    assert b.remote_head() == head
    assert b.remote_tip().commit == head


def test_under_the_switch_each_look_and_push_asks_the_server(
    two_clones: tuple[GitHTTPServer, MetadataRepo, MetadataRepo],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``DATOM_PLAIN=advert``: nothing of ``_fast/_advert`` runs (each piece replaced by
    one that fails); a write fetches the tip and dulwich's ``send_pack`` asks for its own
    advertisement, a look is a fetch advertisement, and the writes land as with it."""
    server, a, b = two_clones
    monkeypatch.setenv("DATOM_PLAIN", "advert")

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kept advertisements ran under DATOM_PLAIN=advert")

    for name in ("tip", "branch_tip", "look"):
        monkeypatch.setattr(_advert, name, fail)
    monkeypatch.setattr(_advert.RefsMemo, "arm", fail)
    seen = _count(server)
    made = a.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME)
    push = [_GET_FETCH, _GET_PUSH, _PUSH]
    assert seen == push + ([] if _git(server) else [_GET_FETCH])
    seen.clear()
    assert a.remote_head() == made and seen == [_GET_FETCH]
    view = b.remote_tip(recent=True)
    assert view.commit == made and not view.kept
    theirs = b.commit_and_push(lambda tree: {"t/y.json": b"b\n"}, "b's", ME)
    again = a.commit_and_push(lambda tree: {"t/x.json": b"a\n"}, "a's", ME)
    assert again is not None and a.log(max_entries=2)[1].id == theirs
    assert a.tree().read("t/y.json") == b"b\n" and a.remote_head() == again


def test_the_kept_advertisements_and_their_plain_path_make_the_same_commits(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two clones writing in turn, then one pushing on a look another push made stale:
    with the accelerator, on its plain path, and switching at every write, the remotes
    end with the same commits (the clock fixed)."""
    server = any_git_http_server
    monkeypatch.setattr(_repo, "_now", lambda: 1_900_000_000)
    logs = {}
    for mode in ("fast", "plain", "switching"):

        def step(i: int, mode: str = mode) -> None:
            on_plain = mode == "plain" or (mode == "switching" and i % 2 == 1)
            monkeypatch.setenv("DATOM_PLAIN", "advert" if on_plain else "0")

        server.create_bare(mode)
        url, creds = server.url_for(mode), GitCredentials(server.token)
        a = MetadataRepo.clone(url, tmp_path / mode / "a", credentials=creds)
        step(0)
        a.commit_and_push(lambda tree: {"t/x.json": b"0\n"}, "seed", ME)
        b = MetadataRepo.clone(url, tmp_path / mode / "b", credentials=creds)
        for i in range(1, 7):
            step(i)
            files = {f"t/{i % 3}.json": b"%d\n" % i}
            (a, b)[i % 2].commit_and_push(lambda tree, files=files: files, f"write {i}", ME)
        a.remote_tip()  # a look the next push makes stale
        step(7)
        b.commit_and_push(lambda tree: {"t/y.json": b"b\n"}, "b's", ME)
        step(8)
        made = a.commit_and_push(lambda tree: {"t/x.json": b"a\n"}, "a's", ME)
        assert made is not None and a.remote_head() == made
        b.fetch_and_reset()
        logs[mode] = [c.id for c in a.log()]
        assert [c.id for c in b.log()] == logs[mode] and len(logs[mode]) == 9
    assert logs["plain"] == logs["fast"] and logs["switching"] == logs["fast"]


@pytest.mark.usefixtures("accelerated")  # the kept advertisements: _fast/_advert
def test_back_to_back_writes_into_s3_make_one_git_request_each(
    any_git_http_server: GitHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    s3_bucket: str,
    s3_endpoint: str,
) -> None:
    """A store that conditions each PUT on the copy it wrote last (S3's ``If-Match``):
    a write whose PUTs all held looks at the remote no more. Its push is its one request
    to git's server, and the push's answer is the look the next write pushes from
    (dulwich's server, whose ``ok`` may hide a failed swap, is looked at after it)."""
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    server.create_bare("proj")
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    conn = dc.init_repo(tmp_path / "p", "P", store, server.url_for("proj"))
    conn.write("t", pa.table({"k": [0]}))  # this store has written no copy of t's yet
    seen = _count(server)
    for i in range(1, 4):
        seen.clear()
        conn.write("t", pa.table({"k": [i]}))
        if i > 1:
            assert seen == ([_PUSH] if _git(server) else [_GET_FETCH, _PUSH, _GET_FETCH])
    assert conn.validate().ok
    assert len(conn.history("t")) == 4
