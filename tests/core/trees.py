"""The naive reference for what differs between two commits: every file walked."""

from __future__ import annotations

from dulwich.object_store import BaseObjectStore

__all__ = ["differing_files", "files_of"]


def files_of(store: BaseObjectStore, commit: bytes) -> dict[bytes, tuple[int, bytes]]:
    """Every file of a commit, walked naively: ``path -> (mode, blob id)``."""
    out: dict[bytes, tuple[int, bytes]] = {}
    stack = [(b"", store[store[commit].tree])]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree.items():
            if entry.mode == 0o040000:
                stack.append((prefix + entry.path + b"/", store[entry.sha]))
            else:
                out[prefix + entry.path] = (entry.mode, entry.sha)
    return out


def differing_files(store: BaseObjectStore, old: bytes, new: bytes) -> dict[bytes, bytes | None]:
    """``path -> blob id`` (None: removed) of every file whose mode or bytes differ."""
    before, after = files_of(store, old), files_of(store, new)
    return {
        p: after[p][1] if p in after else None
        for p in before.keys() | after.keys()
        if before.get(p) != after.get(p)
    }
