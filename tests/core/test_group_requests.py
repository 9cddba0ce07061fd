"""Group commit over HTTP(S), counted at the server: writers that share a clone prepare
their writes while a group's push holds the clone's lock, and the next group reads the
remote's tip once for all of them."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

import datom_core as dc
from tests.core.projects import frame
from tests.gitserver import GitHTTPServer

pytestmark = pytest.mark.timeout(300)

_ADVERTISEMENTS = (
    "GET info/refs?service=git-upload-pack",
    "GET info/refs?service=git-receive-pack",
)
_PUSH = "POST git-receive-pack"


def _count(server: GitHTTPServer) -> list[str]:
    """Every request the server answers from now on, as ``METHOD path-tail?query``."""
    seen: list[str] = []
    app = server._app

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "").rsplit("/", 2)
        tail = "/".join(path[-2:]) if path[-2] == "info" else path[-1]
        query = environ.get("QUERY_STRING", "")
        seen.append(f"{environ.get('REQUEST_METHOD')} {tail}" + (f"?{query}" if query else ""))
        return app(environ, start_response)

    server._app = counting
    return seen


def _write(clone: str, store: str, table: str, seed: int, out: str) -> None:
    conn = dc.connect(clone, store=dc.LocalStore(store))
    try:
        result = conn.write(table, frame(seed=seed))
        Path(out, table).write_text(f"ok {result.version} {result.commit}")
    except Exception as e:  # what the test looks at
        Path(out, table).write_text(f"failed {type(e).__name__}: {e}")


def _queued(clone: Path) -> int:
    folder = clone / ".git" / "datom-queue"
    return len(list(folder.glob("*.req"))) if folder.exists() else 0


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
    with Repo(str(tmp_path / "p" / ".git")) as r:  # the clone's copy of the remote's commits
        tip = conn.repo.remote_head()
        chain = []
        for entry in r.get_walker(include=[tip.encode()]):
            chain.append(entry.commit)
            if len(chain) == k:
                break
    assert [len(c.parents) for c in chain] == [1] * k
    assert chain[-1].parents[0].decode() == base  # exact parents: each on the one before
    for newer, older in zip(chain, chain[1:], strict=False):
        assert newer.parents[0] == older.id
    commits = {c.id.decode() for c in chain}
    conn.pull()
    for i in range(k):
        history = conn.history(f"t{i}")
        assert len(history) == 1 and history[0].commit_sha in commits
        assert results[f"t{i}"].split()[2] == history[0].commit_sha
    assert conn.validate().ok
