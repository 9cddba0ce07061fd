"""Reading a local remote's branches strictly (private to the git layer).

dulwich reads a ref file that cannot be opened (another user's, written with umask 077;
an NFS read error) as a ref that does not exist. For a remote that would make a branch
look absent, and datom would take the remote for empty: retry "concurrent writers" that
are not there, or reset a clone to nothing. Here a ref that exists but cannot be read or
parsed is a :class:`GitError` naming the file, its owner and mode, and the remedy.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._errors import GitError

__all__ = ["read_branch", "read_branches"]


_HEADS = b"refs/heads/"
_SHA1 = re.compile(rb"[0-9a-f]{40}")
_DEPTH = 5  # symbolic refs followed, as git does (it allows 5)


def _unreadable(file: Path, e: OSError, url: str) -> GitError:
    try:
        st = os.stat(file)
        whose = f" (owner uid {st.st_uid}, group gid {st.st_gid}, mode {st.st_mode & 0o7777:04o})"
    except OSError:
        whose = ""
    hint = (
        "another user wrote it with a private umask: make the remote group-shared "
        f"(git -C {url} config core.sharedRepository group, then chgrp -R <group> and "
        "chmod -R g+rwX it) or ask its owner to"
        if isinstance(e, PermissionError)
        else "check the filesystem holding the remote"
    )
    return GitError(
        f"Cannot read {file}{whose}, a ref of the remote {url}: {e.strerror or e}. Nothing "
        f"was changed; {hint}, then retry."
    )


def _parse(data: bytes, file: Path, url: str) -> bytes:
    """The commit id ``data`` holds (a SHA-256 remote was refused when it was opened)."""
    line = data.split(b"\n", 1)[0].strip()
    if _SHA1.fullmatch(line):
        return line
    raise GitError(
        f"Cannot parse {file}, a ref of the remote {url}: it holds {line[:60]!r}, not a "
        "commit id. Nothing was changed; repair or remove it with git (git update-ref)."
    )


def _packed(root: Path, url: str) -> dict[bytes, bytes]:
    file = root / "packed-refs"
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise _unreadable(file, e, url) from e
    refs = {}
    for line in data.splitlines():
        if not line or line.startswith((b"#", b"^")):
            continue
        sha, _, name = line.partition(b" ")
        refs[name.strip()] = _parse(sha, file, url)
    return refs


def read_branch(root: Path, name: bytes, url: str) -> bytes | None:
    """The commit the ref ``name`` of the bare repository ``root`` holds (None: there is
    no such ref); :class:`GitError` when it exists but cannot be read or parsed."""
    for _ in range(_DEPTH):
        file = root / os.fsdecode(name)
        try:
            data = file.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return _packed(root, url).get(name)
        except OSError as e:
            raise _unreadable(file, e, url) from e
        if not data.startswith(b"ref: "):
            return _parse(data, file, url)
        name = data[len(b"ref: ") :].split(b"\n", 1)[0].strip()
    raise GitError(f"The ref {name!r} of the remote {url} is a loop of symbolic refs.")


def read_branches(root: Path, url: str) -> dict[bytes, bytes]:
    """Every branch of the bare repository ``root``, strictly (see :func:`read_branch`)."""

    def fail(e: OSError) -> None:  # a folder of refs that cannot be listed is an error too
        if not isinstance(e, FileNotFoundError):
            raise _unreadable(Path(e.filename or ""), e, url) from e

    found = {n: s for n, s in _packed(root, url).items() if n.startswith(_HEADS)}
    for folder, _dirs, files in os.walk(root / "refs" / "heads", onerror=fail):
        for file in files:
            if file.endswith(".lock"):
                continue
            rel = os.fsencode(
                os.path.relpath(os.path.join(folder, file), root).replace(os.sep, "/")
            )
            sha = read_branch(root, rel, url)
            if sha is not None:
                found[rel] = sha
    return found
