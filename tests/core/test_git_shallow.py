"""Ephemeral workers: a fresh clone that fetches the tip only (``dc.clone(shallow=True)``).

The project's history is long (a thousand commits on the server); a fresh worker clones
it shallow over HTTP(S), writes, reads and validates, and the clone holds the tip's
commit and what the worker made, not the history. A walk of the history (``log``)
deepens the clone first. git's ``fsck`` on the server stays clean after its pushes.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

import datom_core as dc
from tests.gitserver import GitHTTPServer

HISTORY = 1000


def _grow(bare: Path, commits: int) -> None:
    """Add ``commits`` commits on the server's ``main``, each changing a notes file (the
    history a worker must not fetch), in one pack as a server keeps them."""
    with Repo(str(bare)) as repo:
        store, tip = repo.object_store, repo.refs[b"refs/heads/main"]
        base = store[tip]
        root = store[base.tree]
        new, parent = [], tip
        for k in range(commits):
            blob = Blob.from_string(f"note {k}\n".encode() * 20)
            tree = Tree.from_raw_string(Tree.type_num, root.as_raw_string())
            tree.add(b"NOTES.txt", 0o100644, blob.id)
            commit = Commit()
            commit.tree, commit.parents = tree.id, [parent]
            commit.author = commit.committer = base.author
            commit.author_time = commit.commit_time = int(time.time()) - commits + k
            commit.author_timezone = commit.commit_timezone = 0
            commit.message = f"note {k}\n".encode()
            new += [blob, tree, commit]
            parent = commit.id
        store.add_objects([(o, None) for o in new])
        repo.refs[b"refs/heads/main"] = parent


def _commits_in(clone: Path) -> int:
    with Repo(str(clone)) as r:
        return len({sha for sha in r.object_store if r.object_store[sha].type_name == b"commit"})


@pytest.fixture
def long_project(
    any_git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[GitHTTPServer, str, dc.LocalStore, Path]]:
    server = any_git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    bare = server.create_bare("proj")
    url, store = server.url_for("proj"), dc.LocalStore(tmp_path / "store")
    first = dc.init_repo(tmp_path / "first", "LONG", store, url)
    first.write("dm", pa.table({"k": [1, 2, 3]}))
    first.write("ae", pa.table({"k": [4]}))
    _grow(bare, HISTORY)
    first.write("dm", pa.table({"k": [1, 2]}))  # a version on top of the long history
    yield server, url, store, bare


def test_a_fresh_worker_writes_reads_and_validates_without_the_history(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    server, url, store, bare = long_project
    worker = dc.clone(url, tmp_path / "home" / "repo", store, shallow=True)
    assert _commits_in(worker.path) == 1  # the tip's commit only
    result = worker.write("dm", pa.table({"k": [7, 8]}))
    assert result.change == "full"
    assert worker.write("ae", pa.table({"k": [4]})).change == "none"
    assert worker.read("dm")["k"].tolist() == [7, 8]
    assert worker.read("dm", version=result.version)["k"].tolist() == [7, 8]
    assert worker.validate().ok
    assert _commits_in(worker.path) == 2  # and its own: nothing of the history came
    assert (worker.path / ".git" / "shallow").exists()
    subprocess.run(["git", "-C", str(bare), "fsck", "--strict", "--no-progress"], check=True)
    other = dc.clone(url, tmp_path / "other", store)  # a whole clone sees it all
    assert len(other.repo.log()) == HISTORY + 5
    assert other.read("dm")["k"].tolist() == [7, 8]
    other.write("ae", pa.table({"k": [5]}))
    later = worker.write("dm", pa.table({"k": [9]}))  # fetches the other's commit only
    assert later.change == "full" and _commits_in(worker.path) == 4
    assert (worker.path / ".git" / "shallow").exists() and worker.validate().ok
    assert _commits_in(other.path) == HISTORY + 6
    subprocess.run(["git", "-C", str(bare), "fsck", "--strict", "--no-progress"], check=True)


def test_a_walk_of_the_history_deepens_a_shallow_clone_once(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    _, url, store, _ = long_project
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    log = worker.repo.log()
    assert len(log) == HISTORY + 4 and log[-1].message.startswith("Initialise")
    assert not (worker.path / ".git" / "shallow").exists()
    assert _commits_in(worker.path) == HISTORY + 4
    assert len(worker.history("dm")) == 2
