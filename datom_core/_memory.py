"""A bounded memory of values under keys that name their content (a leaf module, used by
the git layer for parsed objects by git id and by the project layer for column digests
by ``data_sha``): such a key never names a stale value, so nothing is ever invalidated,
only the oldest items dropped."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["KeyedMemory"]

K = TypeVar("K")
V = TypeVar("V")


class KeyedMemory(Generic[K, V]):
    """The latest items put (at most ``count``, and ``size`` in all if given), thread-safe."""

    def __init__(self, count: int, size: int = 0) -> None:
        self._items: dict[K, tuple[V, int]] = {}
        self._count, self._size, self._held = count, size, 0
        self._guard = threading.Lock()

    @property
    def held(self) -> int:
        """The sizes of the kept items, summed."""
        return self._held

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        return item[0] if item is not None else None

    def newest(self, n: int) -> list[K]:
        """The keys of the ``n`` items put last, newest first."""
        with self._guard:
            keys = list(self._items)
        return keys[: -n - 1 : -1]

    def put(self, key: K, value: V, size: int = 0) -> None:
        with self._guard:
            self._held += size - self._items.pop(key, (None, 0))[1]
            self._items[key] = (value, size)
            while len(self._items) > self._count or (self._size and self._held > self._size):
                self._held -= self._items.pop(next(iter(self._items)))[1]
