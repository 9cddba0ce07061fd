"""The remote's tip, read where it lives (private to the git layer).

A write classifies on the remote's tip without moving the clone: a local remote's tip is
read in its own store, an HTTP(S) remote's objects are fetched into the clone's. A clone's
sharers share their newest look (:func:`note_tip`), taken without the clone's lock.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path

from dulwich.object_store import BaseObjectStore
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from . import _internals as gi
from ._fast._advert import FRESH_FOR
from ._objects import TreeReader, blob_data, commit_of, tree_of
from ._remote import is_http_url

__all__ = ["TipView", "note_tip", "noted_tip", "read_in_tree"]

Guard = Callable[[], AbstractContextManager[object]]
_NOTE = "datom-tip"  # in .git: "<time> <branch> <commit>", the clone's newest look


class TipView(TreeReader):
    """A read-only view of one commit in ``store`` (``commit`` None: an empty remote).
    Every read holds ``guard`` (a local remote's maintenance lock: no loose object goes
    between finding and reading it). ``kept``: a look from a few seconds ago (``_advert``).
    """

    kept = False

    def __init__(
        self, store: BaseObjectStore, commit: bytes | None, guard: Guard = nullcontext
    ) -> None:
        self._guard = guard
        with guard():
            # Parsed once per process (every look at a still remote meets the same one).
            parsed = commit_of(store, commit) if commit is not None else None
        if commit is not None and parsed is None:
            raise KeyError(commit)
        self._store = store
        self.commit = commit.decode() if commit is not None else None
        self._root = parsed.tree if parsed is not None else None

    def entry(self, path: str | bytes) -> tuple[int, bytes] | None:
        with self._guard():
            return super().entry(path)

    def read(self, path: str) -> bytes | None:
        with self._guard():
            found = super().entry(path)
            return blob_data(self._store, found[1]) if found is not None else None

    def directories(self) -> list[str]:
        """The names of the top-level directories of the tip (the tables, ``.datom``...)."""
        if self._root is None:
            return []
        with self._guard():
            tree = tree_of(self._store, self._root)
            if tree is None:
                return []
            return [
                name.decode("utf-8", "surrogateescape")
                for name, mode, _ in tree.iteritems()
                if stat.S_ISDIR(mode)
            ]


def read_in_tree(store: BaseObjectStore, tree: bytes, relpath: str) -> bytes | None:
    """The bytes of the file ``relpath`` under the tree ``tree`` (None: absent there)."""
    sha = tree
    for part in relpath.encode().split(b"/"):
        found = tree_of(store, sha)
        if found is None or part not in found:
            return None
        sha = found[part][1]
    return blob_data(store, sha)


def note_tip(controldir: Path, branch: bytes, sha: bytes | None) -> None:
    """Note ``sha`` as ``branch``'s tip on the remote now, for the clone's sharers (a hint)."""
    tmp = Path(controldir, f"{_NOTE}.{os.getpid()}")
    with suppress(OSError):
        tmp.write_bytes(b"%.6f %s %s" % (time.time(), branch, sha or b"-"))
        os.replace(tmp, Path(controldir, _NOTE))


def noted_tip(controldir: Path, r: Repo, transport: object, url: object) -> TipView | None:
    """The tip of ``r``'s branch noted less than ``FRESH_FOR`` seconds ago, as a kept view;
    None: no note, not an HTTP(S) ``url`` (a local remote is read in place), the clone
    lacks the commit, or this process's own fresh look saw a tip it does not descend from."""
    memo = getattr(getattr(transport, "_client", None), "memo", None)
    branch, store = gi.branch_ref(r), r.object_store
    try:
        at, noted, sha = Path(controldir, _NOTE).read_bytes().split()
        fresh = 0 <= time.time() - float(at) < FRESH_FOR and is_http_url(str(url))
        if not fresh or noted != branch or sha == b"-":
            return None
        known, seen = memo.tip(branch) if memo is not None else (False, None)
        if known and seen != sha and not _descends(store, sha, seen):
            return None
        view = TipView(store, sha)
    except (OSError, ValueError, KeyError, PackFileDisappeared):
        return None
    view.kept = True
    return view


def _descends(store: BaseObjectStore, sha: bytes | None, older: bytes | None) -> bool:
    """Whether ``older`` is one of the 64 first-parent ancestors of ``sha``."""
    for _ in range(64):
        parsed = commit_of(store, sha) if sha is not None else None
        sha = parsed.parents[0] if parsed is not None and parsed.parents else None
        if sha is None or sha == older:
            return sha is not None
    return False
