"""The git command line, for tests that have real git judge what datom wrote."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["GIT", "git", "needs_git"]

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
