"""Reading the documents of a tip: what a write classifies against and builds on.

A tip is anything with ``read(path) -> bytes | None``: the clone's working tree
(:class:`~datom_core._git.MetadataRepo`) or a commit's tree (the git layer's
``TreeReader``). The manifest and ``project.yaml`` are read by every write, several times
(the write door on the clone, the door on the tip, the rebuild), and at thousands of
tables parsing the manifest is a visible cost: the parsed form of the last bytes seen is
kept, and shared.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from datom_core._project import _layout as L
from datom_core._project._model import ProjectConfig
from datom_core._project._parse import load_json, parse_project_config

__all__ = ["TreeReader", "load_manifest", "load_project_config"]

T = TypeVar("T")


class TreeReader(Protocol):
    """A read-only view of a git tip: a file's bytes, or None."""

    def read(self, path: str, /) -> bytes | None: ...


class _Last(Generic[T]):
    """The result of ``parse`` for the last bytes it succeeded on."""

    def __init__(self, parse: Callable[[bytes], T]) -> None:
        self._parse = parse
        self._last: tuple[bytes, T] | None = None
        self._guard = threading.Lock()

    def __call__(self, raw: bytes) -> T:
        with self._guard:
            last = self._last
        if last is not None and last[0] == raw:
            return last[1]
        parsed = self._parse(raw)
        with self._guard:
            self._last = (raw, parsed)
        return parsed


_manifest: _Last[Any] = _Last(lambda raw: load_json(raw, key=L.MANIFEST))
_config: _Last[ProjectConfig] = _Last(lambda raw: parse_project_config(raw, key=L.PROJECT_YAML))


def load_manifest(raw: bytes) -> Any:
    """The JSON of manifest bytes (:class:`IntegrityError` naming the manifest when they
    do not parse). The result is shared between callers: read it, never change it."""
    return _manifest(raw)


def load_project_config(raw: bytes) -> ProjectConfig:
    """``project.yaml`` parsed (its errors as :func:`parse_project_config` raises them)."""
    return _config(raw)
