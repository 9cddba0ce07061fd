"""Where the cells of an xlsx sheet lie, measured from its XML as it streams past.

calamine places a ``<row>`` or ``<c>`` with an ``r`` attribute there, and one without
right after the previous one; a cell written as an empty element (``<c .../>``) takes a
place but holds no value. It then holds in memory the rectangle from the first to the
last cell with a value. :class:`SheetScan` measures that rectangle, never smaller than
calamine's (text that only looks like a tag, in a comment, can only make it larger).

The XML is cut at row starts, and each run of whole rows is measured one of three ways:

* the shape Excel and most writers produce (every row and cell starting with an ``r``
  attribute, no namespace prefixes), with a few regular expressions over the whole run;
* rows and cells with no ``r`` at all, by counting rows and the cells of each row;
* anything else, tag by tag, following calamine's rules (slower, exact).
"""

from __future__ import annotations

import re

from datom_core._onboard._readers._shared_text import SharedText

__all__ = ["SheetScan"]

# Excel's shape: r first, double quotes, upper case, no prefix.
_ROW_TAG = re.compile(rb"<row[\s/>]")
_CELL_TAG = re.compile(rb"<c[\s/>]")
_ROW_WITH_REF = re.compile(rb'<row r="([0-9]{1,7})"')
_EMPTY_CELL = re.compile(rb'<c r="[A-Z]{1,3}[0-9]{1,7}"[^>]*/>')
_VALUE_COLUMN = re.compile(rb'<c r="([A-Z]{1,3})[0-9]{1,7}"[^>]*(?<!/)>')
_VALUE_ROW = re.compile(rb'<c r="[A-Z]{1,3}([0-9]{1,7})"[^>]*(?<!/)>')
_ANY_R = re.compile(rb"r\s*=")
_SPACED_R = re.compile(rb"r\s+=")
_PREFIXED = re.compile(rb":(?:c|row)[\s/>]")
# Anything: a <row> or <c> start tag with its attributes (quoted values may hold '>').
_TAG = re.compile(rb"""<(?:[A-Za-z_][\w.-]*:)?(row|c)(?=[\s/>])((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_REF = re.compile(rb"""\sr\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CELL_REF = re.compile(rb"([A-Za-z]{1,3})([0-9]{1,7})")
_SHEET_END = b"sheetData>"


class SheetScan:
    """The running measure of one sheet: feed it the XML, read :attr:`cells` and the rest."""

    def __init__(self, shared: SharedText | None = None) -> None:
        self.shared = shared or SharedText()
        self.row = 0  # where the last row or cell was placed (1-based)
        self.column = 0
        self.first_row = self.last_row = self.first_column = self.last_column = 0
        self._any = False
        self._carry = b""

    @property
    def cells(self) -> int:
        """Cells of the rectangle from the first to the last cell holding a value."""
        if not self._any:
            return 0
        height = self.last_row - self.first_row + 1
        return height * (self.last_column - self.first_column + 1)

    @property
    def pending(self) -> int:
        """Bytes held back, waiting for the rest of a row."""
        return len(self._carry)

    def feed(self, chunk: bytes) -> None:
        """Measure the whole rows ``chunk`` completes. ValueError: a bad cell reference."""
        text = self._carry + chunk
        row_start = max(text.rfind(b"<row"), _prefixed_row_start(text))
        if _SHEET_END in text[max(row_start, 0) :]:
            cut = len(text)  # every row has ended
        elif row_start > 0:
            cut = row_start
        else:  # inside one long row, or before the first: measure the whole tags so far
            cut = max(text.rfind(b"<"), 0)
        self._carry = text[cut:]
        if cut:
            self._measure(text[:cut])

    def finish(self) -> None:
        """Measure what is left at the end of the XML."""
        text, self._carry = self._carry, b""
        self._measure(text)

    def _measure(self, text: bytes) -> None:
        self.shared.measure_cells(text)
        if _PREFIXED.search(text) is None:
            if _ANY_R.search(text) is None:
                self._measure_without_refs(text)
                return
            if self._measure_excel_shape(text):
                return
        self._measure_tags(text)

    def _measure_excel_shape(self, text: bytes) -> bool:
        """Measure ``text`` if it has Excel's shape (see the module docstring), else False."""
        cells, rows = text.count(b"<c"), text.count(b"<row")
        if cells != text.count(b'<c r="') or rows != text.count(b'<row r="'):
            return False
        # No other r attribute (a second one in a tag, or another attribute's) anywhere.
        if text.count(b"r=") != cells + rows or _SPACED_R.search(text):
            return False
        columns = _VALUE_COLUMN.findall(text)
        row_refs = _ROW_WITH_REF.findall(text)
        if len(row_refs) != rows:
            return False
        if len(columns) != cells and len(columns) + _EMPTY_CELL.subn(b"", text)[1] != cells:
            return False  # a reference that is not upper-case letters and digits
        if row_refs:
            self.row = max(self.row, max(map(int, set(row_refs))))
        self.column = 0
        if columns:
            value_rows = [int(r) for r in set(_VALUE_ROW.findall(text))]
            self.row = max(self.row, max(value_rows))
            numbers = [_column_number(c) for c in set(columns)]
            self._extend(min(value_rows), max(value_rows), min(numbers), max(numbers))
        return True

    def _measure_without_refs(self, text: bytes) -> None:
        # Every row is the one after the previous; a row's n-th cell is in column n.
        lead, *rows = _ROW_TAG.split(text)
        continued = len(_CELL_TAG.findall(lead))  # the rest of a row begun before `text`
        if continued:
            self.column += continued
            self._extend(self.row, self.row, 1, self.column)
        widths = [len(_CELL_TAG.findall(row)) for row in rows]
        start, self.row = self.row, self.row + len(widths)
        if widths:
            self.column = widths[-1]
        if max(widths, default=0):
            self._extend(start + 1, self.row, 1, max(widths))

    def _measure_tags(self, text: bytes) -> None:
        for match in _TAG.finditer(text):
            name, attributes = match.group(1), match.group(2)
            ref = _ref(attributes)
            if name == b"row":
                self.row = int(ref) if ref is not None and ref.isdigit() else self.row + 1
                self.column = 0
                continue
            if ref is None:
                self.column += 1
            else:
                cell = _CELL_REF.fullmatch(ref)
                if cell is None:
                    raise ValueError(f"cell reference {ref.decode(errors='replace')!r}")
                self.column, self.row = _column_number(cell.group(1)), int(cell.group(2))
            if not attributes.endswith(b"/"):
                self._extend(self.row, self.row, self.column, self.column)

    def _extend(self, first_row: int, last_row: int, first_column: int, last_column: int) -> None:
        if not self._any:
            self._any = True
            self.first_row, self.first_column = first_row, first_column
        self.first_row = min(self.first_row, first_row)
        self.last_row = max(self.last_row, last_row)
        self.first_column = min(self.first_column, first_column)
        self.last_column = max(self.last_column, last_column)


def _prefixed_row_start(text: bytes) -> int:
    at = text.rfind(b":row")
    return text.rfind(b"<", 0, at) if at > 0 else -1


def _ref(attributes: bytes) -> bytes | None:
    match = _REF.search(attributes)
    if match is None:
        return None
    return (match.group(1) if match.group(1) is not None else match.group(2)).upper()


def _column_number(letters: bytes) -> int:
    number = 0
    for letter in letters.upper():
        number = number * 26 + letter - 64
    return number
