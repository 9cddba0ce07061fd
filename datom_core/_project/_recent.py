"""A small memory of values derived from byte strings, looked up by content.

Documents are parsed again and again by one write (the door, the rebuild, the mirror)
and by the reads around it; keeping the parsed form of the last few distinct texts,
matched by their bytes, saves that work and can never hand back a stale value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Recent"]

T = TypeVar("T")


class Recent(Generic[T]):
    """Values derived from the last ``count`` byte strings (at most ``size`` bytes of them
    in all), looked up by content: the same object first, then equal bytes (lengths
    compared before any byte). A value is put for a text just missed or just printed, so
    :meth:`put` drops only the same object, never compares texts (megabytes that differ
    only near their end, for a 3,000-table manifest); an equal duplicate is harmless, the
    newest is found first."""

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
            items = [(k, v) for k, v in self._items if k is not raw]
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
