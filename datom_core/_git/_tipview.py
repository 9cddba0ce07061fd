"""The remote's tip, read where it lives (private to the git layer).

A write classifies on the remote's tip without moving the clone: a local remote's tip is
read in its own store, an HTTP(S) remote's objects are fetched into the clone's. A clone's
sharers share their newest look (the accelerator :mod:`._fast._tipnote`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from dulwich.object_store import BaseObjectStore

from ._objects import TreeReader, commit_of

__all__ = ["TipView"]

Guard = Callable[[], AbstractContextManager[object]]


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
            return super().read(path)

    def directories(self) -> list[str]:
        with self._guard():
            return super().directories()
