"""Reading the documents of a tip: what a write classifies against and builds on.

A tip is anything with ``read(path) -> bytes | None``: the clone's working tree
(:class:`~datom_core._git.MetadataRepo`) or a commit's tree (the git layer's
``TreeReader``). The manifest and ``project.yaml`` are read by every write, several times
(the write door on the clone, the door on the tip, the rebuild), and at thousands of
tables parsing the manifest is a visible cost: the parsed forms of the last few distinct
byte strings are kept, matched by content (so a kept form can never be stale), and the
manifest a write builds is remembered with the document it was printed from, which is
what the next write reads back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from datom_core._project import _layout as L
from datom_core._project._model import ProjectConfig
from datom_core._project._parse import load_json, parse_project_config

__all__ = ["Recent", "TreeReader", "load_manifest", "load_project_config", "remember_manifest"]

T = TypeVar("T")


class TreeReader(Protocol):
    """A read-only view of a git tip: a file's bytes, or None."""

    def read(self, path: str, /) -> bytes | None: ...


class Recent(Generic[T]):
    """Values derived from the last ``count`` distinct byte strings (at most ``size``
    bytes of them in all), looked up by content: the same object first, then equal bytes
    (lengths compared before any byte)."""

    def __init__(self, count: int, size: int = 1 << 62) -> None:
        self._items: list[tuple[bytes, T]] = []  # newest last
        self._count, self._size = count, size
        self._guard = threading.Lock()

    def get(self, raw: bytes) -> T | None:
        with self._guard:
            items = self._items[::-1]
        for key, value in items:
            if key is raw:
                return value
        n = len(raw)
        for key, value in items:
            if len(key) == n and key == raw:
                return value
        return None

    def values(self) -> list[T]:
        """The kept values, newest first."""
        with self._guard:
            return [value for _, value in self._items[::-1]]

    def put(self, raw: bytes, value: T) -> None:
        with self._guard:
            items = [(k, v) for k, v in self._items if len(k) != len(raw) or k != raw]
            items.append((raw, value))
            held = sum(len(k) for k, _ in items)
            while len(items) > 1 and (len(items) > self._count or held > self._size):
                held -= len(items.pop(0)[0])
            self._items = items

    def parsed(self, raw: bytes, parse: Callable[[bytes], T]) -> T:
        """The kept value for ``raw``, else ``parse(raw)`` kept (errors are not kept)."""
        found = self.get(raw)
        if found is None:
            found = parse(raw)
            self.put(raw, found)
        return found


_manifests: Recent[Any] = Recent(16, 64 << 20)
_configs: Recent[ProjectConfig] = Recent(16)


def load_manifest(raw: bytes) -> Any:
    """The JSON of manifest bytes (:class:`IntegrityError` naming the manifest when they
    do not parse). The result is shared between callers: read it, never change it."""
    return _manifests.parsed(raw, lambda b: load_json(b, key=L.MANIFEST))


def remember_manifest(raw: bytes, doc: Any) -> None:
    """``doc`` is what ``raw`` parses to (a manifest just printed from it): kept, shared."""
    _manifests.put(raw, doc)


def load_project_config(raw: bytes) -> ProjectConfig:
    """``project.yaml`` parsed (its errors as :func:`parse_project_config` raises them)."""
    return _configs.parsed(raw, lambda b: parse_project_config(b, key=L.PROJECT_YAML))
