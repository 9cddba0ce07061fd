"""The limits that keep onboarding a hostile or absurd file bounded in memory and time.

A file beyond a limit is refused before it is read, with an
:class:`~datom_core.OnboardingError` that names the file, the limit and the recourse.
Each limit has a default sized for a genuine extract on a machine with a few GB of
memory; a user whose genuine files are larger raises it with the environment variable
named here (read at every onboarding, so it also applies to the CLI and to Dagster
runs), for example ``DATOM_MAX_SHEET_CELLS=40000000 datom sync``:

==============================  ==================  ======================================
environment variable            default             what it bounds
==============================  ==================  ======================================
``DATOM_MAX_SHEET_ROWS``        1,048,576           rows of a spreadsheet (Excel's own)
``DATOM_MAX_SHEET_COLUMNS``     16,384              columns of a spreadsheet (Excel's own)
``DATOM_MAX_SHEET_CELLS``       16,777,216          cells of the sheet's rectangle
``DATOM_MAX_SHEET_XML_BYTES``   1 GiB               uncompressed XML of an xlsx sheet
``DATOM_MAX_SHEET_TEXT_BYTES``  256 MiB             text in a sheet's cells (a shared
                                                    string counts once per cell using it)
``DATOM_MAX_WORKBOOK_BYTES``    256 MiB             other xlsx parts read whole (shared
                                                    strings, styles, workbook)
``DATOM_MAX_XLS_BYTES``         512 MiB             size of an .xls file (read whole)
``DATOM_MAX_LINE_BYTES``        16 MiB              one line (record) of delimited text
``DATOM_MAX_TEXT_COLUMNS``      16,384              columns of delimited text
``DATOM_MAX_STAT_CELLS``        2,000,000,000       rows x columns of a SAS/SPSS/Stata file
==============================  ==================  ======================================

The spreadsheet readers hold the whole sheet rectangle in memory (about 75 bytes a cell
at the peak: a sheet at the default cell limit takes about 1.3 GB), so the cell limit is
the one that bounds memory; the rows and columns limits are
Excel's, which no genuine sheet exceeds. Files too large for a spreadsheet belong in csv
or parquet, which datom streams.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from datom_core._errors import OnboardingError

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_SHEET_CELLS",
    "MAX_SHEET_COLUMNS",
    "MAX_SHEET_ROWS",
    "MAX_SHEET_TEXT_BYTES",
    "MAX_SHEET_XML_BYTES",
    "MAX_STAT_CELLS",
    "MAX_TEXT_COLUMNS",
    "MAX_WORKBOOK_BYTES",
    "MAX_XLS_BYTES",
    "Limit",
]


@dataclass(frozen=True)
class Limit:
    """A named bound with a default, raised (or lowered) by an environment variable."""

    variable: str
    default: int
    unit: str

    @property
    def value(self) -> int:
        """The bound in force: the environment variable if set, else the default."""
        raw = os.environ.get(self.variable, "").strip().replace("_", "")
        if not raw:
            return self.default
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value <= 0:
            raise OnboardingError(
                f"the environment variable {self.variable}={os.environ[self.variable]!r} is "
                f"not a positive whole number of {self.unit}. Remedy: set it to one (the "
                f"default is {self.default:,}), or unset it"
            )
        return value

    def describe(self) -> str:
        """``"16,777,216 cells (DATOM_MAX_SHEET_CELLS)"``: the bound and how to change it."""
        return f"{self.value:,} {self.unit} ({self.variable})"


MAX_SHEET_ROWS = Limit("DATOM_MAX_SHEET_ROWS", 1_048_576, "rows")
MAX_SHEET_COLUMNS = Limit("DATOM_MAX_SHEET_COLUMNS", 16_384, "columns")
MAX_SHEET_CELLS = Limit("DATOM_MAX_SHEET_CELLS", 1 << 24, "cells")
MAX_SHEET_XML_BYTES = Limit("DATOM_MAX_SHEET_XML_BYTES", 1 << 30, "bytes")
MAX_SHEET_TEXT_BYTES = Limit("DATOM_MAX_SHEET_TEXT_BYTES", 256 << 20, "bytes")
MAX_WORKBOOK_BYTES = Limit("DATOM_MAX_WORKBOOK_BYTES", 256 << 20, "bytes")
MAX_XLS_BYTES = Limit("DATOM_MAX_XLS_BYTES", 512 << 20, "bytes")
MAX_LINE_BYTES = Limit("DATOM_MAX_LINE_BYTES", 16 << 20, "bytes")
MAX_TEXT_COLUMNS = Limit("DATOM_MAX_TEXT_COLUMNS", 16_384, "columns")
MAX_STAT_CELLS = Limit("DATOM_MAX_STAT_CELLS", 2_000_000_000, "cells")


def raise_recourse(limit: Limit, alternative: str) -> str:
    """The remedy of a refusal by ``limit``: the alternative, or raising the limit."""
    return (
        f"{alternative}; if the file is genuine and this machine has the memory, raise the "
        f"limit by setting the environment variable {limit.variable} (now {limit.value:,})"
    )
