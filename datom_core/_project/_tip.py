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

from typing import Any, Protocol

from datom_core._project import _layout as L
from datom_core._project._model import ProjectConfig
from datom_core._project._parse import load_json, parse_project_config
from datom_core._project._recent import Recent

__all__ = ["TreeReader", "load_manifest", "load_project_config", "remember_manifest"]


class TreeReader(Protocol):
    """A read-only view of a git tip: a file's bytes, or None."""

    def read(self, path: str, /) -> bytes | None: ...


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
