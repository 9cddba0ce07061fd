"""Remotes and a colleague for ``bench_concurrency``'s server phases.

A remote is dulwich's smart-HTTP server, git's own ``git http-backend`` (the test servers
of ``tests/gitserver.py`` and ``tests/gitbackend.py``, on loopback with a token) or a local
bare repository. The colleague is the git command line: a clone of the remote whose
``NOTES.md`` gets a line, a commit and a ``git push`` over and over (pulling with
``--rebase`` when the push is rejected), beside datom's writers.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVERS = ("dulwich", "git http-backend", "local bare")


@contextmanager
def remote(kind: str, root: Path) -> Iterator[tuple[str | None, str | None]]:
    """``(url, token)`` of an empty remote of ``kind`` (url None: datom's embedded local
    bare repository, made by ``init_repo``), served while the block runs."""
    if kind == "local bare":
        yield None, None
        return
    import sys

    if str(REPO_ROOT) not in sys.path:
        sys.path.append(str(REPO_ROOT))
    from tests.gitbackend import GitBackendServer
    from tests.gitserver import GitHTTPServer

    folder = root / "served"
    folder.mkdir()
    cls = GitHTTPServer if kind == "dulwich" else GitBackendServer
    server = cls(folder, secrets.token_urlsafe(24))
    server.create_bare("proj")
    server.start()
    try:
        yield server.url_for("proj"), server.token
    finally:
        server.stop()


def git_env(token: str | None) -> dict[str, str]:
    """The colleague's environment: no system or user config, the token as a header."""
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    env.update(GIT_AUTHOR_NAME="Colleague", GIT_AUTHOR_EMAIL="colleague@example.org")
    env.update(GIT_COMMITTER_NAME="Colleague", GIT_COMMITTER_EMAIL="colleague@example.org")
    if token:
        basic = base64.b64encode(f"colleague:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0="http.extraHeader",
            GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}",
        )
    return env


class Colleague:
    """A ``git push`` loop on ``url`` from a clone at ``work`` (see the module docstring)."""

    def __init__(self, url: str, token: str | None, work: Path, pause: float = 0.0) -> None:
        self.env = git_env(token)
        self.pause = pause
        self.work = work
        self.pushes = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._git("clone", "-q", url, str(work), cwd=work.parent)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _git(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=cwd or self.work, env=self.env, capture_output=True, text=True
        )

    def _loop(self) -> None:
        while not self._stop.is_set():
            n = self.pushes + 1
            with open(self.work / "NOTES.md", "a") as f:
                f.write(f"note {n}\n")
            self._git("add", "NOTES.md")
            made = self._git("commit", "-q", "-m", f"note {n}")
            if made.returncode != 0:
                self.failures.append(f"commit: {made.stdout.strip()} {made.stderr.strip()}"[-300:])
                return
            for _ in range(50):
                done = self._git("push", "-q", "origin", "HEAD:main")
                if done.returncode == 0:
                    self.pushes += 1
                    self._stop.wait(self.pause)
                    break
                self._git("pull", "-q", "--rebase", "origin", "main")
            else:
                self.failures.append(done.stderr.strip()[-300:])
                self._git("pull", "-q", "--rebase", "origin", "main")

    def start(self) -> None:
        self._git("pull", "-q", "--rebase", "origin", "main")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)

    def notes_on(self, url: str, token: str | None, where: Path) -> int:
        """How many of the colleague's notes the remote's branch holds now."""
        done = subprocess.run(
            ["git", "clone", "-q", url, str(where)], env=git_env(token), capture_output=True
        )
        if done.returncode != 0:
            return -1
        notes = where / "NOTES.md"
        return len(notes.read_text().splitlines()) if notes.exists() else 0
