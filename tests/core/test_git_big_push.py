"""A push of many objects into a local bare remote (more than arrive as loose files: they
arrive as one pack) while git repacks that remote. ``git repack -a -d`` rewrites every
object the refs reach into one pack and deletes the packs it found: a pushed pack whose
ref had not moved yet was deleted with its objects, and the branch then named a commit
the remote lacked. git's receive-pack keeps an incoming pack (``.keep``) until its ref is
updated; so does datom."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from datom_core._errors import DatomError, GitError
from datom_core._git import Author, MetadataRepo, TreeReader
from tests.core.test_git_colleague import assert_git_accepts
from tests.gitcli import GIT, git, needs_git

pytestmark = needs_git

ME = Author("Ada Lovelace", "ada@example.org")
_MANY = 300  # files in one commit: more objects than a push writes loose


def _many_files(tag: str) -> Callable[[TreeReader], dict[str, bytes]]:
    def build(tree: TreeReader) -> dict[str, bytes]:
        files = {f"{tag}/f{i:03d}.json": f'{{"{tag}": {i}}}'.encode() for i in range(_MANY)}
        files["log.txt"] = (tree.read("log.txt") or b"") + f"{tag}\n".encode()
        return files

    return build


def _hook(bare: Path, name: str, script: str) -> None:
    path = bare / "hooks" / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_a_repack_between_a_big_push_and_its_ref_update_loses_nothing(tmp_path: Path) -> None:
    """The ``pre-receive`` hook runs where a concurrent repack hurts most: after the
    push's pack is in the remote, before its ref moves. Before the fix the repack deleted
    the pack and the branch then named a missing commit (``git fsck`` failed)."""
    repo = MetadataRepo.init(tmp_path / "origin", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "origin")
    repo.commit_and_push(_many_files("a"), "a", ME)
    _hook(bare, "pre-receive", "cat >/dev/null\nunset GIT_DIR\ngit repack -a -d -q\n")
    new = repo.commit_and_push(_many_files("b"), "b", ME)
    assert git(bare, "rev-parse", "main").strip() == new
    assert not [f for f in os.listdir(bare / "objects" / "pack") if f.endswith(".keep")]
    (bare / "hooks" / "pre-receive").unlink()
    assert_git_accepts(bare, tmp_path, writes=2)


def test_big_pushes_beside_a_git_repack_loop_lose_nothing(tmp_path: Path) -> None:
    """Big pushes while a colleague runs ``git repack -a -d`` over and over."""
    repo = MetadataRepo.init(tmp_path / "origin", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "origin")
    stop = threading.Event()

    def repack() -> None:
        while not stop.is_set():
            subprocess.run([GIT or "git", "-C", str(bare), "repack", "-a", "-d", "-q"],
                           capture_output=True, check=False)  # fmt: skip

    colleague = threading.Thread(target=repack, daemon=True)
    colleague.start()
    failed: list[str] = []
    try:
        for i in range(12):
            try:
                repo.commit_and_push(_many_files(f"w{i}"), f"w{i}", ME)
            except DatomError as e:
                failed.append(str(e))
    finally:
        stop.set()
        colleague.join(60)
    assert failed == []
    assert_git_accepts(bare, tmp_path, writes=12)


def test_a_refused_big_push_leaves_no_keep_file(tmp_path: Path) -> None:
    """A push its hook refuses leaves its pack unreferenced and not kept (as a killed push
    leaves it), so git's gc may clean it; the branch stays where it was."""
    repo = MetadataRepo.init(tmp_path / "origin", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "origin")
    first = repo.commit_and_push(_many_files("a"), "a", ME)
    _hook(bare, "pre-receive", "cat >/dev/null\necho no big pushes today >&2\nexit 1\n")
    with pytest.raises(GitError, match="pre-receive hook"):
        repo.commit_and_push(_many_files("b"), "b", ME)
    assert git(bare, "rev-parse", "main").strip() == first
    assert not [f for f in os.listdir(bare / "objects" / "pack") if f.endswith(".keep")]
