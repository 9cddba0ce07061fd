"""What ``git receive-pack`` does around a ref update, for pushes datom makes into a local
repository itself (private to the git layer).

* **Hooks.** ``pre-receive`` (the updates on its standard input, one ``<old> <new>
  <ref>`` line each) and ``update`` (``<ref> <old> <new>`` as arguments) run before the
  ref moves, in the repository, with ``GIT_DIR`` set; either one exiting non-zero refuses
  the push (its output is in the error). ``post-receive`` (same input as ``pre-receive``)
  and ``post-update`` (the ref as argument) run after; their failure is logged, the push
  stands, as git has it. They are found where receive-pack looks: ``core.hooksPath``
  (shared hooks a team points its repositories at), else ``hooks/``. Objects are in the
  repository before ``pre-receive`` runs (git quarantines them; here a refused push
  leaves them unreferenced, as a killed one does).
* **A non-bare repository's checked-out branch** is refused as git refuses it
  (``receive.denyCurrentBranch``, default ``refuse``; ``warn``/``ignore``/``false`` let
  it through; ``updateInstead`` is refused too: datom does not update another working
  tree).
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from dulwich.repo import Repo

from .._errors import GitError
from ._settings import config_stamp
from ._types import config_stack, repository_env

__all__ = ["check_current_branch", "hooks_of", "post_receive", "pre_receive"]

log = logging.getLogger("datom_core.git")

_ZERO = b"0" * 40
_HOOK_TIMEOUT = 600.0
_ALLOWED = {b"warn", b"ignore", b"false", b"no", b"off", b"0"}
_SEEN: dict[Path, tuple[object, Path]] = {}  # a remote's git folder -> (config stamp, hooks)


def hooks_of(remote: Repo) -> tuple[Path, Path]:
    """``remote``'s git folder, where a push's hooks run, and where receive-pack finds
    them: ``core.hooksPath`` (its configuration, the user's or the system's, unreadable
    ones skipped as git skips them; a relative one from that folder), else ``hooks/``.
    Read again when the remote's configuration changes."""
    gitdir = Path(remote.controldir())
    stamp, seen = config_stamp(remote), _SEEN.get(gitdir)
    if seen is None or seen[0] != stamp:
        try:
            value = config_stack(remote).get((b"core",), b"hooksPath")
            seen = _SEEN[gitdir] = (stamp, gitdir / os.path.expanduser(os.fsdecode(value)))
        except KeyError:
            seen = _SEEN[gitdir] = (stamp, gitdir / "hooks")
    return gitdir, seen[1]


def _failed(
    where: tuple[Path, Path], ref: bytes, old: bytes | None, new: bytes, stage: str
) -> Iterator[tuple[str, str]]:
    """Run the hooks of ``stage`` (``pre``: ``pre-receive`` and ``update``; ``post``:
    ``post-receive`` and ``post-update``) in order (``where``: :func:`hooks_of`); yield
    each failed one's name and what it said (its exit status and output)."""
    (gitdir, hooks), was, name = where, old or _ZERO, os.fsdecode(ref)
    second = (
        ["update", name, was.decode(), new.decode()] if stage == "pre" else ["post-update", name]
    )
    for hook, *args in ([f"{stage}-receive"], second):
        path = hooks / hook
        if not (os.access(path, os.X_OK) and path.is_file()):
            continue
        stdin = b"" if args else b"%s %s %s\n" % (was, new, ref)
        try:
            env = repository_env(config=True, GIT_DIR=".")  # as git enters the remote
            done = subprocess.run([str(path), *args], input=stdin, cwd=gitdir, env=env,
                                  capture_output=True, timeout=_HOOK_TIMEOUT)  # fmt: skip
            status, said = done.returncode, done.stderr + done.stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            status, said = 1, str(e).encode()
        if status != 0:
            text = " ".join(said.decode("utf-8", "replace").split())[:500] or "no output"
            yield hook, f"exited with {status} ({text})"


def pre_receive(
    where: tuple[Path, Path], url: str, ref: bytes, old: bytes | None, new: bytes
) -> None:
    """Run ``pre-receive`` and ``update``; :class:`GitError` if either refuses."""
    for name, said in _failed(where, ref, old, new, "pre"):
        raise GitError(
            f"The remote {url} refused the push of {os.fsdecode(ref)}: its {name} hook "
            f"{said}. Nothing was recorded; do what the hook asks, or ask the repository's "
            "owner."
        )


def post_receive(where: tuple[Path, Path], ref: bytes, old: bytes | None, new: bytes) -> None:
    """Run ``post-receive`` and ``post-update``; a failure is logged, the push stands."""
    for name, said in _failed(where, ref, old, new, "post"):
        log.warning("the %s hook of %s %s: the push stands", name, where[0], said)


def check_current_branch(remote: Repo, url: str, ref: bytes) -> None:
    """:class:`GitError` for a push to the branch ``remote`` (a repository with a working
    tree) has checked out, unless its ``receive.denyCurrentBranch`` lets it through."""
    head = remote.refs.read_ref(b"HEAD") or b""  # type: ignore[arg-type]
    if head != b"ref: " + ref:
        return
    try:
        value = remote.get_config().get((b"receive",), b"denyCurrentBranch").strip().lower()
    except KeyError:
        value = b"refuse"
    if value in _ALLOWED:
        return
    branch = os.fsdecode(ref).removeprefix("refs/heads/")
    raise GitError(
        f"The remote {url} is a repository with a working tree that has {branch} checked "
        "out: git refuses pushes to it (receive.denyCurrentBranch), and so does datom. "
        "Nothing was recorded. Use a bare repository as the remote (git clone --bare)."
    )
