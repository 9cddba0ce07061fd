"""Writing one domain extract to disk, byte for byte the same on every run.

pyreadstat (ReadStat) stamps SAS transport and SPSS files with the wall-clock time of the
write and offers no argument to choose it. A monthly extract whose bytes changed only
because it was written a second later would look like new data to anything that hashes
files, so after writing we overwrite those header fields with :data:`FILE_TIMESTAMP`.
The fields sit at places fixed by the formats (SAS TS-140 header records; the SPSS file
header), and each patch first checks that the bytes it replaces look like a timestamp.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pandas as pd
import pyreadstat

__all__ = ["EXTENSIONS", "FILE_TIMESTAMP", "write_extract"]

#: Formats an extract can be written in (the file extension).
EXTENSIONS: frozenset[str] = frozenset({"csv", "xpt", "sav"})

#: The creation/modification time written into every xpt and sav header.
FILE_TIMESTAMP = dt.datetime(2024, 1, 1, 0, 0, 0)

# Spelled out so the headers do not depend on the process locale (strftime %b does).
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# SAS transport: "ddMMMyy:hh:mm:ss", twice (created, modified) in the library header and
# twice in the member header; everything before the OBS header record is metadata.
_XPT_STAMP = re.compile(rb"\d\d[A-Z]{3}\d\d:\d\d:\d\d:\d\d")
_XPT_OBS_HEADER = re.compile(rb"HEADER RECORD\*{7}OBS(?:V8|    ) HEADER RECORD")
_XPT_STAMPS_EXPECTED = 4

# SPSS .sav file header: "$FL2", product name (60), five int32 fields and a float64 bias
# precede creation_date (9 bytes, "dd Mmm yy") and creation_time (8 bytes, "hh:mm:ss").
_SAV_MAGIC = b"$FL2"
_SAV_STAMP_OFFSET = 4 + 60 + 5 * 4 + 8
_SAV_STAMP = re.compile(rb"\d\d [A-Z][a-z]{2} \d\d\d\d:\d\d:\d\d")

_FILE_LABELS = {
    "dm": "Demographics",
    "ex": "Exposure",
    "lb": "Laboratory Test Results",
    "ae": "Adverse Events",
}
# SDTM variable labels (at most 40 characters, as SAS transport v5 requires).
_COLUMN_LABELS = {
    "STUDYID": "Study Identifier",
    "USUBJID": "Unique Subject Identifier",
    "SITEID": "Study Site Identifier",
    "AGE": "Age",
    "SEX": "Sex",
    "RACE": "Race",
    "ARM": "Description of Planned Arm",
    "RFSTDTC": "Subject Reference Start Date",
    "EXSEQ": "Sequence Number",
    "EXTRT": "Name of Treatment",
    "EXDOSE": "Dose",
    "EXDOSU": "Dose Units",
    "EXSTDTC": "Start Date of Treatment",
    "EXENDTC": "End Date of Treatment",
    "LBTESTCD": "Lab Test or Examination Short Name",
    "LBTEST": "Lab Test or Examination Name",
    "LBSTRESN": "Numeric Result/Finding in Standard Units",
    "LBSTRESU": "Standard Units",
    "VISITNUM": "Visit Number",
    "LBDTC": "Date of Specimen Collection",
    "AESEQ": "Sequence Number",
    "AETERM": "Reported Term for the Adverse Event",
    "AEDECOD": "Dictionary-Derived Term",
    "AESEV": "Severity/Intensity",
    "AESER": "Serious Event",
    "AESTDTC": "Start Date of Adverse Event",
    "AEENDTC": "End Date of Adverse Event",
}


def write_extract(frame: pd.DataFrame, path: Path, *, domain: str) -> None:
    """Write ``frame``, the extract of ``domain``, in the format ``path``'s extension names.

    xpt and sav files carry the SDTM dataset and variable labels. The file appears under its final name only once complete (written beside it, then
    renamed), so a sensor watching the inbox never sees half a file.
    """
    ext = path.suffix.lstrip(".").lower()
    if ext not in EXTENSIONS:
        raise ValueError(
            f"cannot write {path.name}: unknown extract format {ext!r}; "
            f"choose one of {sorted(EXTENSIONS)}"
        )
    file_label = _FILE_LABELS[domain]
    column_labels = {c: _COLUMN_LABELS[c] for c in frame.columns}
    partial = path.with_name(f".{path.name}.part")
    try:
        if ext == "csv":
            frame.to_csv(partial, index=False, lineterminator="\n", encoding="utf-8")
        elif ext == "xpt":
            pyreadstat.write_xport(
                frame,
                partial,
                file_label=file_label,
                column_labels=column_labels,
                table_name=domain.upper(),
                file_format_version=5,
            )
            _pin_xpt_timestamps(partial)
        else:
            pyreadstat.write_sav(frame, partial, file_label=file_label, column_labels=column_labels)
            _pin_sav_timestamp(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _pin_xpt_timestamps(path: Path) -> None:
    data = path.read_bytes()
    obs = _XPT_OBS_HEADER.search(data)
    if obs is None:
        raise RuntimeError(f"{path.name}: no OBS header record; not a SAS transport file?")
    header, body = data[: obs.start()], data[obs.start() :]
    t = FILE_TIMESTAMP
    stamp = (
        f"{t.day:02d}{_MONTHS[t.month - 1].upper()}{t.year % 100:02d}:"
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    ).encode("ascii")
    pinned, count = _XPT_STAMP.subn(stamp, header)
    if count != _XPT_STAMPS_EXPECTED:
        raise RuntimeError(
            f"{path.name}: found {count} header timestamps, expected {_XPT_STAMPS_EXPECTED}; "
            "the pyreadstat xport layout changed, update _pin_xpt_timestamps"
        )
    path.write_bytes(pinned + body)


def _pin_sav_timestamp(path: Path) -> None:
    data = bytearray(path.read_bytes())
    start, end = _SAV_STAMP_OFFSET, _SAV_STAMP_OFFSET + 17
    if data[:4] != _SAV_MAGIC or not _SAV_STAMP.fullmatch(bytes(data[start:end])):
        raise RuntimeError(
            f"{path.name}: no creation date/time at the expected header offset; "
            "the pyreadstat sav layout changed, update _pin_sav_timestamp"
        )
    t = FILE_TIMESTAMP
    data[start:end] = (
        f"{t.day:02d} {_MONTHS[t.month - 1]} {t.year % 100:02d}"
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    ).encode("ascii")
    path.write_bytes(bytes(data))
