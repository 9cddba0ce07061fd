"""Which commits changed which file, kept up to date as HEAD moves (an accelerator of the
git layer; switched off by ``DATOM_PLAIN=1`` or ``DATOM_PLAIN=history``, see
:mod:`datom_core._plain`).

Contract: for a linear history, the commits of a path are exactly those a path-filtered
``git log`` lists, and :func:`first_parents` the commits of the unfiltered one (for
anything else the callers walk the log). Plain path (beside it, in ``_logview``):
dulwich's walker on every call. Measured (``benchmarks/bench_gitreads.py``, a table of 300
versions): a file's log 25x, the last 60 commits 69x, its newest commit over 1,000x,
every version's commit 5.3x.

The mirror derives the commit of each version from the commits of the table's metadata
file, and a ``none`` write reports the newest such commit. Walking the log with a path
filter diffs every commit of the history on each call; this index is built in one pass the
first time, then extended by the commits HEAD gained since (a few tree diffs per write), so
"the commits of this file" costs what it returns.
"""

from __future__ import annotations

import stat

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from .._objects import TreeReader, commit_of
from ._walk import changed_paths, commits_between

__all__ = ["PathHistory", "first_parents", "recent_change"]

_RECENT_WALK = 64  # commits a fresh handle looks back along before it indexes the history


class PathHistory:
    """``path -> commits that changed it``, oldest first, for the history of one head.

    ``linear``: the history is one line of first parents (what datom makes). Only then are
    the commits exactly those a path-filtered ``git log`` lists (a merge is judged there
    against every parent); callers walk the log themselves otherwise.
    """

    def __init__(self) -> None:
        self.head: bytes | None = None
        self.linear = False
        self._paths: dict[bytes, list[bytes]] = {}

    def at(self, r: Repo, head: bytes) -> PathHistory:
        """This index brought to ``head`` (extended when ``head`` descends from the last
        one along first parents, rebuilt otherwise)."""
        if head == self.head:
            return self
        store = r.object_store
        chain = commits_between(store, head, self.head) if self.head is not None else None
        if chain is None:
            self._paths, self.head = {}, None
            chain = commits_between(store, head, None)
            self.linear = chain is not None
            if chain is None:
                walk = r.get_walker(include=[ObjectID(head)], reverse=True)
                chain = [entry.commit.id for entry in walk]
        for sha in chain:
            c = store[ObjectID(sha)]
            parent = c.parents[0] if isinstance(c, Commit) and c.parents else None
            for path in changed_paths(store, parent, sha):
                self._paths.setdefault(path, []).append(sha)
        self.head = head
        return self

    def commits(self, path: bytes) -> list[bytes] | None:
        """The commits that changed the file ``path``, oldest first (None: no such file in
        the history, which may be a directory: ask the log)."""
        return self._paths.get(path)


def first_parents(
    store: BaseObjectStore, head: bytes, max_entries: int | None
) -> list[Commit] | None:
    """The newest ``max_entries`` commits of a linear history from ``head`` (what a walk
    would give, without its queue), or None if a merge is met (the walk orders those)."""
    out: list[Commit] = []
    sha: bytes | None = head
    while sha is not None and (max_entries is None or len(out) < max_entries):
        c = commit_of(store, sha)
        if c is None or len(c.parents) > 1:
            return None
        out.append(c)
        sha = c.parents[0] if c.parents else None
    return out


def recent_change(store: BaseObjectStore, head: bytes, path: bytes) -> bytes | None:
    """The newest commit changing the file ``path`` among the last ``_RECENT_WALK``
    commits of a linear history from ``head``, by comparing its entry with each first
    parent's (what :class:`PathHistory` would answer), for a fresh handle that has not
    indexed the history (a Dagster step, a CLI call: building the index costs a tree diff
    per commit of the project). None when not found that way: a merge, a folder, or a
    file changed longer ago (the index answers then)."""
    sha: bytes | None = head
    for _ in range(_RECENT_WALK):
        c = commit_of(store, sha) if sha is not None else None
        if c is None or len(c.parents) > 1:
            return None
        parent = c.parents[0] if c.parents else None
        now = TreeReader(store, sha).entry(path)
        was = TreeReader(store, parent).entry(path) if parent is not None else None
        if (now is not None and stat.S_ISDIR(now[0])) or (was is not None and stat.S_ISDIR(was[0])):
            return None
        if now != was:
            return sha if now is None or stat.S_ISREG(now[0]) or was is not None else None
        sha = parent
    return None
