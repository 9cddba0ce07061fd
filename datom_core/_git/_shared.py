"""The error of a clone missing an object (private to the git layer), which names a local
remote's object folder the clone reads in place (git's alternates, set up by the
accelerator :mod:`._fast._share`; dulwich and git honour the file on the plain path too)
when that folder is gone.
"""

from __future__ import annotations

import os
from pathlib import Path

from dulwich.object_store import BaseObjectStore, DiskObjectStore

from .._errors import GitError

__all__ = ["missing_object"]


def missing_object(clone: Path, store: BaseObjectStore, e: KeyError) -> GitError:
    """The error for an object the clone at ``clone`` cannot find."""
    alternates = store.alternates if isinstance(store, DiskObjectStore) else []
    paths = [str(getattr(a, "path", "")) for a in alternates]
    gone = [path for path in paths if not os.path.isdir(path)]
    if gone:
        return GitError(
            f"{clone} reads its git objects from the local remote's {gone[0]} (shared, as "
            "by git clone --shared), which is not there now: make it reachable again, or "
            "clone the project anew from a copy of the remote."
        )
    return GitError(
        f"{clone} lacks the git object {e.args[0]!r}: the clone is damaged; clone the "
        "project anew from its remote."
    )
