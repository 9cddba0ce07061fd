"""The clone's working tree and index, kept in step with HEAD (private to the git layer).

Only the changed paths are rewritten, and the index entries of those paths patched. A
change lists its paths in a journal in ``.git`` before the branch moves; a process killed
anywhere after that (or a disk that fills) leaves the list, and the next operation makes
those paths hold HEAD's bytes again (:meth:`WorkTree.recover`). Every caller holds the
clone's lock.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from dulwich.repo import Repo

from .._checkpoint import checkpoint
from .._errors import GitError
from . import _internals as gi
from ._diff import changed_paths
from ._fast._index import FastIndex, UnsupportedIndex
from ._objects import TreeReader, blob_data

__all__ = ["WorkTree"]

log = logging.getLogger("datom_core.git")

_JOURNAL = "datom-worktree.journal"


class WorkTree:
    """The working tree at ``root``, its index and journal in ``controldir``."""

    def __init__(self, root: Path, controldir: Path) -> None:
        self.root = root
        self.journal_path = controldir / _JOURNAL
        self.index = FastIndex(controldir / "index")
        # Whether a path is in the clone's sparse checkout (None: none), as of the
        # operation's start (``_settings.sparse_filter``).
        self.sparse: Callable[[bytes], bool] | None = None

    def check_readable(self) -> None:
        """:class:`GitError` if the index is no index git reads, before anything changes
        (:func:`_internals.damaged_index`). Parsed once per change of the file; a form the
        accelerator leaves to dulwich is dulwich's to judge."""
        try:
            self.index.entries()
        except UnsupportedIndex:
            pass
        except (ValueError, OSError) as e:
            raise gi.damaged_index(self.root, self.index.path, e) from None

    def pending(self) -> bool:
        """Whether an update was left half done (one ``stat``)."""
        return self.journal_path.exists()

    def recover(self, r: Repo) -> None:
        """Finish an interrupted update: the journaled paths get HEAD's bytes (stale git
        locks are removed where they are met, see :func:`_internals.unstale`)."""
        try:
            paths = self.journal_path.read_bytes().splitlines()
        except FileNotFoundError:
            return
        log.warning("finishing an interrupted update of the working tree of %s", self.root)
        reader = TreeReader(r.object_store, gi.head(r))
        changes: dict[bytes, bytes | None] = {}
        modes: dict[bytes, int] = {}
        for path in filter(None, paths):
            entry = reader.entry(path)
            if entry is None or stat.S_ISDIR(entry[0]):
                changes[path] = None
            else:  # an executable or a link becomes one again
                changes[path], modes[path] = entry[1], entry[0]
        self.sync(r, changes, modes=modes)

    def journal(self, paths: Iterable[bytes]) -> None:
        """Record the paths about to change, before the branch moves: a writer killed
        between moving the branch and rewriting the files (or before either) leaves the
        list for :meth:`recover`."""
        listed = b"".join(p + b"\n" for p in paths)
        if listed:
            try:
                gi.write_file_atomic(self.journal_path, listed)
            except OSError as e:
                raise gi.worktree_error(self.root, e, _JOURNAL) from e

    def sync(
        self,
        r: Repo,
        changes: Mapping[bytes, bytes | None],
        journaled: bool = False,
        modes: Mapping[bytes, int] | None = None,
    ) -> None:
        """Make the working tree and index hold ``path -> blob`` (None: no file);
        ``journaled``: the caller already listed these paths in the journal; ``modes``:
        git's mode of paths that are not plain files, or were (an executable, a symbolic
        link: written as such, so a later ``git commit`` in the clone keeps them). A path
        outside the clone's sparse checkout, and not in its working tree, stays out of it
        (skip-worktree in the index); one there is written, as git writes it."""
        modes = modes or {}
        if not journaled:
            self.journal(changes)
        doing, left_out = "the index", set()
        try:
            for path, sha in changes.items():
                doing = os.fsdecode(path)
                target = self.root / doing
                if sha is None:
                    gi.remove_worktree_file(target, self.root)
                    continue
                if (
                    self.sparse is not None
                    and not self.sparse(path)
                    and not os.path.lexists(target)
                ):
                    left_out.add(path)  # outside the sparse checkout: git leaves it out too
                    continue
                data = blob_data(r.object_store, sha)  # the write's own bytes: in memory
                if data is None:
                    raise GitError(f"{doing} in {self.root} names no blob ({sha!r})")
                mode = modes.get(path)
                if mode is None:
                    gi.write_worktree_file(target, data)
                else:
                    _write_with_mode(target, data, mode)
            doing = "the index"
            if changes:
                gi.update_index(self.index, r, self.root, changes, modes, left_out)
            self.journal_path.unlink(missing_ok=True)
        except OSError as e:
            raise gi.worktree_error(self.root, e, doing) from e

    def move_to(self, r: Repo, branch: bytes, target: bytes | None) -> None:
        """Point ``branch`` at ``target``, rewriting only the files that differ."""
        old = gi.get_ref(r, branch)
        if old == target:
            return
        modes: dict[bytes, int] = {}
        changes = changed_paths(r.object_store, old, target, modes)
        self.journal(changes)
        checkpoint("git:move:journaled")
        if target is None:
            gi.drop_ref(r, branch)
        else:
            gi.set_ref(r, branch, target)
        checkpoint("git:move:moved")
        self.sync(r, changes, journaled=True, modes=modes)


def _write_with_mode(target: Path, data: bytes, mode: int) -> None:
    """Make ``target`` a symbolic link to ``data`` or a file of ``data`` with git's mode
    ``mode`` (executable or not, as git checks it out: the umask decides the rest)."""
    if stat.S_ISLNK(mode):
        gi.replace_path(target, lambda tmp: os.symlink(data, tmp))
        return
    if target.is_symlink():
        target.unlink()
    gi.write_worktree_file(target, data)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(target, (0o777 if mode & 0o111 else 0o666) & ~umask)
