"""The test git server's threaded mode (``GitHTTPServer(threaded=True)``): a request
still on its way (a client across a WAN) does not hold up the others, and concurrent
pushes still move the branch by compare-and-swap."""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from datom_core._git import Author, GitCredentials, MetadataRepo
from tests.gitserver import GitHTTPServer, serving

pytestmark = pytest.mark.timeout(120)
ME = Author("Ada Lovelace", "ada@example.org")


@contextmanager
def _threaded(root: Path) -> Iterator[GitHTTPServer]:
    root.mkdir()
    yield from serving(GitHTTPServer(root, secrets.token_urlsafe(16), threaded=True))


def test_a_request_on_its_way_does_not_hold_up_another(tmp_path: Path) -> None:
    """A connection whose request has not arrived yet (half a round trip away) is
    waited for in its own thread: a clone and a push meanwhile are answered."""
    with _threaded(tmp_path / "git") as s:
        s.create_bare("proj")
        slow = socket.create_connection(("127.0.0.1", s.port))  # sends nothing yet
        try:
            done: list[str | None] = []

            def write() -> None:
                creds = GitCredentials(s.token)
                repo = MetadataRepo.clone(s.url_for("proj"), tmp_path / "a", credentials=creds)
                done.append(repo.commit_and_push(lambda tree: {"t/x.json": b"1\n"}, "one", ME))

            t = threading.Thread(target=write, daemon=True)
            t.start()
            t.join(60)
            assert done and done[0] is not None, "the server waited for the slow request"
        finally:
            slow.close()


def test_concurrent_pushes_each_land_once(tmp_path: Path) -> None:
    """Writers pushing at once from their own clones: each write lands, on the one
    before it (a lost compare-and-swap is refused, and the loser pushes again)."""
    with _threaded(tmp_path / "git") as s:
        s.create_bare("proj")
        creds = GitCredentials(s.token)
        first = MetadataRepo.clone(s.url_for("proj"), tmp_path / "c0", credentials=creds)
        first.commit_and_push(lambda tree: {"seed.json": b"0\n"}, "seed", ME)
        repos = [
            MetadataRepo.clone(s.url_for("proj"), tmp_path / f"c{i}", credentials=creds)
            for i in range(1, 5)
        ]
        made: list[str | None] = []
        threads = [
            threading.Thread(
                target=lambda r=r, i=i: made.append(
                    r.commit_and_push(lambda tree, i=i: {f"t{i}.json": b"x\n"}, f"w{i}", ME)
                )
            )
            for i, r in enumerate(repos)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert len(made) == 4 and all(made)
        tip = first.remote_head()
        assert tip is not None
        first.catch_up(tip)
        for i in range(4):
            assert first.read(f"t{i}.json") == b"x\n"
