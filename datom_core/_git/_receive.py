"""What ``git receive-pack`` does around a ref update, for pushes datom makes into a local
repository itself (private to the git layer).

* **Hooks.** ``pre-receive`` (the updates on its standard input, one ``<old> <new>
  <ref>`` line each) and ``update`` (``<ref> <old> <new>`` as arguments) run before the
  ref moves, in the repository, with ``GIT_DIR`` set; either one exiting non-zero refuses
  the push (its output is in the error). ``post-receive`` (same input as ``pre-receive``)
  and ``post-update`` (the ref as argument) run after; their failure is logged, the push
  stands, as git has it. Objects are in the repository before ``pre-receive`` runs (git
  quarantines them; here a refused push leaves them unreferenced, as a killed one does).
* **A non-bare repository's checked-out branch** is refused as git refuses it
  (``receive.denyCurrentBranch``, default ``refuse``; ``warn``/``ignore``/``false`` let
  it through; ``updateInstead`` is refused too: datom does not update another working
  tree).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from dulwich.repo import Repo

from .._errors import GitError

__all__ = ["check_current_branch", "post_receive", "pre_receive"]

log = logging.getLogger("datom_core.git")

_ZERO = b"0" * 40
_HOOK_TIMEOUT = 600.0
_ALLOWED = {b"warn", b"ignore", b"false", b"no", b"off", b"0"}


def _hook(gitdir: Path, name: str) -> Path | None:
    path = gitdir / "hooks" / name
    return path if os.access(path, os.X_OK) and path.is_file() else None


def _run(
    hook: Path, gitdir: Path, args: list[str], stdin: bytes
) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, GIT_DIR=".")
    try:
        return subprocess.run(
            [str(hook), *args],
            input=stdin,
            cwd=gitdir,
            env=env,
            capture_output=True,
            timeout=_HOOK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess([str(hook)], 1, b"", str(e).encode())


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr + done.stdout).decode("utf-8", "replace").strip()
    return " ".join(text.split())[:500] or "no output"


def _line(ref: bytes, old: bytes | None, new: bytes) -> tuple[bytes, bytes]:
    return old or _ZERO, new


def pre_receive(gitdir: Path, url: str, ref: bytes, old: bytes | None, new: bytes) -> None:
    """Run ``pre-receive`` and ``update``; :class:`GitError` if either refuses."""
    was, now = _line(ref, old, new)
    for name, args, stdin in (
        ("pre-receive", [], b"%s %s %s\n" % (was, now, ref)),
        ("update", [os.fsdecode(ref), was.decode(), now.decode()], b""),
    ):
        hook = _hook(gitdir, name)
        if hook is None:
            continue
        done = _run(hook, gitdir, args, stdin)
        if done.returncode != 0:
            raise GitError(
                f"The remote {url} refused the push of {os.fsdecode(ref)}: its {name} hook "
                f"exited with {done.returncode} ({_said(done)}). Nothing was recorded; "
                "do what the hook asks, or ask the repository's owner."
            )


def post_receive(gitdir: Path, ref: bytes, old: bytes | None, new: bytes) -> None:
    """Run ``post-receive`` and ``post-update``; a failure is logged, the push stands."""
    was, now = _line(ref, old, new)
    for name, args, stdin in (
        ("post-receive", [], b"%s %s %s\n" % (was, now, ref)),
        ("post-update", [os.fsdecode(ref)], b""),
    ):
        hook = _hook(gitdir, name)
        if hook is None:
            continue
        done = _run(hook, gitdir, args, stdin)
        if done.returncode != 0:
            log.warning("the %s hook of %s failed (%s): the push stands", name, gitdir, _said(done))


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
