"""A clone's compaction in both modes (``DATOM_PLAIN=compact`` selects the plain path,
dulwich's ``pack_loose_objects``; otherwise ``_git/_fast/_compact.py`` also merges packs):
the same objects readable afterwards, git's ``fsck`` content, git's own packs (a
``.keep``, a multi-pack-index) untouched; the plain path deletes no pack and never runs
the accelerator, and a local remote is left alone (``git gc`` is its owner's)."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Blob
from dulwich.repo import Repo

from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._fast import _compact
from datom_core._git._fast._held import git_held_packs
from datom_core._git._fast._packs import write_objects
from datom_core._plain import PLAIN_ENV, plain
from tests.core.test_git_objects import ME, git, needs_git, put

MODES = {"fast": "0", "plain": "compact"}


def _packs(r: Repo) -> set[str]:
    return {n[:-5] for n in os.listdir(r.object_store.pack_dir) if n.endswith(".pack")}


def _objects(r: Repo) -> dict[bytes, tuple[int, bytes]]:
    return {sha: r.object_store.get_raw(sha) for sha in r.object_store}


def _clone_past_its_budgets(path: Path) -> None:
    """A clone with loose objects past the budget and packs past it: one a ``.keep`` holds,
    two a multi-pack-index names (git's), and small ones such as each fetch adds."""
    repo = MetadataRepo.init(path, None)
    for i in range(12):
        repo.commit({f"t{i % 3}/m": b"doc %d\n" % i}, f"c{i}", ME)
        if i % 4 == 3:
            with closing(Repo(str(path))) as r:
                _compact._pack_loose(r.object_store)
    git(path, "multi-pack-index", "write")
    with closing(Repo(str(path))) as r:
        kept = write_objects(r.object_store, [Blob.from_string(b"the user's")])
        (Path(r.object_store.pack_dir) / f"{kept}.keep").write_text("mine\n")
        for i in range(4):  # small packs, as fetches leave them
            write_objects(r.object_store, [Blob.from_string(b"fetched %d" % i)])
    for i in range(12, 24):
        repo.commit({f"t{i % 3}/m": b"doc %d\n" % i}, f"c{i}", ME)


@needs_git
@pytest.mark.parametrize("mode", list(MODES))
def test_both_compactions_keep_every_object_and_what_git_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1 << 62)  # the test compacts, once
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 8)
    monkeypatch.setattr(maint, "PACK_BUDGET", 2)
    path = tmp_path / mode
    monkeypatch.setenv(PLAIN_ENV, "0")
    _clone_past_its_budgets(path)
    monkeypatch.setenv(PLAIN_ENV, MODES[mode])
    with closing(Repo(str(path))) as r:
        before, packs = _objects(r), _packs(r)
        held = git_held_packs(r.object_store.pack_dir)  # the .keep's and the midx's
        assert held is not None and len(held) == 4
        loose = r.object_store.count_loose_objects()
        assert loose > 8 and len(packs) > 2 + 3
        packed, merged = maint.compact(r)
    with closing(Repo(str(path))) as r:
        assert _objects(r) == before
        assert r.object_store.count_loose_objects() == 0 and packed == loose
        after = _packs(r)
        assert held <= after
        if mode == "plain":
            assert merged == 0 and packs <= after  # no pack deleted
        else:
            assert merged > 0 and len(after) < len(packs)
    git(path, "multi-pack-index", "verify")
    git(path, "fsck", "--full", "--strict", "--no-dangling")


def _failing(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"the compaction accelerator ran under {PLAIN_ENV}=compact")


def test_under_the_switch_the_accelerator_never_runs_and_the_remote_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers checking at every push, with tiny budgets: the clone's loose objects are
    packed by dulwich (fsynced, as git fsyncs a pack), the remote is not compacted."""
    monkeypatch.setenv(PLAIN_ENV, "compact")
    assert plain("compact") and not plain("walk")
    for name in ("compact", "compact_remote", "packs_over", "_prepare"):
        monkeypatch.setattr(_compact, name, _failing)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    monkeypatch.setattr(maint, "PACK_BUDGET", 1)
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1)
    monkeypatch.setattr(maint, "REMOTE_CHECK_EVERY", 1)
    synced: list[str] = []  # the files fsynced
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setenv("DATOM_SHARE_OBJECTS", "0")  # the clone keeps objects of its own
    repo = MetadataRepo.init(tmp_path / "a", None)
    shas = [repo.commit_and_push(put({f"t{i}/m": b"%d\n" % i}), f"c{i}", ME) for i in range(10)]
    remote = MetadataRepo.embedded_remote_path(tmp_path / "a")
    with closing(Repo(str(tmp_path / "a"))) as r:
        assert r.object_store.count_loose_objects() <= 4 + 4  # one write's objects at most
        pack_dir = str(r.object_store.pack_dir)
        assert r.object_store.packs and any(f.startswith(pack_dir) for f in synced)
        assert not r.object_store.fsync_object_files  # dulwich's setting, as it was
    with closing(Repo(str(remote))) as bare:
        assert not bare.object_store.packs and bare.object_store.count_loose_objects() > 4
    assert not (remote / "datom-compact.lock").exists()
    assert [c.id for c in MetadataRepo.clone(remote, tmp_path / "b").log()] == shas[::-1]
    git(tmp_path / "a", "fsck", "--full", "--strict", "--no-dangling")
