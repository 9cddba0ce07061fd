"""A git writer SIGKILLed while it holds one of dulwich's lock files, then the next writer.

dulwich writes a ref or a loose object through ``<file>.lock`` (created exclusively, then
renamed over the file). A process killed in between leaves the lock behind, and every
later update of that file fails. Each test here kills a real child process at exactly that
instant (it opens the lock the way dulwich does, through ``GitFile``, and SIGKILLs
itself), then checks that the next push or sync converges: the unpushed commit pushed, the
store mirroring it, the dead writer's lock cleared or stepped around. A lock held by a live
git process is waited for, never taken away from it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
from dulwich.file import GitFile
from dulwich.objects import Blob
from dulwich.refs import Ref
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import Author, MetadataRepo

ME = Author("Ada Lovelace", "ada@example.org")

_DIE_HOLDING = textwrap.dedent(
    """
    import os, signal, sys
    from dulwich.file import GitFile
    f = GitFile(sys.argv[1], "wb")
    f.write(sys.argv[2].encode())
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)
# A datom push: under the remote's writers' turn, its tenure noted before the first lock.
_DIE_PUSHING = textwrap.dedent(
    """
    import os, signal, sys
    from dulwich.file import GitFile
    from datom_core._git import MetadataRepo, _lock
    with MetadataRepo(sys.argv[3])._remote().turn(60):
        _lock.note_tenure()
        f = GitFile(sys.argv[1], "wb")
        f.write(sys.argv[2].encode())
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def die_holding(path: Path, content: str, pushing_from: Path | None = None) -> Path:
    """Run a child that takes dulwich's lock on ``path``, writes ``content`` and is killed
    (``pushing_from``: as a datom push from that clone into its remote)."""
    script, clone = (_DIE_HOLDING, []) if pushing_from is None else (_DIE_PUSHING, [pushing_from])
    child = subprocess.run([sys.executable, "-c", script, str(path), content, *map(str, clone)])
    assert child.returncode == -signal.SIGKILL
    lock = path.with_name(path.name + ".lock")
    assert lock.exists()
    return lock


def remote_tip(bare: Path) -> bytes:
    with closing(Repo(str(bare))) as r:
        return r.refs[Ref(b"refs/heads/main")]


def loose_path(git_dir: Path, sha: bytes) -> Path:
    hex_ = sha.decode()
    return git_dir / "objects" / hex_[:2] / hex_[2:]


@pytest.fixture
def clone(tmp_path: Path) -> MetadataRepo:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    return repo


def test_a_push_killed_holding_the_remote_ref_lock_does_not_block_the_next(
    clone: MetadataRepo, tmp_path: Path
) -> None:
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    new = clone.commit({"x": b"2"}, "x2", ME)
    assert new is not None
    lock = die_holding(bare / "refs" / "heads" / "main", new + "\n", tmp_path / "a")
    assert clone.has_unpushed_commits()
    clone.push()
    assert remote_tip(bare) == new.encode() and not lock.exists()
    assert not clone.has_unpushed_commits()
    # commit_and_push (which holds the writers' turn itself) steps over one as well
    die_holding(bare / "refs" / "heads" / "main", new + "\n", tmp_path / "a")
    third = clone.commit_and_push(lambda tree: {"x": b"3"}, "x3", ME)
    assert third is not None and remote_tip(bare) == third.encode()


def test_a_push_killed_holding_the_remote_head_lock_does_not_block_the_next(
    clone: MetadataRepo, tmp_path: Path
) -> None:
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    with closing(Repo(str(bare))) as r:
        r.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(b"refs/heads/other"))
    lock = die_holding(bare / "HEAD", "ref: refs/heads/main\n", tmp_path / "a")
    fresh = MetadataRepo.open(tmp_path / "a")  # a new handle: it looks at the remote's HEAD
    assert fresh.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME) is not None
    assert not lock.exists()
    assert (bare / "HEAD").read_bytes() == b"ref: refs/heads/main\n"


@pytest.mark.parametrize("where", ["remote", "clone"])
def test_a_writer_killed_holding_a_loose_object_lock_does_not_block_the_next(
    clone: MetadataRepo, tmp_path: Path, where: str
) -> None:
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    blob = Blob.from_string(b"the same bytes, written again")
    git_dir = bare if where == "remote" else tmp_path / "a" / ".git"
    target = loose_path(git_dir, blob.id)
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = die_holding(target, "half an object")
    assert not target.exists()
    if where == "remote":
        sha = clone.commit_and_push(lambda tree: {"y": blob.data}, "y", ME)
    else:  # the blob reaches the clone from the remote, written by another clone
        other = MetadataRepo.clone(bare, tmp_path / "b")
        sha = other.commit_and_push(lambda tree: {"y": blob.data}, "y", ME)
        clone.fetch_and_reset()
    assert sha is not None and remote_tip(bare) == sha.encode()
    assert clone.read("y") == blob.data and clone.head() == sha
    with closing(Repo(str(git_dir))) as r:
        assert r[blob.id].as_raw_string() == blob.data  # the object file is whole
    # Written loose into the remote, the object went past the killed writer's lock, taken
    # over once stale; a clone gets it in the fetched pack, where the lock is in no one's way.
    assert lock.exists() == (where == "clone")


def test_a_ref_lock_held_by_a_live_git_process_is_waited_for(
    clone: MetadataRepo, tmp_path: Path
) -> None:
    bare = MetadataRepo.embedded_remote_path(tmp_path / "a")
    ref = bare / "refs" / "heads" / "main"
    tip = ref.read_bytes()
    held = threading.Event()
    failures: list[BaseException] = []

    def other_git() -> None:  # rewrites the ref to the same tip, holding its lock 0.5s
        try:
            with GitFile(ref, "wb") as f:
                held.set()
                time.sleep(0.5)
                f.write(tip)
        except BaseException as e:
            failures.append(e)

    thread = threading.Thread(target=other_git)
    thread.start()
    held.wait(5)
    new = clone.commit_and_push(lambda tree: {"x": b"2"}, "x2", ME)
    thread.join()
    assert failures == []  # its lock was not removed under it
    assert new is not None and remote_tip(bare) == new.encode()


# -- the whole sync ---------------------------------------------------------------------


def _extract(month: int) -> pd.DataFrame:
    return pd.DataFrame({"USUBJID": [f"S-{i}" for i in range(10 + month)], "VISIT": month})


def test_a_sync_after_a_pusher_died_holding_the_remote_ref_lock_converges(
    tmp_path: Path,
) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    inbox = conn.path / "input_files"
    inbox.mkdir(exist_ok=True)
    _extract(1).to_csv(inbox / "dm.csv", index=False)
    assert [r.status for r in conn.sync()] == ["synced"]
    bare = MetadataRepo.embedded_remote_path(conn.path)
    _extract(2).to_csv(inbox / "dm.csv", index=False)
    want = dc.hash_table(dc.read_extract(inbox / "dm.csv")).data_sha
    # the previous sync committed month 2 and died pushing it, inside the ref's lock
    env = {**os.environ, "DATOM_CRASH_AT": "committed"}
    code = f"import datom_core as dc; dc.connect({str(conn.path)!r}).sync()"
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == -signal.SIGKILL
    die_holding(bare / "refs" / "heads" / "main", conn.repo.head() or "")
    rows = conn.sync()
    assert [(r.name, r.status) for r in rows] in ([("dm", "skipped")], [("dm", "synced")])
    assert not conn.repo.has_unpushed_commits() and conn.validate().ok
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    assert {t.name: t.current_data_sha for t in reader.tables()} == {"dm": want}
    assert len(reader.history("dm")) == 2


# -- the git layer's own steps ------------------------------------------------------------

_RESET = textwrap.dedent(
    """
    import sys
    from datom_core._git import MetadataRepo
    MetadataRepo.open(sys.argv[1]).fetch_and_reset()
    """
)


@pytest.mark.parametrize("step", ["git:move:journaled", "git:move:moved"])
def test_a_reset_killed_mid_way_is_finished_before_the_working_tree_is_judged(
    clone: MetadataRepo, tmp_path: Path, step: str
) -> None:
    """A reset that drops an unpushed commit, killed before (journaled) or after (moved)
    moving the branch: the working tree still holds the dropped commit's bytes."""
    other = MetadataRepo.clone(MetadataRepo.embedded_remote_path(tmp_path / "a"), tmp_path / "b")
    theirs = other.commit_and_push(lambda tree: {"x": b"theirs"}, "theirs", ME)
    assert clone.commit({"x": b"dropped"}, "dropped", ME) is not None
    env = {**os.environ, "DATOM_CRASH_AT": step}
    child = subprocess.run([sys.executable, "-c", _RESET, str(clone.path)], env=env)
    assert child.returncode == -signal.SIGKILL
    worktree = clone.path / "x"
    assert worktree.read_bytes() == b"dropped"  # what a reader of the working tree judges
    assert clone.recover() is True
    head = clone.head()
    expected = b"theirs" if head == theirs else b"dropped"
    assert worktree.read_bytes() == clone.read("x") == expected
    assert clone.recover() is False
    clone.fetch_and_reset()
    assert clone.head() == theirs and clone.read("x") == b"theirs"


_GIT_STEPS = ["git:push:objects", "git:push:swapped", "git:move:journaled", "git:move:moved"]


@pytest.mark.slow
@pytest.mark.parametrize("nth", [1, 2])
@pytest.mark.parametrize("step", _GIT_STEPS)
def test_a_sync_killed_at_a_git_step_converges(tmp_path: Path, step: str, nth: int) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    inbox = conn.path / "input_files"
    inbox.mkdir(exist_ok=True)
    for table in ("ae", "dm"):
        _extract(1).assign(T=table).to_csv(inbox / f"{table}.csv", index=False)
    conn.sync()
    want = {}
    for table in ("ae", "dm"):
        _extract(2).assign(T=table).to_csv(inbox / f"{table}.csv", index=False)
        want[table] = dc.hash_table(dc.read_extract(inbox / f"{table}.csv")).data_sha
    env = {**os.environ, "DATOM_CRASH_AT": f"{step}@{nth}"}
    code = f"import datom_core as dc; dc.connect({str(conn.path)!r}).sync()"
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == -signal.SIGKILL
    conn.sync()
    assert not conn.repo.has_unpushed_commits() and conn.validate().ok
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    assert {t.name: t.current_data_sha for t in reader.tables()} == want
    assert {t: len(reader.history(t)) for t in want} == {"ae": 2, "dm": 2}
    assert {r.status for r in conn.sync()} <= {"skipped"}
