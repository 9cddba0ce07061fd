"""A stream over a backend's open object that turns its errors into datom errors
mid-read (the store's ``open_read``)."""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["TranslatingReader"]

# The store's ``_translated(action, key)``: backend errors inside it become datom errors.
Translator = Callable[[str, str], AbstractContextManager[None]]


class TranslatingReader(io.RawIOBase):
    """A read-only stream that turns backend errors into datom errors mid-read."""

    def __init__(self, handle: Any, translated: Translator, key: str) -> None:
        super().__init__()
        self._handle, self._translated, self._key = handle, translated, key

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        with self._translated("read", self._key):
            return self._handle.read(size)

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        with self._translated("read", self._key):
            return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def close(self) -> None:
        if not self.closed:
            try:
                with self._translated("read", self._key):
                    self._handle.close()
            finally:
                super().close()
