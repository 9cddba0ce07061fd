"""How much text the cells of an xlsx sheet take from the workbook's shared strings.

A cell of type ``s`` holds the index of a string in ``sharedStrings.xml``, and calamine
gives every such cell its own copy of that string. So one 30 KB string referenced by a
million short cells is 30 GB in memory from a file of a few KB. :class:`SharedText`
records an upper bound of each shared string's size (its ``<si>`` element, markup
included) and adds up, over the sheet's cells, the sizes of the strings they reference.
A reference it cannot read counts as the longest string. Inline strings (``<is>``,
which are not copied) count with their size in the sheet XML.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter

__all__ = ["SharedText"]

_STRING = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?si[\s>/]")
# Excel's shape of a shared-string cell: t="s", then <v>index</v> right after the tag.
_REFERENCE = re.compile(rb't="s"[^>]*><v>([0-9]{1,10})</v>')
_ANY_TYPE_S = re.compile(rb"""t\s*=\s*["']s["']""")
_INLINE = re.compile(rb"<is>.*?</is>", re.DOTALL)
_STRING_TAIL = 256


class SharedText:
    """Shared strings' sizes (fed from ``sharedStrings.xml``) and the text cells take."""

    def __init__(self) -> None:
        self._sizes = array("q")
        self._offset = 0  # bytes of sharedStrings.xml seen so far
        self._start = -1  # where the last string seen began
        self._carry = b""
        self._longest = 0
        self.total = 0  # bytes of text the cells measured so far take

    def feed_strings(self, chunk: bytes) -> None:
        """Record the strings that ``chunk`` of ``sharedStrings.xml`` completes."""
        text = self._carry + chunk
        base = self._offset - len(self._carry)
        keep = max(0, len(text) - _STRING_TAIL)  # a tag the chunk may cut in two
        for match in _STRING.finditer(text):
            if match.start() >= keep:
                break
            self._start_string(base + match.start())
        self._carry = text[keep:]
        self._offset += len(chunk)

    def finish_strings(self) -> None:
        """Record the last string (it ends where the part ends)."""
        base = self._offset - len(self._carry)
        for match in _STRING.finditer(self._carry):
            self._start_string(base + match.start())
        self._carry = b""
        self._start_string(self._offset)
        self._start = -1
        self._longest = max(self._sizes, default=0)

    def _start_string(self, at: int) -> None:
        if self._start >= 0:
            self._sizes.append(at - self._start)
        self._start = at

    def measure_cells(self, text: bytes) -> None:
        """Add the text of the cells in ``text`` (whole tags of sheet XML)."""
        if b"<is>" in text:
            self.total += sum(map(len, _INLINE.findall(text)))
        typed = len(_ANY_TYPE_S.findall(text))
        if not typed:
            return
        references = _REFERENCE.findall(text)
        sizes, count, longest = self._sizes, len(self._sizes), self._longest
        for index, times in Counter(references).items():
            i = int(index)
            self.total += times * (sizes[i] if i < count else longest)
        self.total += (typed - len(references)) * longest
