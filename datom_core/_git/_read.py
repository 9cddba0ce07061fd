"""Reading one object by id through dulwich, looked for again after a concurrent repack
(private to the git layer).

dulwich looks in a store's packs, then in its loose files: a concurrent ``git gc`` or
``git repack -d`` that packs an object and deletes its loose file in between hides it from
both. It is looked for again, as git does (``reprepare_packed_git``): dulwich then finds
the new pack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from dulwich.object_store import BaseObjectStore
from dulwich.objects import ObjectID, ShaFile

__all__ = ["closing_dropped", "has", "load", "load_raw"]

T = TypeVar("T")
_LOOKS = 3  # looks for an object a concurrent repack may be moving into a new pack


def load(store: BaseObjectStore, sha: bytes) -> ShaFile:
    """The object ``sha`` (40 hex digits) of ``store``; :class:`KeyError` if it has none."""
    return _looked_for(lambda: store[ObjectID(sha)])


def load_raw(store: BaseObjectStore, sha: bytes) -> tuple[int, bytes]:
    """``(type, content)`` of the object ``sha``, not parsed; :class:`KeyError` if absent."""
    return _looked_for(lambda: store.get_raw(ObjectID(sha)))


def _looked_for(look: Callable[[], T]) -> T:
    for _ in range(_LOOKS - 1):
        try:
            return look()
        except KeyError:
            pass
    return look()


def has(store: BaseObjectStore, sha: bytes) -> bool:
    """Whether ``store`` (or an alternate) holds ``sha``."""
    return ObjectID(sha) in store


@contextmanager
def closing_dropped(store: BaseObjectStore) -> Iterator[None]:
    """Around a dulwich call that goes over ``store.packs`` (a search probing bitmaps,
    adding a pack): close the packs of ``store`` and its alternates that left the cache.
    ``store.packs`` hands out the cached packs, then closes those gone from the folder
    (one git is renaming): the call reopens such a pack's index, outside the cache."""
    stores = [store, *getattr(store, "alternates", [])]
    cached = [(s, list(s._iter_cached_packs())) for s in stores if hasattr(s, "_pack_cache")]
    try:
        yield
    finally:
        for s, packs in cached:
            kept = {id(p) for p in s._iter_cached_packs()}
            for pack in packs:
                if id(pack) not in kept:
                    pack.close()
