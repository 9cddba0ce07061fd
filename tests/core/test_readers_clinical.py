"""Readers on real clinical files (the CDISC pilot, ``tests/fixtures/cdisc``) and on
hand-made edge files: blank SAS text, encodings, the sync and CLI encoding options."""

from __future__ import annotations

import datetime as dt
import shutil
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyreadstat
import pytest

import datom_core as dc
from tests.core.cli_helpers import run, run_json
from tests.core.projects import new_project
from tests.rdatom.clinical_files import EDGE_TYPES

CDISC = Path(__file__).resolve().parent.parent / "fixtures" / "cdisc"
PLACEHOLDER = "Alzheimerxxs"  # patched to "Alzheimer" + one non-UTF-8 byte + "s"


def _read(path: Path, **kwargs: object) -> tuple[pa.Table, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = dc.read_extract(path, **kwargs)  # type: ignore[arg-type]
    return table, [str(w.message) for w in caught if w.category is dc.OnboardingWarning]


# -- finding 1: blank SAS text is "", as the file holds it ---------------------------------


def test_blank_sas_text_is_read_as_blank_not_missing() -> None:
    dm, _ = _read(CDISC / "dm.xpt")
    raw, _ = pyreadstat.read_xport(str(CDISC / "dm.xpt"))
    for name in ("DTHFL", "DTHDTC", "RFSTDTC", "ARMCD"):
        column = dm.column(name)
        assert column.null_count == 0, name  # SAS has no missing text: only blanks
        assert column.to_pylist() == list(raw[name]), name
    flags = Counter(dm.column("DTHFL").to_pylist())
    assert flags[""] > 0 and flags["Y"] > 0 and flags[""] + flags["Y"] == dm.num_rows
    # A pandas user counting deaths gets the flagged subjects, not every subject.
    assert dm.to_pandas()["DTHFL"].eq("Y").sum() == flags["Y"]
    assert dm.to_pandas()["DTHFL"].notna().sum() == dm.num_rows


WRITERS: dict[str, Callable[[pd.DataFrame, str], None]] = {
    "xpt": lambda df, p: pyreadstat.write_xport(df, p),
    "sav": lambda df, p: pyreadstat.write_sav(df, p),
    "dta": lambda df, p: pyreadstat.write_dta(df, p),
}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_blank_text_stays_blank_in_every_statistical_format(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"blank.{fmt}"
    WRITERS[fmt](pd.DataFrame({"FL": ["Y", "", " ", "N"], "N": [1.0, 2.0, 3.0, 4.0]}), str(path))
    column = dc.read_extract(path).column("FL")
    assert column.null_count == 0
    assert column.to_pylist()[:2] == ["Y", ""] and column.to_pylist()[3] == "N"


# -- finding 4: encodings ------------------------------------------------------------------


def test_windows_1252_xpt_is_read_with_a_warning_naming_the_encoding() -> None:
    ts, notes = _read(CDISC / "ts.xpt")
    assert ts.num_rows == 33
    assert any("Alzheimer\u2019s" in v for v in ts.column("TSVAL").to_pylist())  # 0x92
    assert len(notes) == 1 and "Windows-1252 (cp1252)" in notes[0] and "ts.xpt" in notes[0]
    named, quiet = _read(CDISC / "ts.xpt", encoding="cp1252")
    assert quiet == [] and named.equals(ts)


def _patched(tmp_path: Path, fmt: str, byte: bytes) -> Path:
    """A file of ``fmt`` whose text holds ``byte`` (not UTF-8) where the writer put "x"."""
    path = tmp_path / f"enc.{fmt}"
    WRITERS[fmt](pd.DataFrame({"TXT": [PLACEHOLDER, "plain"], "N": [1.0, 2.0]}), str(path))
    data = path.read_bytes()
    assert data.count(PLACEHOLDER.encode()) == 1
    path.write_bytes(data.replace(PLACEHOLDER.encode(), b"Alzheimer" + byte + b"s" + b" "))
    return path


@pytest.mark.parametrize("fmt", sorted(WRITERS))
@pytest.mark.parametrize(
    ("byte", "shown", "text"),
    [
        (b"\x92", "Windows-1252", "Alzheimer\u2019s"),
        # 0x81 is no character in Windows-1252: Latin-1 (which decodes any byte) is next.
        (b"\x81", "Latin-1", "Alzheimer\x81s"),
    ],
)
def test_text_not_valid_in_the_declared_encoding_falls_back(
    tmp_path: Path, fmt: str, byte: bytes, shown: str, text: str
) -> None:
    path = _patched(tmp_path, fmt, byte)
    table, notes = _read(path)
    assert table.column("TXT").to_pylist()[0].rstrip() == text
    assert len(notes) == 1 and shown in notes[0] and str(path) in notes[0]


def test_a_named_encoding_that_does_not_fit_is_refused_as_such_not_as_corrupt() -> None:
    with pytest.raises(dc.OnboardingError) as refused:
        dc.read_extract(CDISC / "ts.xpt", encoding="utf-8")
    message = str(refused.value)
    assert "not valid utf-8" in message and "corrupt" not in message
    assert "encoding='cp1252'" in message and "ts.xpt" in message
    with pytest.raises(dc.OnboardingError, match="'klingon' is not known"):
        dc.read_extract(CDISC / "ts.xpt", encoding="klingon")


def test_csv_in_windows_1252_reads_with_the_encoding_named(tmp_path: Path) -> None:
    path = tmp_path / "sites.csv"
    path.write_bytes("SITE,NAME\n1,Jos\u00e9\u2019s\n".encode("cp1252"))
    with pytest.raises(dc.OnboardingError, match="encoding='cp1252'"):
        dc.read_extract(path)
    table = dc.read_extract(path, encoding="cp1252")
    assert table.column("NAME").to_pylist() == ["Jos\u00e9\u2019s"]


def test_sync_reports_the_fallback_encoding_and_takes_a_named_one(tmp_path: Path) -> None:
    conn = new_project(tmp_path / "a")
    shutil.copy(CDISC / "ts.xpt", conn.path / "input_files" / "ts.xpt")
    [row] = conn.sync()
    assert row.status == "synced" and "Windows-1252" in row.message
    expected = dc.hash_table(dc.read_extract(CDISC / "ts.xpt", encoding="cp1252")).data_sha
    assert conn.version("ts").data_sha == expected

    named = new_project(tmp_path / "b")
    shutil.copy(CDISC / "ts.xpt", named.path / "input_files" / "ts.xpt")
    [row] = named.sync(encoding="cp1252")
    assert row.status == "synced" and "Windows-1252" not in row.message
    assert named.version("ts").data_sha == expected


def test_cli_sync_and_check_hashable_take_encoding(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / "input_files"
    (inbox / "sites.csv").write_bytes("SITE,NAME\n1,Jos\u00e9\n".encode("cp1252"))
    dev = ("--repo", conn.path)
    refused = run(*dev, "--json", "sync")
    assert refused.exit_code == 1 and "--encoding cp1252" in refused.stdout
    synced = {r["name"]: r for r in run_json(*dev, "sync", "--encoding", "cp1252")}
    assert synced["sites"]["status"] == "synced"
    assert conn.read("sites", as_="arrow").column("NAME").to_pylist() == ["Jos\u00e9"]
    report = run_json("check-hashable", inbox / "sites.csv", "--encoding", "latin1")
    assert report["ok"] is True


# -- finding 5: xlsx date cells are timestamps, as readxl and pandas read them -------------


def test_xlsx_date_cells_are_utc_timestamps_as_pandas_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "dates.xlsx"
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["TRTSDT", "ADTM", "N"])
    sheet.append([dt.date(2014, 1, 2), dt.datetime(2014, 1, 2, 11, 45, 0), 1])
    sheet.append([None, dt.datetime(1959, 12, 31, 23, 59, 59), 2])
    sheet.append([dt.date(1959, 12, 31), None, 3])
    workbook.save(path)

    table = dc.read_extract(path)
    utc = pa.timestamp("us", tz="UTC")
    assert table.schema.field("TRTSDT").type == utc and table.schema.field("ADTM").type == utc
    frame = pd.read_excel(path, engine="openpyxl")
    assert str(frame["TRTSDT"].dtype).startswith("datetime64")
    for name in ("TRTSDT", "ADTM"):
        expected = [None if pd.isna(v) else v.to_pydatetime() for v in frame[name]]
        got = [
            None if v is None else v.replace(tzinfo=None) for v in table.column(name).to_pylist()
        ]
        assert got == expected, name
    # The same data_sha as the table pandas reads (a date column would hash as "date").
    assert dc.hash_table(table).data_sha == dc.hash_table(frame).data_sha


# -- finding 3: csv typed as fread types it (checked against R's fread in tests/rdatom) -----

UTC = pa.timestamp("us", tz="UTC")
FREAD_TYPES = {
    "INT": pa.int64(),  # "+3", "007", NA and empty among integers
    "INT64": pa.int64(),
    "DBL": pa.float64(),
    "DBLWHOLE": pa.float64(),
    "LGL_UPPER": pa.bool_(),
    "LGL_TITLE": pa.bool_(),
    "LGL_LOWER": pa.bool_(),
    "TF": pa.string(),  # T/F is text to fread
    "ZERO_ONE": pa.int64(),
    "TXT": pa.string(),
    "EMPTY": pa.bool_(),  # no value at all: logical, all missing
    "DATE": pa.date32(),
    "DTM": UTC,
    "DTC": pa.string(),  # ISO 8601 of mixed precision
    "BADDATE": pa.string(),  # 2023-02-29 is no date
    "BIGINT": pa.string(),  # beyond int64
    "HUGE": pa.string(),  # 1e400 overflows
    "TIME": pa.string(),
    "PADNUM": pa.int64(),
}


def test_csv_columns_are_typed_by_freads_rules(tmp_path: Path) -> None:
    path = tmp_path / "edge_types.csv"
    _text_file(path, EDGE_TYPES)
    table = dc.read_extract(path)
    assert {f.name: f.type for f in table.schema} == FREAD_TYPES
    assert table.column("INT").to_pylist() == [1, 3, 7, None, None, -2]
    assert table.column("TXT").to_pylist() == ["x", "", "", None, "NA", "y"]
    assert table.column("DATE").to_pylist()[:2] == [dt.date(2024, 1, 15), dt.date(2024, 1, 5)]
    moments = table.column("DTM").to_pylist()
    assert moments[3] == dt.datetime(2024, 1, 15, 6, 30, 5, tzinfo=dt.UTC)  # +02:00
    assert moments[4] == dt.datetime(2024, 1, 5, 10, 0, 5, tzinfo=dt.UTC)  # -0130
    assert table.column("DTC").to_pylist()[:3] == ["2014-01-02T11:45", "2014-01-02", "2014-01"]


def test_sdtm_dtc_text_of_a_csv_export_stays_text(tmp_path: Path) -> None:
    ds = dc.read_extract(CDISC / "ds.xpt")
    path = tmp_path / "ds.csv"
    ds.to_pandas().to_csv(path, index=False)
    again = dc.read_extract(path)
    assert again.schema.field("DSDTC").type == pa.string()
    assert again.column("DSDTC").to_pylist() == ds.column("DSDTC").to_pylist()
    assert any(len(v) == 10 for v in again.column("DSDTC").to_pylist())  # date-only kept
    assert again.schema.field("DSSTDTC").type == pa.date32()  # every value a date


def _text_file(path: Path, columns: dict[str, list[str]]) -> None:
    rows = zip(*columns.values(), strict=True)
    path.write_text("\n".join([",".join(columns), *(",".join(r) for r in rows)]) + "\n")
