"""The git command line, for tests that have real git judge what datom wrote."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datom_core._git import Author

__all__ = ["GIT", "appending", "git", "needs_git", "own_git_config", "write_beside_git"]

WRITER = Author("Ada Lovelace", "ada@example.org")

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="the git command line is not installed")


def git(repo: Path, *args: str) -> str:
    """``git -C repo args...``'s output; the test fails with git's stderr if it fails."""
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(repo))
    done = subprocess.run(
        [GIT or "git", "-C", str(repo), *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def own_git_config(
    monkeypatch: pytest.MonkeyPatch, folder: Path, cleared: tuple[str, ...] = ()
) -> Path:
    """The user's git configuration made a file of the test's (in ``folder``, empty; its
    path returned), the system's not read, and the environment variables ``cleared``
    unset, so that each test says alone what git and datom are told."""
    for name in (*cleared, "GIT_CONFIG_COUNT"):  # git's environment's settings too
        monkeypatch.delenv(name, raising=False)
    config = folder / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return config


def write_beside_git(
    clones: dict[str, Any], writes: int, loops: list[tuple[Path, list[str]]]
) -> list[BaseException]:
    """Each clone (by name) writes ``writes`` lines to ``log.txt`` in a thread of its own
    while git runs each ``(repository, args)`` of ``loops`` over and over; every error
    raised, of any kind."""
    stop = threading.Event()

    def loop(repo: Path, args: list[str]) -> None:
        while not stop.is_set():
            subprocess.run([GIT or "git", "-C", str(repo), *args], capture_output=True)

    failed: list[BaseException] = []

    def write(clone: Any, name: str) -> None:
        for i in range(writes):
            try:
                clone.commit_and_push(appending(f"{name}{i}"), f"{name} {i}", WRITER)
            except BaseException as e:  # a DatomError, or one that escaped
                failed.append(e)

    colleagues = [threading.Thread(target=loop, args=a, daemon=True) for a in loops]
    writers = [threading.Thread(target=write, args=(c, n)) for n, c in clones.items()]
    try:
        for t in colleagues + writers:
            t.start()
        for w in writers:
            w.join(300)
    finally:
        stop.set()
        for c in colleagues:
            c.join(60)
    return failed


def appending(line: str) -> Callable[[Any], dict[str, bytes]]:
    """A ``commit_and_push`` build adding ``line`` to ``log.txt``."""

    def build(tree: Any) -> dict[str, bytes]:
        return {"log.txt": (tree.read("log.txt") or b"") + f"{line}\n".encode()}

    return build
