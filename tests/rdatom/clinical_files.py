"""The files both languages onboard in ``test_clinical_files.py``, written once here so
that R and Python read the very same bytes.

* the six CDISC pilot SAS transport files (``tests/fixtures/cdisc``, MIT licence there);
* their csv and xlsx exports, written by pandas from the tables Python reads;
* small hand-made edge files: fread's typing rules, blank vs missing text, Windows-1252
  text, Excel dates; one file per departure, so that the rest stays compared.

``CASES`` says, file by file, whether R and Python must agree on ``data_sha`` or where R's
reader departs from the file (``DEPARTURES``, docs/guides/r-colleagues.md, "Onboarded files").
"""

from __future__ import annotations

import datetime as dt
import shutil
import warnings
from pathlib import Path

import openpyxl
import pandas as pd
import pyreadstat

import datom_core as dc

CDISC = Path(__file__).resolve().parent.parent / "fixtures" / "cdisc"
DOMAINS = ("adsl", "ae", "dm", "ds", "ex", "ts")

#: Where R's reader departs from the file; datom keeps what the file holds.
DEPARTURES = {
    "haven-bytes": "haven keeps non-UTF-8 text as raw bytes, which R's datom_sync then "
    "fails to write (datom decodes Windows-1252, with a warning)",
    "fread-quotes": "fread keeps a quoted field's doubled quotes (datom: one quote)",
    "fread-strip": "fread strips spaces around unquoted text (datom keeps them)",
    "fread-midnight": "fread turns date-only values among date-times into midnight "
    "date-times (datom keeps the column as text)",
    "haven-dta-trim": "haven drops trailing spaces of Stata text (datom keeps them)",
    "fread-rounding": "fread misrounds some 15-digit decimals by one ulp (datom: "
    "correctly rounded)",
    "readxl-trim": "readxl trims spaces around cell text (datom keeps them)",
    "readxl-time": "readxl reads a time of day as a 1899-12-31 date-time (datom: a time)",
}

#: file name -> None (R and Python agree) or the key of the departure.
CASES: dict[str, str | None] = {
    **{f"{d}.xpt": None for d in DOMAINS},
    **{f"{d}_csv.csv": None for d in DOMAINS},
    **{f"{d}_xlsx.xlsx": None for d in DOMAINS},
    "ts.xpt": "haven-bytes",
    "ds_csv.csv": "fread-quotes",  # DSTERM: "PT FINDS PATCHES""INCONVENIENT ..."
    "ds_xlsx.xlsx": "readxl-trim",  # DSSPID: " 7"
    "edge_types.csv": None,
    "edge_blank_xpt.xpt": None,
    "edge_blank_sav.sav": None,
    "edge_blank_dta.dta": None,
    "edge_dates.xlsx": None,
    "edge_cp1252.xpt": "haven-bytes",
    "edge_quotes.csv": "fread-quotes",
    "edge_padded_csv.csv": "fread-strip",
    "edge_date_datetime.csv": "fread-midnight",
    "edge_subsecond.csv": None,  # R hashes POSIXct at microseconds: fread's last bits go
    "edge_space.dta": "haven-dta-trim",
    "edge_rounding.csv": "fread-rounding",
    "edge_padded_xlsx.xlsx": "readxl-trim",
    "edge_time.xlsx": "readxl-time",
}

# fread's typing rules, one column each (every rule checked against R's fread).
EDGE_TYPES = {
    "INT": ["1", "+3", "007", "NA", "", "-2"],
    "INT64": ["3000000000", "1", "-2147483648", "3", "4", "5"],
    "DBL": ["1.5", "-2e3", ".5", "NaN", "-Inf", ""],
    "DBLWHOLE": ["1.0", "2.0", "", "3.0", "4.0", "5.0"],
    "LGL_UPPER": ["TRUE", "FALSE", "NA", "", "TRUE", "FALSE"],
    "LGL_TITLE": ["True", "False", "True", "False", "", "True"],
    "LGL_LOWER": ["true", "false", "NA", "true", "false", "true"],
    "TF": ["T", "F", "T", "F", "T", "F"],
    "ZERO_ONE": ["0", "1", "0", "1", "1", "0"],
    "TXT": ["x", '""', "", "NA", '"NA"', "y"],
    "EMPTY": ["", "", "", "", "", ""],
    "DATE": ["2024-01-15", "2024-1-5", "", "1959-12-31", "2024-02-29", "NA"],
    "DTM": [
        "2024-01-15T08:30:05",
        "2024-01-15 09:00:00",
        "2024-01-15T08:30:05Z",
        "2024-01-15T08:30:05+02:00",
        "2024-1-5T8:30:05-0130",
        "",
    ],
    "DTC": ["2014-01-02T11:45", "2014-01-02", "2014-01", "", "2014-01-02T11:45", "2014"],
    "BADDATE": ["2023-02-29", "2024-01-01", "", "2024-01-02", "2024-01-03", "2024-01-04"],
    "BIGINT": ["99999999999999999999", "1", "2", "3", "4", "5"],
    "HUGE": ["1e400", "1", "2", "3", "4", "5"],
    "TIME": ["08:30:05", "09:00:00", "", "10:00:00", "11:00:00", "12:00:00"],
    "PADNUM": [" 4 ", "5", "6", "7", "8", "9"],
}

ONE_COLUMN = {
    "edge_quotes.csv": ("TERM", ['"say ""hi"""', "plain", ""]),
    "edge_padded_csv.csv": ("TERM", ["  x  ", "y", " z"]),
    "edge_date_datetime.csv": ("DTC", ["2014-01-02", "2014-01-02T11:45:00", ""]),
    "edge_subsecond.csv": ("DTM", ["2024-01-15T08:30:05.1", "1999-12-31T23:59:59.999999", ""]),
    "edge_rounding.csv": ("X", ["-5.26389884921173e-08", "3.67279000892518e-12", "1.5"]),
}

PLACEHOLDER = "Alzheimerxxs"


def write_all(folder: Path) -> None:
    """Every file of :data:`CASES` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for domain in DOMAINS:
        source = CDISC / f"{domain}.xpt"
        shutil.copy(source, folder / source.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dc.OnboardingWarning)  # ts.xpt is Windows-1252
            frame = dc.read_extract(source).to_pandas()
        frame.to_csv(folder / f"{domain}_csv.csv", index=False)
        frame.to_excel(folder / f"{domain}_xlsx.xlsx", index=False)
    _text(folder / "edge_types.csv", EDGE_TYPES)
    for name, (column, values) in ONE_COLUMN.items():
        _text(folder / name, {column: values, "N": [str(i) for i in range(len(values))]})
    _blank_files(folder)
    _cp1252_xpt(folder / "edge_cp1252.xpt")
    _workbooks(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(CASES)


def _text(path: Path, columns: dict[str, list[str]]) -> None:
    rows = zip(*columns.values(), strict=True)
    lines = [",".join(columns), *(",".join(row) for row in rows)]
    path.write_bytes(("\n".join(lines) + "\n").encode())


def _blank_files(folder: Path) -> None:
    # Blank text ("" and " ") beside missing numbers: text stays "", numbers are NA.
    frame = pd.DataFrame(
        {
            "FL": ["Y", "", "", "N", ""],
            "AVAL": [1.5, float("nan"), -0.0, 2.0, float("nan")],
            "TERM": ["a", "b", "", "", "e"],
        }
    )
    pyreadstat.write_xport(frame, str(folder / "edge_blank_xpt.xpt"))
    pyreadstat.write_sav(frame, str(folder / "edge_blank_sav.sav"))
    pyreadstat.write_dta(frame, str(folder / "edge_blank_dta.dta"))
    spaced = pd.DataFrame({"FL": ["Y", " ", "a "], "N": [1.0, 2.0, 3.0]})
    pyreadstat.write_dta(spaced, str(folder / "edge_space.dta"))


def _cp1252_xpt(path: Path) -> None:
    frame = pd.DataFrame({"TSVAL": [PLACEHOLDER, "plain"], "N": [1.0, 2.0]})
    pyreadstat.write_xport(frame, str(path))
    data = path.read_bytes()
    path.write_bytes(data.replace(PLACEHOLDER.encode(), b"Alzheimer\x92s "))


def _workbooks(folder: Path) -> None:
    _workbook(
        folder / "edge_dates.xlsx",
        ["TRTSDT", "ADTM", "MIXED", "AVAL", "FLAG", "TERM", "NUMTXT", "EMPTY"],
        [
            [dt.date(2014, 1, 2), dt.datetime(2014, 1, 2, 11, 45), dt.date(2014, 1, 2)],
            [None, dt.datetime(1959, 12, 31, 23, 59, 59), dt.datetime(2014, 1, 3, 8, 0)],
            [dt.date(1959, 12, 31), None, None],
        ],
        [[1.5, True, "a", 1, None], [None, False, "", "x", None], [-2.25, None, "c", 2.5, None]],
    )
    _workbook(folder / "edge_time.xlsx", ["ATM"], [[dt.time(8, 30, 5)], [None]], [[], []])
    _workbook(folder / "edge_padded_xlsx.xlsx", ["TERM"], [["  pad  "], ["x"]], [[], []])


def _workbook(
    path: Path, header: list[str], dates: list[list[object]], rest: list[list[object]]
) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(header)
    for first, second in zip(dates, rest, strict=True):
        sheet.append([*first, *second])
    workbook.save(path)
