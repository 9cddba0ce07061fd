"""datom's compaction of a group-shared local remote (``git init --bare --shared=group``)
under umask 077: its lock files and the packs it writes get the group's permissions
from the moment they exist, whether the compaction finishes or not (a reader holding the
remote makes it stop after writing its packs). Before, the compaction's lock files were
created 0600 and its packs were widened only after a finished compaction: a teammate
then could not open them (tests/core/test_gitcli_sharing.py has the two-user test)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._types import Author
from tests.gitcli import git, needs_git

pytestmark = needs_git

ME = Author("Ada Lovelace", "ada@example.org")
_LOCKS = ("datom-writers.lock", "datom-maintenance.lock", "datom-compact.lock")


@pytest.fixture
def umask_077() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture(autouse=True)
def _compact_every_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    monkeypatch.setattr(maint, "PACK_BUDGET", 2)
    monkeypatch.setattr(maint, "REMOTE_CHECK_EVERY", 1)


def _not_the_groups(remote: Path) -> list[str]:
    """Files and folders in ``remote`` the group may not read (lock files: write)."""
    wrong = []
    for path in [remote, *remote.rglob("*")]:
        mode = path.stat().st_mode
        need = stat.S_IRGRP | (stat.S_IWGRP if path.name in _LOCKS or path.is_dir() else 0)
        if mode & need != need:
            wrong.append(f"{path.relative_to(remote)} {mode & 0o7777:o}")
    return wrong


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
@pytest.mark.parametrize("finished", [True, False], ids=["finished", "stopped-by-a-reader"])
def test_a_compaction_leaves_only_files_the_group_may_use(
    tmp_path: Path, umask_077: None, finished: bool
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "--shared=group", str(remote))
    repo = MetadataRepo.init(tmp_path / "clone", remote)
    repo.commit_and_push(lambda t: {"a/m.json": b"0"}, "first", ME)
    repo.close()
    for name in _LOCKS:  # none yet: each is made by this process from here on
        (remote / name).unlink(missing_ok=True)
    repo = MetadataRepo.open(tmp_path / "clone")
    repo.commit_and_push(lambda t: {"a/m.json": b"1"}, "second", ME)
    # A teammate's datom reading the remote meanwhile: the compaction writes its packs,
    # cannot delete what they replace, and stops.
    reader = maint.RemoteAccess(remote)
    with reader.shared() if not finished else contextlib.nullcontext():
        for i in range(8):
            repo.commit_and_push(lambda t, i=i: {f"t{i % 3}/m.json": b"%d" % i}, f"w{i}", ME)
            assert _not_the_groups(remote) == []
    reader.close()
    repo.close()
    assert (remote / "datom-compact.lock").exists(), "no compaction ran"
    assert list((remote / "objects" / "pack").glob("*.pack")), "no pack was written"
    git(remote, "fsck", "--strict", "--full")
