"""The clone's working-tree files as a move rewrites them: replaced whole (a link is not
written through), and repaired from the journal when a write stops half way."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from datom_core._git import MetadataRepo
from datom_core._git import _internals as gi
from tests.core.test_git_objects import ME, put
from tests.gitcli import git, needs_git


@needs_git
def test_files_are_rewritten_to_exactly_heads_bytes(tmp_path: Path) -> None:
    """Longer, shorter and equal-length texts: the file holds HEAD's bytes each time, and
    git finds the working tree and the index clean."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    texts = [b'{"v": 1}\n', b'{"v": 1, "longer": "text"}\n', b"{}\n", b'{"v": 2}\n']
    repo.commit_and_push(put({"t/metadata.json": texts[0]}), "c0", ME)
    target = repo.path / "t" / "metadata.json"
    for i, text in enumerate(texts[1:], start=1):
        repo.commit_and_push(put({"t/metadata.json": text}), f"c{i}", ME)
        assert target.read_bytes() == text == repo.read("t/metadata.json")
    assert git(repo.path, "status", "--porcelain") == ""


@needs_git
def test_a_hard_link_and_a_symbolic_link_are_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"t/metadata.json": b"one\n", "t/history.json": b"one\n"}), "c0", ME)
    linked, elsewhere = tmp_path / "linked-copy", tmp_path / "link-target"
    os.link(repo.path / "t" / "metadata.json", linked)
    elsewhere.write_bytes(b"not the project's\n")
    (repo.path / "t" / "history.json").unlink()
    (repo.path / "t" / "history.json").symlink_to(elsewhere)
    repo.commit_and_push(put({"t/metadata.json": b"two\n", "t/history.json": b"two\n"}), "c1", ME)
    assert linked.read_bytes() == b"one\n"  # the other name keeps its bytes
    assert elsewhere.read_bytes() == b"not the project's\n"  # the link was not followed
    for name in ("metadata.json", "history.json"):
        path = repo.path / "t" / name
        assert not path.is_symlink() and path.read_bytes() == b"two\n"
    assert git(repo.path, "status", "--porcelain") == ""


def test_a_read_only_file_is_replaced_whole(tmp_path: Path) -> None:
    repo = MetadataRepo.init(tmp_path / "a", None)
    repo.commit_and_push(put({"x.json": b"one\n"}), "c0", ME)
    (repo.path / "x.json").chmod(0o444)
    repo.commit_and_push(put({"x.json": b"two\n"}), "c1", ME)
    assert (repo.path / "x.json").read_bytes() == b"two\n"


def test_a_write_stopped_half_way_is_repaired_from_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the new text is written: the file keeps the old text. The
    commit is recorded (the push landed: a warning, not an error), and the next operation
    puts HEAD's bytes in place (the journal listed the file before the branch moved)."""
    repo = MetadataRepo.init(tmp_path / "a", None)
    old, new = b"a" * 4000 + b"\n", b"b" * 3000 + b"\n"
    repo.commit_and_push(put({"t/metadata.json": old}), "c0", ME)
    real = gi.write_worktree_file

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gi, "write_worktree_file", full)
    commit = repo.commit_and_push(put({"t/metadata.json": new}), "c1", ME)
    assert commit is not None
    target = repo.path / "t" / "metadata.json"
    assert target.read_bytes() == old  # behind HEAD, as a crash leaves it
    monkeypatch.setattr(gi, "write_worktree_file", real)
    assert repo.recover() is True
    assert target.read_bytes() == repo.read("t/metadata.json") == new
    assert repo.head() == commit == repo.remote_tip().commit
    assert repo.recover() is False
