"""A repository another user owns, by git's rule (``safe.directory``; private to the git
layer).

A repository's configuration names programs that run for whoever works in it: a
credential helper, a signing program, the hooks of a local remote. So git (since 2.35.2)
refuses a repository whose folders another user owns, "detected dubious ownership",
unless the user's own configuration lists it in ``safe.directory``: the system's, the
global one or the command's (``git -c``, ``GIT_CONFIG_COUNT``), never the repository's
own. A value is a path, a path ending in ``/*`` (every repository below it), or ``*``;
an empty value clears the ones read before it. root owns what root owns and, run through
``sudo``, what ``SUDO_UID`` owns. datom refuses such a repository in git's words before
it uses anything of its configuration (:func:`check_owned`). A local remote is one git
enters with receive-pack or upload-pack, whose environment is cleared of the command's
settings: only the system's and global ones count there.
"""

from __future__ import annotations

import os
from pathlib import Path

from dulwich.repo import Repo

from .._errors import GitError
from ._types import command_settings, user_config

__all__ = ["check_owned"]


def check_owned(r: Repo, what: str, remote: bool) -> None:
    """:class:`GitError` when another user owns ``r`` (its folder, its git folder, or a
    linked worktree's ``.git`` file) and ``safe.directory`` does not list it; ``remote``:
    a local remote (the command's settings do not count)."""
    top = Path(r.path)
    folders = [top, Path(r.controldir())]
    if (top / ".git").is_file():
        folders.append(top / ".git")
    foreign = [p for p in folders if not _owned(p)]
    if not foreign or _listed(os.path.realpath(top), _safe_directories(remote)):
        return
    scope = " (the command's settings, GIT_CONFIG_*, do not reach a local remote)" if remote else ""
    raise GitError(
        f"{what} is owned by another user ({foreign[0]}{_whose(foreign[0])}): git refuses "
        'such a repository ("detected dubious ownership"), as its configuration may run '
        "programs as you, and so does datom. Nothing was read or changed. If you trust it, "
        f"add it to your git configuration: git config --global --add safe.directory {top}"
        f"{scope}"
    )


def _owned(path: Path) -> bool:
    """Whether ``path`` is the current user's as git sees it (what cannot be looked at
    is not): root's own files are root's, and root run through sudo owns ``SUDO_UID``'s."""
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return False
    euid = os.geteuid()
    if euid == 0 and owner != 0:
        sudo = os.environ.get("SUDO_UID", "")
        return sudo.isdigit() and owner == int(sudo)
    return owner == euid


def _whose(path: Path) -> str:
    try:
        return f", user id {os.stat(path).st_uid}"
    except OSError:
        return ", which cannot be looked at"


def _safe_directories(remote: bool) -> list[str]:
    """``safe.directory``'s values in the order git reads them: the system's file, the
    global ones, then the command's (not for a local ``remote``)."""
    values: list[str] = []
    for config in reversed(user_config().backends):  # listed as git gives them precedence
        try:
            found = config.get_multivar((b"safe",), b"directory")
        except KeyError:  # no [safe] section
            continue
        values += [v.decode("utf-8", "replace") for v in found]
    if not remote:
        values += [v for k, v in command_settings() if (k or "").lower() == "safe.directory" and v is not None]  # fmt: skip
    return values


def _listed(top: str, values: list[str]) -> bool:
    """Whether ``values`` make the repository at the real path ``top`` safe."""
    safe = False
    for value in values:
        path = os.path.expanduser(value)
        if not value:
            safe = False  # an empty value clears the list read so far
        elif value == "*":
            safe = True
        elif path.endswith("/*"):
            base = os.path.realpath(path[:-2]).rstrip("/")
            safe = safe or top == base or top.startswith(base + "/")
        else:
            safe = safe or os.path.realpath(path) == top
    return safe
