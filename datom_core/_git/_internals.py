"""dulwich-level helpers behind :mod:`datom_core._git` (private to the git layer).

Paths, branch names, configuration and refs, on an open :class:`dulwich.repo.Repo`;
dulwich's exceptions become datom's own (:class:`GitError`, :class:`InvalidNameError`).
"""

from __future__ import annotations

import os
import secrets
import struct
from collections.abc import Callable, Collection, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

from dulwich import porcelain
from dulwich.config import ConfigFile
from dulwich.errors import ChecksumMismatch, NotGitRepository
from dulwich.file import GitFile
from dulwich.graph import can_fast_forward
from dulwich.index import EXTENDED_FLAG_SKIP_WORKTREE as SKIP
from dulwich.index import IndexEntry, index_entry_from_stat, validate_path
from dulwich.objects import ObjectID
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from .._errors import GitError, InvalidNameError
from .._plain import plain
from ._fast._index import FastIndex, UnsupportedIndex
from ._gitlocks import unstale

T = TypeVar("T")

HEADS = b"refs/heads/"
TRACKING = b"refs/remotes/origin/"
FETCHED = b"refs/datom/fetched/"  # what the last fetch brought: see set_fetched
FILE_MODE = 0o100644


# -- paths and files --------------------------------------------------------------------


def check_relpath(relpath: str) -> None:
    """Refuse anything but a relative POSIX path inside the working tree: git's rule for a
    tree entry (``validate_path``: no empty, ``.``, ``..`` or ``.git`` part, in any case),
    and no ``\\`` or NUL."""
    raw = relpath.encode("utf-8", "surrogateescape")
    if not validate_path(raw) or "\\" in relpath or "\0" in relpath:
        raise InvalidNameError(
            f"Invalid repository path {relpath!r}: use a relative path like "
            "'table/metadata.json' (no '..', no leading '/', nothing under .git)."
        )


def write_file_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with exactly ``data``; a crash leaves the old or the new file.

    Not fsynced: this is the clone's journal, or a working-tree file; they mirror objects
    git already holds (a power cut may leave a file stale; the next sync rewrites what
    differs from HEAD). A symbolic link or a hard link at ``path`` is replaced, not
    followed: the other name keeps its bytes. Folders are made only when the first try
    finds one missing.
    """
    replace_path(path, lambda tmp: _new_file(tmp, data))


def write_worktree_file(path: Path, data: bytes) -> None:
    """Make the working-tree file ``path`` hold exactly ``data``, under a journal that lists
    it (``WorkTree.journal``): a crash midway leaves bytes the next operation replaces."""
    write_file_atomic(path, data)


def remove_worktree_file(target: Path, root: Path) -> None:
    """Remove ``target`` and the folders it leaves empty, up to ``root``."""
    target.unlink(missing_ok=True)
    parent = target.parent
    while parent != root:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


_UNREADABLE = (ChecksumMismatch, ValueError, struct.error, AssertionError)


def damaged_index(clone: Path, index: Path, why: object) -> GitError:
    """The error of an index that is no index git reads (truncated, overwritten: a disk
    that filled, a power cut; ``git fsck`` says so too), and git's remedy."""
    return GitError(
        f"The index of the clone {clone} is damaged ({why}): what git records is not "
        f"affected. Rebuild it from HEAD (rm {index} && git -C {clone} reset -q), then "
        "retry: the next datom command on this clone finishes any update left."
    )


def worktree_error(clone: Path, e: OSError, doing: str) -> GitError:
    """The error of a working-tree update that stopped at ``doing`` (a path, the index,
    the journal): git's objects and refs are not affected, and the journal lets the next
    operation finish it."""
    return GitError(
        f"Could not update the working tree of {clone} ({doing}): {e.strerror or e}. What "
        "git records is not affected; fix the cause (free disk space, restore write "
        "permission) and run any datom command on this clone: it finishes the update."
    )


def replace_path(path: Path, make: Callable[[Path], None]) -> None:
    """Put what ``make(tmp)`` creates (a file, a symbolic link) at a new, unique name
    beside ``path`` in place of ``path``, making its folders when ``make`` finds one
    missing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        make(tmp)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        make(tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _new_file(tmp: Path, data: bytes) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- configuration and refs -------------------------------------------------------------


def check_branch(branch: str) -> None:
    """Refuse the branch names ``git check-ref-format --branch`` refuses."""
    name = Ref(HEADS + branch.encode("utf-8", "surrogateescape"))
    if branch.startswith("-") or not check_ref_format(name):
        raise GitError(f"Invalid branch name {branch!r}.")


def configure(r: Repo, url: str, branch: str) -> None:
    """Point ``origin`` at ``url`` and make ``branch`` track it."""
    config = r.get_config()
    config.set((b"remote", b"origin"), b"url", url.encode())
    config.set((b"remote", b"origin"), b"fetch", b"+refs/heads/*:refs/remotes/origin/*")
    config.set((b"branch", branch.encode()), b"remote", b"origin")
    config.set((b"branch", branch.encode()), b"merge", HEADS + branch.encode())
    # The files are datom's JSON/YAML documents whose bytes are hashed: no EOL conversion.
    config.set((b"core",), b"autocrlf", b"false")
    _fast_loose_objects(config)
    config.write_to_path()


def _fast_loose_objects(config: ConfigFile) -> None:
    """Loose objects at zlib level 1: they live only until a compaction packs them, and a
    big project's megabyte manifest is written loose on every write."""
    config.set((b"core",), b"looseCompression", b"1")


def init_bare(bare: Path, branch: str) -> None:
    """Create the bare repository ``bare``, or accept it if it exists and holds no branch."""
    if bare.exists():
        try:
            with closing(Repo(str(bare))) as existing:
                if existing.bare and not existing.refs.keys(base=Ref(HEADS)):
                    return
        except NotGitRepository:
            pass
        raise GitError(
            f"The embedded remote {bare} already exists and is not an empty bare repository: "
            f"clone it instead (MetadataRepo.clone({str(bare)!r}, ...)) or move it away."
        )
    bare.parent.mkdir(parents=True, exist_ok=True)
    with closing(Repo.init_bare(str(bare), mkdir=True, default_branch=branch.encode())) as r:
        config = r.get_config()
        _fast_loose_objects(config)
        config.write_to_path()


def clone_folder(r: Repo) -> str:
    """The folder of ``r``'s working tree as a person names it (a submodule's is reached
    through ``core.worktree``, a path of ``..`` parts)."""
    return os.path.normpath(r.path)


def remote_url(r: Repo) -> str:
    """The stored ``origin`` URL."""
    try:
        return r.get_config().get((b"remote", b"origin"), b"url").decode()
    except KeyError:
        raise GitError(f"{clone_folder(r)} has no 'origin' remote configured.") from None


def branch_ref(r: Repo) -> bytes:
    """The ref HEAD points at, e.g. ``refs/heads/main``; :class:`GitError` naming the
    branch to check out when HEAD is detached: datom reads and writes the project on its
    branch, so a clone whose HEAD is not on one is refused before anything is read."""
    raw = r.refs.read_ref(Ref(b"HEAD")) or b""
    target = raw[len(b"ref: ") :].strip() if raw.startswith(b"ref: ") else None
    if target is not None and target.startswith(HEADS):
        return target
    clone = clone_folder(r)
    for marker, doing, remedy in _IN_PROGRESS:
        if os.path.exists(os.path.join(r.controldir(), marker)):
            raise GitError(
                f"A {doing} is in progress in {clone} (its HEAD is not on a branch): datom "
                f"works on the project's branch. Finish it or stop it ({remedy}), then retry."
            )
    where = f"detached at {raw[:12].decode()}" if target is None else f"on {target.decode()}"
    raise GitError(
        f"HEAD of {clone} is {where} (a checkout of a commit or tag, git submodule update, "
        "a CI job's checkout): datom works on the project's branch. Check it out first: "
        f"git -C {clone} checkout {_branch_to_check_out(r)} (or read from the store alone: "
        "connect(store=..., project_name=...))."
    )


# git's operations that leave HEAD off the branch until they end: git status's words.
_IN_PROGRESS = (
    ("rebase-merge", "rebase", "git rebase --continue, or git rebase --abort"),
    ("rebase-apply", "rebase", "git rebase --continue, or git rebase --abort"),
    ("BISECT_LOG", "bisect", "git bisect reset"),
)


def _branch_to_check_out(r: Repo) -> str:
    """The project's branch as git would name it to ``checkout``: the clone's only local
    branch, else the one ``origin`` names or holds alone."""
    local = r.refs.keys(base=Ref(HEADS))
    if len(local) == 1:
        return next(iter(local)).decode()
    named = r.refs.read_ref(Ref(TRACKING + b"HEAD")) or b""
    if named.startswith(b"ref: " + TRACKING):
        return named[len(b"ref: " + TRACKING) :].strip().decode()
    remote = r.refs.keys(base=Ref(TRACKING)) - {b"HEAD"}
    return next(iter(remote)).decode() if len(remote) == 1 else "<branch>"


def tracking_ref(branch: bytes) -> bytes:
    """``refs/heads/x`` -> ``refs/remotes/origin/x``."""
    return TRACKING + branch[len(HEADS) :]


def short(branch: bytes) -> str:
    """``refs/heads/x`` -> ``x``."""
    return branch[len(HEADS) :].decode()


def set_ref(r: Repo, name: bytes, sha: bytes) -> None:
    """Point ``name`` at ``sha`` (under the clone lock); nothing is written when it already
    does. dulwich fsyncs the ref file: in a clone that guards against a power cut leaving
    an empty ref (a fetch repairs a stale one, not a missing one)."""
    if get_ref(r, name) == sha:
        return
    refs: Any = r.refs
    unstale(lambda: refs.__setitem__(name, sha))


def set_tracking(r: Repo, branch: bytes, sha: bytes) -> None:
    """Point ``branch``'s remote-tracking ref at ``sha`` (under the clone lock), by git's
    lock-file protocol (dulwich's ``GitFile``) but without an fsync: it only records what
    the remote held (a stale or, after a power cut on a filesystem that allows it,
    unreadable one is read as absent by :func:`tracking`, and the next fetch or push
    writes it again)."""
    if tracking(r, branch) != sha:
        _write_unsynced(r, tracking_ref(branch), sha)


def set_fetched(r: Repo, branch: bytes, sha: bytes) -> None:
    """Point ``refs/datom/fetched/<branch>`` at the tip a fetch of ``branch`` brought (under
    the clone lock), as :func:`set_tracking` writes: git's repack and gc keep what a ref
    reaches, so the fetched objects stay until the clone's own refs reach them."""
    _write_unsynced(r, FETCHED + branch[len(HEADS) :], sha)


def _write_unsynced(r: Repo, name: bytes, sha: bytes) -> None:
    path = Path(r.commondir()) / os.fsdecode(name)  # shared by a clone's linked worktrees
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        with GitFile(path, "wb", fsync=False) as f:
            f.write(sha + b"\n")

    unstale(write)


def tracking(r: Repo, branch: bytes) -> bytes | None:
    """The sha ``branch``'s remote-tracking ref holds; None if absent or unreadable."""
    try:
        sha = r.refs[Ref(tracking_ref(branch))]
    except (KeyError, ValueError, OSError):
        return None
    return sha if len(sha) == 40 and all(c in b"0123456789abcdef" for c in sha) else None


def swap_ref(r: Repo, name: bytes, old: bytes | None, new: bytes) -> bool:
    """Compare-and-swap ``name`` from ``old`` (None: absent) to ``new``."""
    refs: Any = r.refs
    if old is None:
        return bool(unstale(lambda: refs.add_if_new(name, new)))
    return bool(unstale(lambda: refs.set_if_equals(name, old, new)))


def drop_ref(r: Repo, name: bytes, old: bytes | None = None) -> None:
    """Delete ``name`` (if it still points at ``old``, when given)."""
    refs: Any = r.refs
    unstale(lambda: refs.remove_if_equals(name, old))


def set_head(r: Repo, branch: bytes) -> None:
    """Make HEAD name ``branch``."""
    refs: Any = r.refs
    unstale(lambda: refs.set_symbolic_ref(b"HEAD", branch))


def hex_or_none(sha: bytes | None) -> str | None:
    return sha.decode() if sha is not None else None


def get_ref(r: Repo, name: bytes) -> bytes | None:
    """The sha a ref points at, or ``None``."""
    try:
        return r.refs[Ref(name)]
    except KeyError:
        return None


def head(r: Repo) -> bytes | None:
    """The sha of HEAD's branch, or ``None`` while it is unborn."""
    return get_ref(r, branch_ref(r))


def is_ancestor(r: Repo, ancestor: bytes, descendant: bytes) -> bool:
    """Whether ``descendant`` contains ``ancestor`` (or is it)."""
    if ancestor == descendant:
        return True
    if ObjectID(ancestor) not in r.object_store:
        return False  # every ancestor of a local commit is local
    return can_fast_forward(r, ObjectID(ancestor), ObjectID(descendant))


# -- committing and resetting -----------------------------------------------------------


def update_index(
    fast: FastIndex,
    r: Repo,
    root: Path,
    changes: Mapping[bytes, bytes | None],
    modes: Mapping[bytes, int] | None = None,
    left_out: Collection[bytes] = (),
) -> None:
    """Make the clone's index hold ``path -> blob`` (None: no entry) for the files just
    written under ``root`` (``modes``: those not plain files; ``left_out``: paths a sparse
    checkout keeps out of the working tree, marked skip-worktree): patched by the
    accelerator :class:`FastIndex`; dulwich's way (the plain path) for an index git wrote
    in a form it does not patch, and under ``DATOM_PLAIN=1``."""
    modes = modes or {}
    try:
        if plain() or left_out:
            raise UnsupportedIndex("the plain path")
        unstale(lambda: fast.update(root, changes, modes))
    except UnsupportedIndex:
        try:
            index = r.open_index()
        except _UNREADABLE as e:  # dulwich's checks of the bytes
            raise damaged_index(root, Path(r.index_path()), e) from None
        for path, sha in changes.items():
            if sha is None:
                if path in index:
                    del index[path]
            elif path in left_out:
                mode = modes.get(path, FILE_MODE)
                index[path] = IndexEntry(0, 0, 0, 0, mode, 0, 0, 0, ObjectID(sha), 0, SKIP)
            else:
                st = os.lstat(root / os.fsdecode(path))
                index[path] = index_entry_from_stat(st, sha, mode=modes.get(path, FILE_MODE))
        unstale(index.write)


def require_clean(r: Repo) -> None:
    """:class:`GitError` if tracked files have staged or unstaged changes."""
    status = porcelain.status(r, untracked_files="no")
    dirty = [p for paths in status.staged.values() for p in paths] + list(status.unstaged)
    if dirty:
        names = ", ".join(sorted({os.fsdecode(p) for p in dirty})[:5])
        raise GitError(
            f"{clone_folder(r)} has uncommitted changes to tracked files ({names}): commit "
            "them, or drop them with fetch_and_reset(), before pulling."
        )
