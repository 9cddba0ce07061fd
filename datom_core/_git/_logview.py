"""Reading a clone's history: files at a commit, the log, a file's last change (private to
the git layer; a part of :class:`MetadataRepo`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dulwich.objects import ObjectID
from dulwich.repo import Repo

from .._errors import GitError
from .._plain import plain
from . import _internals as gi
from ._fast._history import PathHistory, first_parents, recent_change
from ._objects import commit_object
from ._tipview import TipView
from ._types import CommitInfo, commit_info

if TYPE_CHECKING:
    from ._lock import RepoLock
    from ._transport import Transport

__all__ = ["HistoryReads"]


class HistoryReads:
    """The history-reading methods of :class:`MetadataRepo` (its open repository and its
    path index are the clone's)."""

    _history: PathHistory

    if TYPE_CHECKING:  # the clone's (RepoCore's), found after this class in the MRO

        def _open(self) -> Repo: ...

        def _remote(self) -> Transport: ...

        def lock(self, timeout: float | None = 600) -> RepoLock: ...

    def _whole(self, r: Repo) -> None:
        """Before a walk of the history: a shallow clone (``clone(shallow=True)``) fetches
        the commits it lacks, once (a clone that has them reads one absent file)."""
        if r.get_shallow():
            with self.lock():
                if r.get_shallow():
                    self._remote().deepen(r, gi.branch_ref(r))

    def is_shallow(self) -> bool:
        """Whether this clone lacks the older commits (``clone(shallow=True)``)."""
        return bool(self._open().get_shallow())

    def read_at(self, commit: str, relpath: str, deepen: bool = True) -> bytes | None:
        """The bytes of ``relpath`` in ``commit`` (full hex id), or ``None`` if absent there
        (or, with ``deepen`` False, if a shallow clone lacks the commit: no fetch)."""
        gi.check_relpath(relpath)
        r = self._open()
        try:
            found = commit_object(r, commit)
        except GitError:
            if not r.get_shallow():
                raise
            if not deepen:
                return None
            self._whole(r)  # an older commit than a shallow clone holds
            found = commit_object(r, commit)
        return TipView(r.object_store, found.id).read(relpath)

    def log(self, relpath: str | None = None, max_entries: int | None = None) -> list[CommitInfo]:
        """Commits reachable from HEAD, newest first; only those changing ``relpath`` if given.

        A file's commits come from an index kept up to date as HEAD moves (see
        :mod:`._history`): the cost is what is returned, not the length of the history.
        """
        if relpath is not None:
            gi.check_relpath(relpath)
        r = self._open()
        self._whole(r)
        head = gi.head(r)
        if head is None:
            return []
        paths = [relpath.encode()] if relpath is not None else None
        if not plain("history") and paths is not None:  # plain path: the walk below
            index = self._history.at(r, head)
            known = index.commits(paths[0]) if index.linear else None
            if known is not None:
                newest_first = known[::-1][:max_entries]
                return [commit_info(commit_object(r, c.decode())) for c in newest_first]
        elif not plain("history"):
            linear = first_parents(r.object_store, head, max_entries)
            if linear is not None:
                return [commit_info(c) for c in linear]
        walker = r.get_walker(include=[ObjectID(head)], paths=paths, max_entries=max_entries)
        return [commit_info(entry.commit) for entry in walker]

    def last_commit_touching(self, relpath: str) -> str | None:
        """The newest commit reachable from HEAD that changed ``relpath`` (None: never).

        Answered by :meth:`log` (from its path index once built: a Dagster
        materialization that changes nothing costs a lookup, not a log walk); a handle
        that has not built it yet (a fresh process) first looks back over the last commits
        (:func:`_history.recent_change`).
        """
        gi.check_relpath(relpath)
        r = self._open()
        head = gi.head(r)
        if not plain("history") and head is not None and self._history.head is None:
            self._whole(r)
            recent = recent_change(r.object_store, head, relpath.encode())
            if recent is not None:
                return recent.decode()
        return next((c.id for c in self.log(relpath, 1)), None)
