"""Reading the documents of a tip: what a write classifies against and builds on.

A tip is anything with ``read(path) -> bytes | None``: the clone's working tree
(:class:`~datom_core._git.MetadataRepo`) or a commit's tree (the git layer's
``TreeReader``). The manifest is the one document every write reads, and at thousands of
tables parsing it is a visible cost; the write door, the classification and the rebuild
all read the same bytes, so the parsed form of the last manifest seen is kept.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from datom_core._project import _layout as L
from datom_core._project._parse import load_json

__all__ = ["TreeReader", "load_manifest"]


class TreeReader(Protocol):
    """A read-only view of a git tip: a file's bytes, or None."""

    def read(self, path: str, /) -> bytes | None: ...


_last: list[tuple[bytes, Any]] = []
_guard = threading.Lock()


def load_manifest(raw: bytes) -> Any:
    """The JSON of manifest bytes (:class:`IntegrityError` naming the manifest when they
    do not parse). The result is shared between callers: read it, never change it."""
    with _guard:
        if _last and _last[0][0] == raw:
            return _last[0][1]
    doc = load_json(raw, key=L.MANIFEST)
    with _guard:
        _last[:] = [(raw, doc)]
    return doc
