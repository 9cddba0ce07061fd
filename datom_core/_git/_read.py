"""Reading a repository git may maintain beside datom (private to the git layer).

dulwich looks in a store's packs, then in its loose files: a concurrent ``git gc`` or
``git repack -d`` that packs an object and deletes its loose file in between hides it from
both. It is looked for again, as git does (``reprepare_packed_git``): dulwich then finds
the new pack. A store datom opens (:func:`beside_git`) also lists only the packs it can
read, and keeps a fetched pack until a ref reaches it (:func:`keeping`), as git's fetch
does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import ObjectID, ShaFile
from dulwich.pack import Pack, PackFileDisappeared

__all__ = ["FETCH_KEEP", "beside_git", "has", "keeping", "load", "load_raw"]

T = TypeVar("T")
_LOOKS = 3  # looks for an object a concurrent repack may be moving into a new pack
FETCH_KEEP = b"datom fetch\n"  # the .keep of a fetched pack no ref reaches yet


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
    """Whether ``store`` (or an alternate) holds ``sha``, looked for as :func:`load` looks."""
    return any(ObjectID(sha) in store for _ in range(_LOOKS))


class _BesideGit(DiskObjectStore):
    """A store whose ``packs`` hands out only packs it can read, and whose new packs can
    be kept (``.keep``) from the moment they appear.

    dulwich's lists the packs it had cached, then looks at the folder and closes those
    gone; its callers (a search probing bitmaps, naming a pack it adds) then read each
    pack's index. A pack git was renaming or deleting just then had its index reopened
    outside the cache (nothing closed it), or raised ``PackFileDisappeared`` out of a
    fetch. Here such a pack is left out, and each one handed out has its index read.

    While :attr:`keeps` is a list, each pack added gets a ``.keep`` before it is moved
    in, its path noted there (:func:`keeping`), as git's fetch keeps its pack until the
    refs reach it: ``git repack -a -d`` deletes the objects of an unkept pack no ref
    reaches."""

    keeps: list[Path] | None = None

    def _get_pack_basepath(self, entries: Any) -> str:
        base = super()._get_pack_basepath(entries)
        if self.keeps is not None:
            keep = Path(base + ".keep")
            try:
                with open(keep, "xb") as f:  # one already there is not ours to remove
                    f.write(FETCH_KEEP)
                self.keeps.append(keep)
            except FileExistsError:
                pass
        return base

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


def beside_git(store: BaseObjectStore) -> None:
    """Make a store opened from a folder one that git's maintenance beside it cannot
    break (:class:`_BesideGit`); a store of another kind is left as it is."""
    if type(store) is DiskObjectStore:
        store.__class__ = _BesideGit


@contextmanager
def keeping(store: BaseObjectStore) -> Iterator[list[Path]]:
    """Keep (``.keep``) every pack added to ``store`` inside the block from the moment it
    appears, until the block ends: the caller points a ref at what it fetched first.
    Yields the ``.keep`` files made (an outer block, or a store of another kind: none)."""
    if not isinstance(store, _BesideGit) or store.keeps is not None:
        yield []
        return
    store.keeps = []
    try:
        yield store.keeps
    finally:
        kept, store.keeps = store.keeps, None
        for keep in kept:
            keep.unlink(missing_ok=True)
