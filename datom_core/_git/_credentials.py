"""How git reaches a remote, followed by datom: the address git's ``url.<base>.insteadOf``
rules give it (:func:`effective_url`), and, for a remote datom was given no token for, the
credentials git's own credential helpers hold (``git credential fill``: the ``store`` and
``cache`` helpers, a desktop keychain, Git Credential Manager, ``gh auth setup-git``, a
``GIT_ASKPASS`` script in CI), asked only when the server answers 401, as git asks.

datom never prompts on a terminal (``GIT_TERMINAL_PROMPT=0``: a Dagster worker has none),
never erases a stored credential (git's ``reject``: it is the user's), and tells the helper
of credentials that worked (git's ``approve``), so a helper that keeps what it was told
(``cache``, a keychain after a login) keeps them. Without the git command line there are
no helpers to ask.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

from dulwich.config import Config, apply_instead_of

from .._errors import GitError
from ._remote import GitCredentials, check_supported, normalize_remote, scrub
from ._types import repository_env

__all__ = ["CredentialHelpers", "effective_url"]

log = logging.getLogger("datom_core.git")

_PATIENCE = 120.0  # seconds a helper may take (a keychain unlock, a browser login)


def effective_url(url: str, config: Config) -> tuple[str, GitCredentials | None]:
    """``origin``'s URL rewritten by git's ``url.<base>.insteadOf`` (the longest match), as
    git reaches the remote, and any credentials the rewrite puts in it (used, never
    stored). A rewrite to an address datom does not speak (ssh: a developer's way to use
    their key for a host) leaves the URL as it is, which reaches the same repository."""
    rewritten = apply_instead_of(config, url)
    if rewritten != url:
        try:
            check_supported(rewritten)
            return normalize_remote(rewritten)
        except GitError:
            log.info("git reaches %s as %s, which datom does not speak", url, scrub(rewritten))
    check_supported(url)
    return url, None


class CredentialHelpers:
    """git's credential helpers for ``url``, configured as git reads them from ``cwd``
    (the clone: its own ``.git/config`` may name a helper)."""

    def __init__(self, url: str, cwd: Path | None) -> None:
        self.url = url
        self._cwd = cwd if cwd is not None and cwd.is_dir() else None

    def fill(self) -> GitCredentials | None:
        """The username and password a helper gives for the URL; None when none does."""
        said = self._run("fill", f"url={self.url}\n")
        fields = dict(line.split("=", 1) for line in (said or "").splitlines() if "=" in line)
        password, username = fields.get("password"), fields.get("username")
        if not password or not username or ":" in username:
            return None
        return GitCredentials(token=password, username=username)

    def approve(self, creds: GitCredentials) -> None:
        """Tell the helpers the credentials worked (git does, after a request they passed)."""
        self._run("approve", f"url={self.url}\nusername={creds.username}\npassword={creds.token}\n")

    def _run(self, action: str, text: str) -> str | None:
        git = shutil.which("git")
        if git is None:
            return None
        env = repository_env(GIT_TERMINAL_PROMPT="0")  # the clone's git, not another's
        try:
            done = subprocess.run(
                [git, "credential", action],
                input=text + "\n",
                capture_output=True,
                text=True,
                env=env,
                cwd=self._cwd,
                timeout=_PATIENCE,
            )
        except (OSError, subprocess.SubprocessError) as e:
            log.warning(
                "git credential %s for %s did not answer: %s", action, self.url, type(e).__name__
            )
            return None
        # No helper has one and prompts are off: git says so and exits 128. Its words are
        # not logged: a helper's message may quote what it was given.
        return done.stdout if done.returncode == 0 else None
