"""Ephemeral workers: a fresh clone that fetches the tip only (``dc.clone(shallow=True)``).

The project's history is long (a thousand commits on the server); a fresh worker clones
it shallow over HTTP(S), writes, reads and validates, and the clone holds the tip's
commit and what the worker made, not the history. A walk of the history (``log``)
deepens the clone first. git's ``fsck`` on the server stays clean after its pushes.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

import datom_core as dc
from datom_core._project import _layout as L
from tests.gitserver import GitHTTPServer, counted_requests

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


def test_a_shallow_validate_finds_a_forged_snapshot_without_the_history(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    """A snapshot whose ``parquet_sha`` was edited still certifies its version id; a
    shallow clone, which lacks the commit of that version's document, finds it against
    git's history entry (and fetches no history to do so); a whole clone restores it."""
    _, url, store, _ = long_project
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    first = worker.history("dm")[-1]  # written before the long history
    assert worker.validate().ok and _commits_in(worker.path) == 1
    key = L.store_snapshot("dm", first.version)
    genuine = store.read_bytes(key)
    forged = json.loads(genuine)
    forged["parquet_sha"] = "f" * 64
    store.write_bytes(key, json.dumps(forged).encode())
    report = worker.validate()
    assert [(p.kind, p.key, p.fixable) for p in report.problems] == [
        ("forged_snapshot", key, False)
    ]
    assert "parquet_sha" in str(report) and "whole clone" in str(report)
    assert _commits_in(worker.path) == 1  # judged without the history
    whole = dc.clone(url, tmp_path / "whole", store)
    assert whole.validate(fix=True).problems[0].fixed
    assert json.loads(store.read_bytes(key)) == json.loads(genuine) and worker.validate().ok


def test_another_clones_commits_are_not_read_as_this_ones(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    """A process holding two clones keeps the commits and trees it met in one memory: a
    commit the other clone made (or one a shallow clone lacks) is still not this clone's,
    and reading a file at it says so instead of answering from the other's."""
    _, url, store, _ = long_project
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    other = dc.clone(url, tmp_path / "o", store)
    made = other.write("dm", pa.table({"k": [5]}))
    commit = other.commit_of("dm", made.version)
    assert commit is not None and other.repo.read_at(commit, "dm/metadata.json") is not None
    with pytest.raises(dc.GitError, match="No commit"):
        worker.repo.tree(commit)
    oldest = other.repo.log("dm/metadata.json")[-1].id  # older than the shallow tip
    assert worker.repo.read_at(oldest, "dm/metadata.json", deepen=False) is None
    assert _commits_in(worker.path) == 1


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


def _count(server: GitHTTPServer) -> list[str]:
    return counted_requests(server, by_service=True)


@pytest.mark.usefixtures("accelerated")  # the push advertisement read alongside: _fast/_prime
def test_a_fresh_worker_clones_in_one_exchange_and_its_first_write_costs_a_warm_one(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    """The clone: one fetch (one advertisement naming the branches and HEAD's, one pack),
    and the push's advertisement read alongside; the first write then asks the server
    exactly what the next one does (the push goes straight out)."""
    server, url, store, _ = long_project
    seen = _count(server)
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    assert sorted(seen) == sorted(
        ["GET git-upload-pack", "POST git-upload-pack", "GET git-receive-pack"]
    )
    seen.clear()
    first = worker.write("dm", pa.table({"k": [5]}))
    cold = list(seen)
    seen.clear()
    second = worker.write("dm", pa.table({"k": [6]}))
    assert first.change == second.change == "full"
    assert cold == seen and cold.count("GET git-receive-pack") == 1  # the settling look
    assert _commits_in(worker.path) == 3 and worker.read("dm")["k"].tolist() == [6]


def _objects_of(bare: Path, tip: bytes) -> set[bytes]:
    """The tip's commit and every tree and blob of its tree."""
    with Repo(str(bare)) as repo:
        store, found = repo.object_store, {tip}
        todo = [store[tip].tree]
        while todo:
            sha = todo.pop()
            found.add(sha)
            obj = store[sha]
            if isinstance(obj, Tree):
                todo += [entry.sha for entry in obj.iteritems()]
        return found


def test_a_fresh_worker_fetches_the_tips_objects_only_and_writes_its_commit_sha(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    """What lands in the clone is the tip's commit, trees and blobs (no older version of
    any document), and the store's history names the commit of every version without
    the worker fetching the history to find it."""
    server, url, store, bare = long_project
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    with Repo(str(bare)) as remote:
        tip = remote.refs[b"refs/heads/main"]
    with Repo(str(worker.path)) as clone:
        assert set(clone.object_store) == _objects_of(bare, tip)
    made = worker.write("dm", pa.table({"k": [7]}))
    history = worker.history("dm")
    assert history[0].commit_sha == made.commit and all(v.commit_sha for v in history)
    assert _commits_in(worker.path) == 2  # still the tip and its own commit


def _damage_history_objects(bare: Path) -> int:
    """Overwrite the deflated bytes of the server's objects that the tip does not need
    (the history's notes): a server that inflates them fails. Returns how many."""
    with Repo(str(bare)) as repo:
        tip = repo.refs[b"refs/heads/main"]
        needed = _objects_of(bare, tip)
        (pack,) = list(repo.object_store.packs)
        entries = sorted((offset, sha) for sha, offset, _crc in pack.index.iterentries())
        path = Path(repo.object_store.pack_dir) / Path(pack.data.filename).name
    raw_needed = {bytes.fromhex(s.decode()) for s in needed}
    data = bytearray(path.read_bytes())
    damaged = 0
    for (offset, sha), (end, _next) in zip(entries, entries[1:], strict=False):
        if sha not in raw_needed and end - offset > 24:
            data[offset + 12 : end] = b"\xff" * (end - offset - 12)  # past the header
            damaged += 1
    path.write_bytes(bytes(data))
    return damaged


def test_the_test_servers_depth_one_answer_reads_only_the_objects_it_sends(
    git_http_server: GitHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dulwich's pack writer inflated every object of the server's pack to find deltas to
    reuse (time in proportion to the history); the test server looks the wanted objects
    up in the index. With every other object unreadable the shallow clone still works."""
    server = git_http_server
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    bare = server.create_bare("proj")
    url, store = server.url_for("proj"), dc.LocalStore(tmp_path / "store")
    dc.init_repo(tmp_path / "first", "LONG", store, url).write("dm", pa.table({"k": [1]}))
    _grow(bare, 200)
    # One pack of whole objects (no deltas): each object's bytes are its own.
    subprocess.run(["git", "-C", str(bare), "repack", "-adfq", "--window=0"], check=True)
    assert _damage_history_objects(bare) > 100
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    assert worker.read("dm")["k"].tolist() == [1]
    assert worker.write("ae", pa.table({"k": [2]})).change == "full"


def test_a_read_only_token_still_clones_shallow_and_reads(
    long_project: tuple[GitHTTPServer, str, dc.LocalStore, Path], tmp_path: Path
) -> None:
    """The push advertisement read alongside the clone is refused to a read-only token:
    the clone and its reads do not notice; a write meets the refusal itself."""
    server, url, store, _ = long_project
    server.deny_push("proj")
    worker = dc.clone(url, tmp_path / "w", store, shallow=True)
    assert worker.read("dm")["k"].tolist() == [1, 2]
    with pytest.raises(dc.DatomError, match="403"):
        worker.write("dm", pa.table({"k": [3]}))
    assert _commits_in(worker.path) == 1
