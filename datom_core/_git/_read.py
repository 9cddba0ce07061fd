"""Reading one object by id through dulwich, looked for again after a concurrent repack
(private to the git layer).

dulwich looks in a store's packs, then in its loose files: a concurrent ``git gc`` or
``git repack -d`` that packs an object and deletes its loose file in between hides it from
both. It is looked for again, as git does (``reprepare_packed_git``): dulwich then finds
the new pack; and a store's list of its packs leaves out those git just took away
(:func:`rescanning`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import ObjectID, ShaFile
from dulwich.pack import Pack, PackFileDisappeared

__all__ = ["has", "load", "load_raw", "rescanning"]

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


class _Rescanned(DiskObjectStore):
    """A store whose ``packs`` hands out only packs it can read.

    dulwich's lists the packs it had cached, then looks at the folder and closes those
    gone; its callers (a search probing bitmaps, naming a pack it adds) then read each
    pack's index. A pack git was renaming or deleting just then had its index reopened
    outside the cache (nothing closed it), or raised ``PackFileDisappeared`` out of a
    fetch. Here such a pack is left out, and each one handed out has its index read."""

    @property
    def packs(self) -> list[Pack]:
        listed = super().packs
        cached = {id(p) for p in self._iter_cached_packs()}
        readable = []
        for pack in listed:
            if id(pack) not in cached:
                continue  # closed as gone by the look
            try:
                pack.index  # noqa: B018 (read now: a later read may find the file gone)
            except PackFileDisappeared:
                self._evict_pack(pack)
                continue
            readable.append(pack)
        return readable


def rescanning(store: BaseObjectStore) -> None:
    """Make a store opened from a folder one whose ``packs`` git's maintenance cannot
    break (:class:`_Rescanned`); a store of another kind is left as it is."""
    if type(store) is DiskObjectStore:
        store.__class__ = _Rescanned
