"""Onboarding readers: one raw extract file in, one ``pyarrow.Table`` out.

datom onboards exactly the formats in :data:`SUPPORTED_FORMATS`, chosen by the file's
lowercase extension:

=========================  ====================================================
csv, tsv, psv, txt         delimited text, ``pyarrow.csv`` (``,`` ``\\t`` ``|``;
                           txt: sniffed from the first line, see ``_text``),
                           typed by fread's rules (``_text_types``)
parquet                    ``pyarrow.parquet``
sas7bdat, xpt              SAS, through pyreadstat
sav, zsav, por             SPSS, through pyreadstat
dta                        Stata, through pyreadstat
xls, xlsx                  Excel, first sheet, through python-calamine
=========================  ====================================================

Every table they return has unique, non-empty string column names and only plain
columns (numbers, strings, booleans, dates, timestamps, times); no object or mixed
columns. Anything else (another format, a corrupt or empty file, a bad header) is an
:class:`~datom_core.OnboardingError` that names the file, the format and the remedy.

Memory stays bounded on hostile files: a file beyond one of the limits in ``_limits``
(an xlsx zip bomb, a sheet past Excel's last row or column or over 16,777,216 cells, a
text record longer than 16 MiB, a SAS/SPSS/Stata header claiming more rows than the file
can hold) is refused before it is read, naming the limit and the environment variable
that raises it (``DATOM_MAX_SHEET_CELLS``, ``DATOM_MAX_LINE_BYTES``, ...).
"""

from datom_core._onboard._readers._dispatch import (
    SUPPORTED_FORMATS,
    detect_format,
    read_file,
    unsupported_recourse,
)

__all__ = ["SUPPORTED_FORMATS", "detect_format", "read_file", "unsupported_recourse"]
