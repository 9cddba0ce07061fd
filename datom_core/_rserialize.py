"""R's ASCII serialization (format 3) of the few R values datom writes, a leaf module.

R's arrow package keeps a data frame's column attributes in a parquet file's schema
metadata, key ``r``: the text ``serialize(x, NULL, ascii = TRUE)`` of a list (arrow's
``r/R/metadata.R``). datom writes that key for labelled columns, so this module writes
the values it needs: ``NULL``, character and double vectors (optionally named) and named
lists. The layout follows R's ``serialize.c``: one item per line, a header, then each
value as its flags word, its length and its elements; attribute lists are pairlists
whose tags are symbols, each symbol written once and referred to by number after that.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["RChar", "RList", "RReal", "RValue", "serialize_ascii"]

_NILVALUE = 254
_REFSXP = 255
_SYMSXP, _LISTSXP, _CHARSXP, _REALSXP, _STRSXP, _VECSXP = 1, 2, 9, 14, 16, 19
_HAS_ATTR, _HAS_TAG = 1 << 9, 1 << 10
_UTF8, _ASCII = 1 << 3, 1 << 6  # CHARSXP encoding levels
# Written by and readable from R 3.5.0 onwards (serialization format 3).
_R_3_5_0 = 3 * 65536 + 5 * 256
_ESCAPES = {
    0x0A: "\\n",
    0x09: "\\t",
    0x0B: "\\v",
    0x08: "\\b",
    0x0D: "\\r",
    0x0C: "\\f",
    0x07: "\\a",
    0x5C: "\\\\",
    0x3F: "\\?",
    0x27: "\\'",
    0x22: '\\"',
}


@dataclass(frozen=True)
class RChar:
    """An R character vector (``None`` is ``NA``), with optional element names."""

    values: Sequence[str | None]
    names: Sequence[str] | None = None


@dataclass(frozen=True)
class RReal:
    """An R double vector (``None`` is ``NA``), with optional element names."""

    values: Sequence[float | None]
    names: Sequence[str] | None = None


@dataclass(frozen=True)
class RList:
    """An R list whose elements all have names (``list(a = ..., b = NULL)``)."""

    items: Sequence[tuple[str, RValue]] = field(default_factory=tuple)


RValue = RChar | RReal | RList | None
"""What :func:`serialize_ascii` can write (``None`` is ``NULL``)."""


def serialize_ascii(value: RValue) -> str:
    """``serialize(value, NULL, ascii = TRUE)`` as R would write it, as text."""
    out = _Writer()
    for n in (3, _R_3_5_0, _R_3_5_0, 5):
        out.int(n)
    out.lines.append("UTF-8")
    out.value(value)
    return "A\n" + "\n".join(out.lines) + "\n"


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._symbols: dict[str, int] = {}

    def int(self, n: int) -> None:
        self.lines.append(str(n))

    def value(self, value: RValue) -> None:
        if value is None:
            self.int(_NILVALUE)
        elif isinstance(value, RList):
            names = [name for name, _ in value.items]
            self.int(_VECSXP | _HAS_ATTR)
            self.int(len(value.items))
            for _, item in value.items:
                self.value(item)
            self._names(names)
        elif isinstance(value, RChar):
            self.int(_STRSXP | (_HAS_ATTR if value.names is not None else 0))
            self.int(len(value.values))
            for text in value.values:
                self._charsxp(text)
            self._names(value.names)
        else:
            self.int(_REALSXP | (_HAS_ATTR if value.names is not None else 0))
            self.int(len(value.values))
            self.lines += [_real(x) for x in value.values]
            self._names(value.names)

    def _names(self, names: Sequence[str] | None) -> None:
        """The attribute pairlist ``names = <names>`` (nothing when ``names`` is None)."""
        if names is None:
            return
        self.int(_LISTSXP | _HAS_TAG)
        self._symbol("names")
        self.value(RChar(list(names)))
        self.int(_NILVALUE)

    def _symbol(self, name: str) -> None:
        known = self._symbols.get(name)
        if known is not None:
            self.int((known << 8) | _REFSXP)
            return
        self._symbols[name] = len(self._symbols) + 1
        self.int(_SYMSXP)
        self._charsxp(name)

    def _charsxp(self, text: str | None) -> None:
        if text is None:  # NA_character_
            self.int(_CHARSXP)
            self.int(-1)
            return
        raw = text.encode("utf-8")
        level = _ASCII if raw.isascii() else _UTF8
        self.int(_CHARSXP | (level << 12))
        self.int(len(raw))
        self.lines.append("".join(_escaped(b) for b in raw))


def _escaped(b: int) -> str:
    if b in _ESCAPES:
        return _ESCAPES[b]
    return f"\\{b:03o}" if b <= 32 or b > 126 else chr(b)


def _real(x: float | None) -> str:
    if x is None:
        return "NA"
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return f"{x:.16g}"  # C's %.16g, as R writes a finite double
