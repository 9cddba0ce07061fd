"""Onboarding readers, format by format: text streaming and sniffing, SAS/SPSS/Stata
chunking and types, and the Excel column rules."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyreadstat
import pytest

from datom_core._errors import OnboardingError
from datom_core._onboard._readers import _stat, _text, read_file
from datom_core._onboard._readers._common import Source
from datom_core._onboard._readers._excel import cell_text

# --- delimited text -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "delimiter"),
    [
        ("a,b,c", ","),
        ("a\tb\tc", "\t"),
        ("a|b|c", "|"),
        ("a;b;c", ";"),
        ('"x;y",b,c', ","),  # delimiters inside quotes do not count
        ('"x,y,z";b;c', ";"),
        ("a,b;c", ","),  # a tie goes to the earlier of , \t | ;
        ("a;b|c", "|"),
        ("single", ","),
    ],
)
def test_txt_delimiter_is_sniffed_from_the_first_line(
    tmp_path: Path, header: str, delimiter: str
) -> None:
    path = tmp_path / "extract.txt"
    width = len(header.replace('"x;y"', "x").replace('"x,y,z"', "x").split(delimiter))
    path.write_text(header + "\n" + delimiter.join(["7"] * width) + "\n", encoding="utf-8")
    assert _text.sniff_delimiter(Source(str(path), "txt")) == delimiter
    assert read_file(path).num_columns == width


def test_numbers_are_parsed_with_correct_rounding(tmp_path: Path) -> None:
    texts = ["0.1", "2.675", "123456789.12345678", "5e-324", "1.7976931348623157e308", "-0.0"]
    path = tmp_path / "lb.csv"
    path.write_text("x\n" + "\n".join(texts) + "\n")
    values = read_file(path).column("x").to_pylist()
    assert [v.hex() for v in values] == [float(t).hex() for t in texts]
    assert math.copysign(1.0, values[-1]) == -1.0


def test_quoted_values_may_hold_newlines_and_delimiters(tmp_path: Path) -> None:
    path = tmp_path / "ae.csv"
    path.write_text('id,comment\n1,"line one\nline two, with a comma"\n2,plain\n')
    table = read_file(path)
    assert table.column("comment").to_pylist() == ["line one\nline two, with a comma", "plain"]


def test_header_only_csv_is_a_table_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "sae.csv"
    path.write_text("USUBJID,AETERM\n")
    table = read_file(path)
    assert table.column_names == ["USUBJID", "AETERM"]
    assert table.num_rows == 0


@pytest.mark.parametrize(
    ("header", "problem"),
    [("a,b,a,b", "duplicate column names: 'a', 'b'"), ("a,,c", "column 2 has no name")],
)
def test_bad_csv_header_is_refused(tmp_path: Path, header: str, problem: str) -> None:
    path = tmp_path / "dm.csv"
    path.write_text(header + "\n" + ",".join("1" * len(header.split(","))) + "\n")
    with pytest.raises(OnboardingError, match=problem) as refused:
        read_file(path)
    assert "Remedy:" in str(refused.value)


def _multi_block_csv(path: Path, rows: int, tail: str = "") -> None:
    body = "".join(f"{i},{i * 0.5},s{i % 7},2024-01-{i % 28 + 1:02d}\n" for i in range(rows))
    path.write_text("id,x,s,d\n" + body + tail)


def test_streaming_read_of_many_blocks_equals_the_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "vs.csv"
    _multi_block_csv(path, 3000)
    streamed = _text.read_delimited(Source(str(path), "csv"), block_size=4096)
    whole = read_file(path)
    assert streamed.schema == whole.schema
    assert streamed.equals(whole)
    assert whole.schema.types == [pa.int64(), pa.float64(), pa.string(), pa.date32()]


@pytest.mark.parametrize(
    ("tail", "column", "expected_type", "last"),
    [
        ("3000.5,1.25,x,2024-02-01\n", "id", pa.float64(), 3000.5),
        ("3000,1.5,x,not a date\n", "d", pa.string(), "not a date"),
        # an integer beyond int64 is text to fread, so the whole column is
        ("99999999999999999999999,1,x,2024-02-01\n", "id", pa.string(), "99999999999999999999999"),
    ],
)
def test_type_changing_after_the_first_block_is_read_correctly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tail: str,
    column: str,
    expected_type: pa.DataType,
    last: object,
) -> None:
    path = tmp_path / "vs.csv"
    _multi_block_csv(path, 3000, tail)
    whole = read_file(path)
    # The first block alone cannot type the column: streamed with small blocks, the file
    # is still typed from every block.
    monkeypatch.setenv("DATOM_MAX_LINE_BYTES", "4096")
    monkeypatch.setattr(_text, "WHOLE_READ_LIMIT", 0)
    table = read_file(path)
    assert table.schema.field(column).type == expected_type
    assert table.column(column).to_pylist()[-1] == last
    assert table.num_rows == 3001
    assert table.equals(whole)


def test_column_empty_in_the_first_block_is_typed_from_later_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cm.csv"
    path.write_text("id,dose\n" + "".join(f"{i},\n" for i in range(2000)) + "2000,12.5\n")
    monkeypatch.setenv("DATOM_MAX_LINE_BYTES", "2048")
    monkeypatch.setattr(_text, "WHOLE_READ_LIMIT", 0)  # stream it
    dose = read_file(path).column("dose")
    assert dose.type == pa.float64()
    assert dose.null_count == 2000
    assert dose.to_pylist()[-1] == 12.5


# --- SAS, SPSS, Stata -----------------------------------------------------------------

ROWS = 7
GAPPY = pd.DataFrame(  # the first chunk (2 rows) of every column is entirely missing
    {
        "AVAL": [np.nan, np.nan, 1.0, 2.5, np.nan, -4.0, 0.125],
        "ARM": [None, "", "A", "B", "", None, "C"],
        "VISDT": [None, None, dt.date(2024, 1, 1), None, dt.date(2024, 3, 1), None, None],
        "EMPTYDT": [np.nan] * ROWS,
        "EMPTYNUM": [np.nan] * ROWS,
    }
)


@pytest.mark.parametrize(
    ("fmt", "write"),
    [
        ("xpt", lambda df, p: pyreadstat.write_xport(df, p, variable_format={"EMPTYDT": "DATE9"})),
        ("sav", lambda df, p: pyreadstat.write_sav(df, p, variable_format={"EMPTYDT": "DATE11"})),
        ("por", lambda df, p: pyreadstat.write_por(df, p, variable_format={"EMPTYDT": "DATE11"})),
        ("dta", lambda df, p: pyreadstat.write_dta(df, p, variable_format={"EMPTYDT": "%td"})),
    ],
)
def test_chunks_share_one_type_and_blank_text_stays_blank(tmp_path: Path, fmt: str, write) -> None:
    path = tmp_path / f"ex.{fmt}"
    write(GAPPY, str(path))
    source = Source(str(path), fmt)
    chunked = _stat.read_statistical(source, chunk_rows=2)
    assert chunked.column("AVAL").num_chunks == 4  # 7 rows in chunks of 2
    assert chunked.equals(_stat.read_statistical(source))  # same as one chunk
    names = [n.upper() for n in chunked.column_names]
    assert names == list(GAPPY.columns)
    table = chunked.rename_columns(names)
    assert table.schema == pa.schema(
        {
            "AVAL": pa.float64(),
            "ARM": pa.string(),
            "VISDT": pa.date32(),
            "EMPTYDT": pa.date32(),  # all missing: typed from its display format
            "EMPTYNUM": pa.float64(),
        }
    )
    assert table.column("AVAL").to_pylist() == [None, None, 1.0, 2.5, None, -4.0, 0.125]
    # No missing text in these formats: None was written as a blank, read back as "".
    assert table.column("ARM").to_pylist() == ["", "", "A", "B", "", "", "C"]
    assert table.column("VISDT").to_pylist() == list(GAPPY["VISDT"])
    assert table.column("EMPTYDT").null_count == ROWS


def test_stata_integers_stay_integers(tmp_path: Path) -> None:
    path = tmp_path / "ex.dta"
    frame = pd.DataFrame({"N": pd.array([1, None, -3], dtype="Int32")})
    pyreadstat.write_dta(frame, str(path))
    column = read_file(path).column("N")
    assert column.type == pa.int64()
    assert column.to_pylist() == [1, None, -3]


def test_zero_row_file_keeps_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "ex.sav"
    frame = pd.DataFrame({"X": pd.Series([], dtype="float64"), "S": pd.Series([], dtype=object)})
    pyreadstat.write_sav(frame, str(path))
    table = read_file(path)
    assert table.num_rows == 0
    assert table.schema.field("X").type == pa.float64()


@pytest.mark.parametrize(
    ("display_format", "family", "expected"),
    [
        ("DATE9", "sas", pa.date32()),
        ("DATE", "sas", pa.date32()),
        ("YYMMDD10.", "sas", pa.date32()),
        ("E8601DA10.", "sas", pa.date32()),
        ("DATETIME20", "sas", pa.timestamp("us")),
        ("IS8601DT", "sas", pa.timestamp("us")),
        ("TIME8", "sas", pa.time64("us")),
        ("BEST12", "sas", None),
        ("$CHAR20", "sas", None),
        ("", "sas", None),
        ("ADATE10", "spss", pa.date32()),
        ("DATETIME20", "spss", pa.timestamp("us")),
        ("DTIME", "spss", pa.time64("us")),
        ("F8.2", "spss", None),
        ("%td", "stata", pa.date32()),
        ("%tc", "stata", pa.timestamp("us")),
        ("%tcHH:MM", "stata", pa.time64("us")),
        ("%10.0g", "stata", None),
    ],
)
def test_temporal_kind_of_display_formats(
    display_format: str, family: str, expected: pa.DataType | None
) -> None:
    assert _stat.temporal_kind(display_format, family) == expected


# --- Excel ----------------------------------------------------------------------------


def _xlsx(path: Path, cells: dict[str, object]) -> Path:
    workbook = openpyxl.Workbook()
    for ref, value in cells.items():
        workbook.active[ref] = value
    workbook.save(path)
    return path


def test_excel_mixed_column_becomes_text(tmp_path: Path) -> None:
    path = _xlsx(
        tmp_path / "mixed.xlsx",
        {
            "A1": "RESULT",
            "A2": 12,
            "A3": "<LLOQ",
            "A4": 0.5,
            "A5": True,
            "A6": dt.date(2024, 5, 6),
            "A7": None,
        },
    )
    column = read_file(path).column("RESULT")
    assert column.type == pa.string()
    assert column.to_pylist() == ["12", "<LLOQ", "0.5", "TRUE", "2024-05-06"]


def test_excel_data_area_header_and_spacers(tmp_path: Path) -> None:
    path = _xlsx(
        tmp_path / "area.xlsx",
        {
            # the table starts at B3; column D is an unnamed, empty spacer
            "B3": "ID",
            "C3": 2024,
            "E3": "T",
            "B4": 1,
            "C4": "a",
            "E4": dt.time(8, 30),
            "B6": 3,  # row 5 is an empty row inside the data: kept
            "C6": "c",
            "E6": dt.time(23, 59, 59),
        },
    )
    table = read_file(path)
    assert table.column_names == ["ID", "2024", "T"]
    assert table.schema.field("T").type == pa.time64("us")
    assert table.to_pydict() == {
        "ID": [1.0, None, 3.0],
        "2024": ["a", None, "c"],
        "T": [dt.time(8, 30), None, dt.time(23, 59, 59)],
    }


@pytest.mark.parametrize(
    ("cells", "problem"),
    [
        ({"A1": "X", "B1": "X", "A2": 1, "B2": 2}, "duplicate column names: 'X'"),
        ({"A1": "X", "C1": "Z", "A2": 1, "B2": 2, "C2": 3}, "column 2 has no name"),
        ({}, "the first sheet is empty"),
    ],
)
def test_bad_excel_header_is_refused(tmp_path: Path, cells: dict, problem: str) -> None:
    path = _xlsx(tmp_path / "bad.xlsx", cells)
    with pytest.raises(OnboardingError, match=problem):
        read_file(path)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.0, "3"),
        (-0.1, "-0.1"),
        (1e20, "1e+20"),
        (7, "7"),
        (False, "FALSE"),
        (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
        (dt.time(1, 2), "01:02:00"),
        (dt.timedelta(hours=26), "1 day, 2:00:00"),
    ],
)
def test_cell_text(value: object, text: str) -> None:
    assert cell_text(value) == text


def test_only_files_above_the_whole_read_limit_are_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.csv"
    _multi_block_csv(path, 3000, "3000,1.5,x,2024-02-01\n")
    streamed: list[str] = []
    original = _text.stream_delimited

    def spy(source: Source, options: Any) -> pa.Table:
        streamed.append(source.path)
        return original(source, options)

    monkeypatch.setattr(_text, "stream_delimited", spy)
    monkeypatch.setenv("DATOM_MAX_LINE_BYTES", "4096")
    small = read_file(path)  # well under the limit: one multi-threaded read_csv
    assert streamed == []
    monkeypatch.setattr(_text, "WHOLE_READ_LIMIT", path.stat().st_size - 1)
    big = read_file(path)
    assert streamed == [str(path)]
    assert big.equals(small)
