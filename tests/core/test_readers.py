"""Onboarding readers: every allowlisted format from a fixture made here, and the refusals."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
import xlwt
from fsspec.implementations.memory import MemoryFileSystem

from datom_core._errors import OnboardingError
from datom_core._onboard._readers import (
    SUPPORTED_FORMATS,
    detect_format,
    read_file,
    unsupported_recourse,
)
from tests.core.readstat_sas7bdat import write_sas7bdat

# The known values every fixture holds: an id, a number with a missing value, a text with
# a missing value, a date with a missing value, a datetime with a missing value.
IDS = [1, 2, 3]
AVAL = [1.5, None, -2.25]
ARM = ["Placebo", None, "Drug 10 mg"]
VISDT = [dt.date(2024, 1, 15), None, dt.date(1959, 12, 31)]
VISDTM = [dt.datetime(2024, 1, 15, 8, 30, 5), None, dt.datetime(1960, 1, 1, 0, 0, 1)]

STATISTICAL_EXPECTED = pa.table(
    {
        "ID": pa.array([1.0, 2.0, 3.0]),  # SAS and SPSS store doubles only
        "AVAL": pa.array(AVAL, pa.float64()),
        # These formats have no missing text: the missing value was written as a blank,
        # and a blank is read as the file holds it, "" (as haven reads it).
        "ARM": pa.array(["Placebo", "", "Drug 10 mg"], pa.string()),
        "VISDT": pa.array(VISDT, pa.date32()),
        "VISDTM": pa.array(VISDTM, pa.timestamp("us")),
    }
)


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ID": pd.array(IDS, dtype="int64"),
            "AVAL": pd.array(AVAL, dtype="float64"),
            "ARM": pd.array(ARM, dtype=object),
            "VISDT": pd.array(VISDT, dtype=object),
            "VISDTM": pd.array(VISDTM, dtype=object),
        }
    )


def _write_sas7bdat(path: Path) -> None:
    write_sas7bdat(
        path,
        [
            ("ID", "num", IDS),
            ("AVAL", "num", AVAL),
            ("ARM", "str", ARM),
            ("VISDT", "date", VISDT),
            ("VISDTM", "datetime", VISDTM),
        ],
    )


STATISTICAL_WRITERS: dict[str, Callable[[Path], None]] = {
    "sas7bdat": _write_sas7bdat,
    "xpt": lambda p: pyreadstat.write_xport(_frame(), p),
    "sav": lambda p: pyreadstat.write_sav(_frame(), p),
    "zsav": lambda p: pyreadstat.write_sav(_frame(), p, compress=True),
    "por": lambda p: pyreadstat.write_por(_frame(), p),
    "dta": lambda p: pyreadstat.write_dta(_frame(), p),
}

# Delimited text, typed as fread types it: an empty text field is "", an empty number null,
# a date-time column UTC (fread reads a value without an offset as UTC).
TEXT_EXPECTED = pa.table(
    {
        "ID": pa.array(IDS, pa.int64()),
        "AVAL": pa.array(AVAL, pa.float64()),
        "ARM": pa.array(["Placebo", "", "Drug 10 mg"], pa.string()),
        "VISDT": pa.array(VISDT, pa.date32()),
        "VISDTM": pa.array(VISDTM, pa.timestamp("s")).cast(pa.timestamp("us", tz="UTC")),
    }
)
TEXT_ROWS = [
    ["ID", "AVAL", "ARM", "VISDT", "VISDTM"],
    ["1", "1.5", "Placebo", "2024-01-15", "2024-01-15 08:30:05"],
    ["2", "", "", "", ""],
    ["3", "-2.25", "Drug 10 mg", "1959-12-31", "1960-01-01 00:00:01"],
]


def _write_text(path: Path, delimiter: str) -> None:
    path.write_text("".join(delimiter.join(row) + "\n" for row in TEXT_ROWS), encoding="utf-8")


TEXT_WRITERS: dict[str, Callable[[Path], None]] = {
    "csv": lambda p: _write_text(p, ","),
    "tsv": lambda p: _write_text(p, "\t"),
    "psv": lambda p: _write_text(p, "|"),
    "txt": lambda p: _write_text(p, ";"),
}

_UTC = pa.timestamp("us", tz="UTC")
# The cells as written into the workbooks (Excel has no time zones: wall-clock values).
EXCEL_CELLS: dict[str, list[object]] = {
    "ID": [1.0, 2.0, 3.0],
    "AVAL": AVAL,
    "ARM": ARM,
    "VISDT": VISDT[:2] + [dt.date(2001, 2, 3)],
    "VISDTM": VISDTM[:2] + [dt.datetime(2001, 2, 3, 4, 5, 6)],
    "FLAG": [True, False, None],
}
EXCEL_EXPECTED = pa.table(
    {
        "ID": pa.array(EXCEL_CELLS["ID"]),  # Excel numbers are doubles
        "AVAL": pa.array(AVAL, pa.float64()),
        "ARM": pa.array(ARM, pa.string()),
        # date cells are timestamps (a date is its midnight), as readxl and pandas read them
        "VISDT": pa.array(EXCEL_CELLS["VISDT"], pa.date32()).cast(_UTC),
        "VISDTM": pa.array(EXCEL_CELLS["VISDTM"], _UTC),
        "FLAG": pa.array([True, False, None], pa.bool_()),
    }
)


def _excel_rows() -> list[list[object]]:
    header = list(EXCEL_CELLS)
    return [header] + [[EXCEL_CELLS[name][i] for name in header] for i in range(3)]


def _write_xlsx(path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in _excel_rows():
        sheet.append(row)
    workbook.create_sheet("ignored").append(["not", "read"])
    workbook.save(path)


def _write_xls(path: Path) -> None:
    workbook = xlwt.Workbook()
    sheet = workbook.add_sheet("data")
    date_style = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    datetime_style = xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM:SS")
    for r, row in enumerate(_excel_rows()):
        for c, value in enumerate(row):
            if isinstance(value, dt.datetime):
                sheet.write(r, c, value, datetime_style)
            elif isinstance(value, dt.date):
                sheet.write(r, c, value, date_style)
            elif value is not None:
                sheet.write(r, c, value)
    workbook.save(str(path))


PARQUET_EXPECTED = pa.table(
    {
        "ID": pa.array(IDS, pa.int64()),
        "AVAL": pa.array(AVAL, pa.float64()),
        "ARM": pa.array(ARM, pa.string()),
        "VISDT": pa.array(VISDT, pa.date32()),
        "VISDTM": pa.array(VISDTM, pa.timestamp("us")),
    }
)

# format -> (write the fixture, the table read_file must return)
FIXTURES: dict[str, tuple[Callable[[Path], None], pa.Table]] = {
    **{fmt: (write, TEXT_EXPECTED) for fmt, write in TEXT_WRITERS.items()},
    "parquet": (lambda p: pq.write_table(PARQUET_EXPECTED, p), PARQUET_EXPECTED),
    **{fmt: (write, STATISTICAL_EXPECTED) for fmt, write in STATISTICAL_WRITERS.items()},
    "xlsx": (_write_xlsx, EXCEL_EXPECTED),
    "xls": (_write_xls, EXCEL_EXPECTED),
}


def _assert_same(actual: pa.Table, expected: pa.Table) -> None:
    assert actual.schema.remove_metadata() == expected.schema, actual.schema
    assert actual.to_pydict() == expected.to_pydict()


def test_every_supported_format_has_a_fixture() -> None:
    assert set(FIXTURES) == SUPPORTED_FORMATS
    assert len(SUPPORTED_FORMATS) == 13


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_reads_known_values(tmp_path: Path, fmt: str) -> None:
    write, expected = FIXTURES[fmt]
    path = tmp_path / f"extract.{fmt}"
    write(path)
    _assert_same(read_file(path), expected)
    # The same through an explicit format and a name with another case.
    upper = tmp_path / f"EXTRACT.{fmt.upper()}"
    path.rename(upper)
    _assert_same(read_file(str(upper), format=fmt.upper()), expected)


@pytest.fixture
def memory_fs() -> Iterator[tuple[MemoryFileSystem, str]]:
    """An fsspec memory filesystem and a fresh folder on it (removed afterwards)."""
    fs = MemoryFileSystem()
    root = f"/readers-{uuid.uuid4().hex}"
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_reads_from_an_fsspec_filesystem(
    tmp_path: Path, memory_fs: tuple[MemoryFileSystem, str], fmt: str
) -> None:
    fs, root = memory_fs
    write, expected = FIXTURES[fmt]
    local = tmp_path / f"extract.{fmt}"
    write(local)
    fs.put_file(str(local), f"{root}/inbox/extract.{fmt}")
    _assert_same(read_file(f"{root}/inbox/extract.{fmt}", filesystem=fs), expected)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xpt", "xlsx"])
def test_reads_from_s3(tmp_path: Path, s3_endpoint: str, s3_bucket: str, fmt: str) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    write, expected = FIXTURES[fmt]
    local = tmp_path / f"dm.{fmt}"
    write(local)
    fs.put_file(str(local), f"{s3_bucket}/input_files/dm.{fmt}")
    _assert_same(read_file(f"{s3_bucket}/input_files/dm.{fmt}", filesystem=fs), expected)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dm.csv", "csv"),
        ("DM.CSV", "csv"),
        ("s3://bucket/inbox/ae.Sas7bdat", "sas7bdat"),
        (Path("dir.with.dots") / "lb.xpt", "xpt"),
        ("x.zsav", "zsav"),
        ("dm.rds", None),
        ("dm.json", None),
        ("dm.xml", None),
        ("dm.csv.gz", None),
        ("README", None),
        (".csv", None),
    ],
)
def test_detect_format(name: str | Path, expected: str | None) -> None:
    assert detect_format(name) == expected


@pytest.mark.parametrize("ext", ["rds", "json", "xml"])
def test_unsupported_format_is_refused_with_the_recourse(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"adsl.{ext}"
    path.write_bytes(b"{}")
    assert detect_format(path) is None
    recourse = unsupported_recourse(ext)
    assert f".{ext}" in recourse
    assert "read it yourself and write it as a derived table" in recourse
    assert "convert it once to csv/parquet" in recourse
    with pytest.raises(OnboardingError) as refused:
        read_file(path)
    assert str(path) in str(refused.value)
    assert recourse in str(refused.value)
    # An explicit format outside the allowlist is refused the same way.
    csv = tmp_path / "adsl.csv"
    csv.write_text("a\n1\n")
    with pytest.raises(OnboardingError, match="read it yourself"):
        read_file(csv, format=ext)


def test_file_without_extension_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "extract"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(OnboardingError, match="no extension"):
        read_file(path)
    assert read_file(path, format="csv").to_pydict() == {"a": [1], "b": [2]}


def _truncated_parquet(path: Path) -> None:
    pq.write_table(PARQUET_EXPECTED, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


GARBAGE = b"this is not what the extension promises\n" * 40


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("truncated.parquet", _truncated_parquet),
        ("garbage.xpt", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.xlsx", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.xls", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.sas7bdat", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.sav", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.zsav", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.por", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.dta", lambda p: p.write_bytes(GARBAGE)),
        ("garbage.parquet", lambda p: p.write_bytes(GARBAGE)),
        ("ragged.csv", lambda p: p.write_text("a,b\n1,2\n3,4,5\n")),
    ],
)
def test_corrupt_file_is_an_onboarding_error(
    tmp_path: Path, name: str, make: Callable[[Path], None]
) -> None:
    path = tmp_path / name
    make(path)
    with pytest.raises(OnboardingError) as refused:
        read_file(path)
    message = str(refused.value)
    fmt = detect_format(path)
    assert str(path) in message
    assert fmt is not None and fmt in message
    assert "Remedy:" in message
    assert refused.value.__cause__ is not None  # the library's own error is kept


def test_text_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("site,name\n1,Jos\u00e9\n".encode("latin-1"))
    with pytest.raises(OnboardingError, match="not valid UTF-8") as refused:
        read_file(path)
    assert str(path) in str(refused.value)
    assert "save the file as UTF-8, or name its encoding" in str(refused.value)


@pytest.mark.parametrize("fmt", sorted(SUPPORTED_FORMATS))
def test_empty_file_is_an_onboarding_error(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"empty.{fmt}"
    path.write_bytes(b"")
    with pytest.raises(OnboardingError, match="empty") as refused:
        read_file(path)
    assert str(path) in str(refused.value)


def test_missing_file_is_an_onboarding_error(tmp_path: Path) -> None:
    with pytest.raises(OnboardingError, match="does not exist"):
        read_file(tmp_path / "absent.csv")
    with pytest.raises(OnboardingError, match="does not exist"):
        read_file("/nowhere/absent.xpt", filesystem=MemoryFileSystem())
