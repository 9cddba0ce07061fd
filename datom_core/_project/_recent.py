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


_Print = tuple[int, bytes, bytes]
_ENDS = 96  # bytes of each end: where two documents of one shape differ (shas, times)


def _print(raw: bytes) -> _Print:
    return len(raw), raw[:_ENDS], raw[-_ENDS:]


class Recent(Generic[T]):
    """Values derived from the last ``count`` byte strings (at most ``size`` bytes of them
    in all), looked up by content: among the kept texts with the same length, head and
    tail (a dictionary on those, so a miss among hundreds of kept documents of one shape
    costs one lookup, and no text is hashed whole), the same object first, then equal
    bytes. A value is put for a text just missed or just printed, so :meth:`put` drops
    only the same object, never compares texts (megabytes that differ only near their
    end, for a 3,000-table manifest); an equal duplicate is harmless, the newest is found
    first."""

    def __init__(self, count: int, size: int = 1 << 62) -> None:
        self._items: list[tuple[bytes, T]] = []  # newest last
        self._similar: dict[_Print, list[tuple[bytes, T]]] = {}  # each newest last
        self._count, self._size, self._held = count, size, 0
        self._guard = threading.Lock()

    def get(self, raw: bytes) -> T | None:
        with self._guard:
            same = self._similar.get(_print(raw))
            candidates = same[::-1] if same else []
        for key, value in candidates:
            if key is raw:
                return value
        for key, value in candidates:
            if key == raw:
                return value
        return None

    def values(self) -> list[T]:
        """The kept values, newest first."""
        with self._guard:
            return [value for _, value in self._items[::-1]]

    def put(self, raw: bytes, value: T) -> None:
        key = _print(raw)
        with self._guard:
            self._drop(raw, key)
            self._items.append((raw, value))
            self._similar.setdefault(key, []).append((raw, value))
            self._held += len(raw)
            while len(self._items) > 1 and (
                len(self._items) > self._count or self._held > self._size
            ):
                oldest = self._items[0][0]
                self._drop(oldest, _print(oldest))

    def forget(self, raw: bytes) -> None:
        """Drop the value put for this very object, if kept (it was superseded)."""
        with self._guard:
            self._drop(raw, _print(raw))

    def _drop(self, raw: bytes, key: _Print) -> None:
        """Forget the entry of this very object (``key``: its print), if kept (under the
        guard)."""
        same = self._similar.get(key)
        if not same or not any(k is raw for k, _ in same):
            return
        if self._items[0][0] is raw:  # the oldest, going past a bound
            del self._items[0]
        else:
            self._items = [(k, v) for k, v in self._items if k is not raw]
        kept = [(k, v) for k, v in same if k is not raw]
        if kept:
            self._similar[key] = kept
        else:
            del self._similar[key]
        self._held -= len(raw)

    def parsed(self, raw: bytes, parse: Callable[[bytes], T]) -> T:
        """The kept value for ``raw``, else ``parse(raw)`` kept (errors are not kept)."""
        found = self.get(raw)
        if found is None:
            found = parse(raw)
            self.put(raw, found)
        return found
