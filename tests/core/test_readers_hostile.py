"""Hostile and absurd input files: refused early, alone, in bounded memory, with the limit.

Every hostile file is generated here (see ``tests/core/hostile_files.py``); the bombs
are a few MB on disk however much they inflate to.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyreadstat
import pytest
import xlwt

from datom_core._errors import OnboardingError
from datom_core._onboard._readers import _excel, _text, _xls_guard, read_file
from datom_core._onboard._readers._common import Source
from tests.core import hostile_files as H

_GB = 1 << 30


def _refusal(path: Path) -> str:
    with pytest.raises(OnboardingError) as refused:
        read_file(path)
    message = str(refused.value)
    assert repr(str(path)) in message and "Remedy:" in message
    return message


# -- spreadsheets ---------------------------------------------------------------------------


def test_row_bomb_is_refused_before_it_is_read(tmp_path: Path) -> None:
    # 5M rows of 5 cells: about 1.5 MB on disk, 430 MB of sheet XML.
    bomb = H.row_bomb(tmp_path / "bomb.xlsx", 5_000_000, columns=5)
    assert bomb.stat().st_size < 2 << 20
    message = _refusal(bomb)
    assert "past row 1,048,576" in message
    assert "DATOM_MAX_SHEET_ROWS" in message and "csv" in message


def test_gigabytes_of_sheet_xml_are_refused_from_the_declared_size(tmp_path: Path) -> None:
    row = b"<row>" + b"<c><v>1</v></c>" * 5 + b"</row>"
    sheet = H.Repeated(H.SHEET_HEAD, row, 50_000_000, H.SHEET_TAIL)
    bomb = H.xlsx(tmp_path / "bomb.xlsx", sheet)
    assert sheet.size > 4 * _GB and bomb.stat().st_size < 20 << 20
    message = _refusal(bomb)
    assert "'xl/worksheets/sheet1.xml' is 4.0 GB" in message
    assert "DATOM_MAX_SHEET_XML_BYTES" in message


def test_a_size_the_zip_understates_is_measured_as_it_inflates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    padding = H.Repeated(H.SHEET_HEAD, b" " * 1024, 40_000, H.SHEET_TAIL)  # 40 MB of blanks
    lying = H.xlsx(tmp_path / "lying.xlsx", padding, lie={"xl/worksheets/sheet1.xml": 1000})
    monkeypatch.setenv("DATOM_MAX_SHEET_XML_BYTES", "10_000_000")
    message = _refusal(lying)
    assert "more than 9.5 MB when inflated" in message
    assert "DATOM_MAX_SHEET_XML_BYTES" in message


def test_two_far_apart_cells_are_refused_for_their_rectangle(tmp_path: Path) -> None:
    # calamine would hold 1,048,576 x 16,384 cells for these two.
    sheet = H.sheet_xml([[("A1", "ID")], [("XFD1048576", "x")]])
    message = _refusal(H.xlsx(tmp_path / "far.xlsx", sheet))
    assert "17,179,869,184 cells" in message and "DATOM_MAX_SHEET_CELLS" in message


@pytest.mark.parametrize(
    ("cells", "problem"),
    [
        ([[("A1", "ID"), ("XFE1", "x")]], "past column 16,384"),
        ([[("A1", "ID")], [("A1048577", "x")]], "past row 1,048,576"),
        ([[("A1", "ID"), ("1A", "x")]], "'1A' that is not a cell address"),
    ],
)
def test_references_beyond_excel_or_malformed_are_refused(
    tmp_path: Path, cells: list[list[tuple[str, str]]], problem: str
) -> None:
    assert problem in _refusal(H.xlsx(tmp_path / "odd.xlsx", H.sheet_xml(cells)))


def test_cells_without_references_are_placed_as_calamine_places_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 3 rows of 4 cells, no r attributes: a 3 x 4 rectangle, under 12 cells allowed ...
    row = b"<row>" + b'<c t="inlineStr"><is><t>a</t></is></c>' * 4 + b"</row>"
    path = H.xlsx(tmp_path / "plain.xlsx", H.SHEET_HEAD + row * 3 + H.SHEET_TAIL)
    monkeypatch.setenv("DATOM_MAX_SHEET_CELLS", "12")
    with pytest.raises(OnboardingError, match="duplicate column names"):
        read_file(path)  # ... so it is read (and refused only for its header)
    monkeypatch.setenv("DATOM_MAX_SHEET_CELLS", "11")
    assert "DATOM_MAX_SHEET_CELLS" in _refusal(path)


def test_prefixed_and_odd_tags_are_measured_too(tmp_path: Path) -> None:
    sheet = (
        b'<?xml version="1.0"?><x:worksheet xmlns:x="http://schemas.openxmlformats.org/'
        b'spreadsheetml/2006/main"><x:sheetData><x:row r="1"><x:c r=\'A1\' t="inlineStr">'
        b"<x:is><x:t>ID</x:t></x:is></x:c></x:row><x:row><x:c t=\"n\" r = 'XFD1048576'>"
        b"<x:v>1</x:v></x:c></x:row></x:sheetData></x:worksheet>"
    )
    assert "DATOM_MAX_SHEET_CELLS" in _refusal(H.xlsx(tmp_path / "prefixed.xlsx", sheet))


def test_a_shared_strings_bomb_is_refused(tmp_path: Path) -> None:
    strings = H.Repeated(b"<sst>", b"<si><t>" + b"x" * 1000 + b"</t></si>", 300_000, b"</sst>")
    members: list[tuple[str, bytes | H.Repeated]] = [
        ("[Content_Types].xml", H.CONTENT_TYPES),
        ("_rels/.rels", H.ROOT_RELS),
        ("xl/workbook.xml", H.WORKBOOK),
        ("xl/_rels/workbook.xml.rels", H.WORKBOOK_RELS),
        ("xl/sharedStrings.xml", strings),
        ("xl/worksheets/sheet1.xml", H.sheet_xml([[("A1", "ID")]])),
    ]
    message = _refusal(H.write_zip(tmp_path / "strings.xlsx", members))
    assert "'xl/sharedStrings.xml'" in message and "DATOM_MAX_WORKBOOK_BYTES" in message


def test_only_the_first_sheet_is_measured(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    wb.active.append(["ID", "AGE"])
    wb.active.append(["S-1", 30])
    wb.create_sheet("notes").cell(row=1_048_576, column=16_384, value="far")
    wb.create_sheet("more").cell(row=1, column=1, value="x")
    wb.save(tmp_path / "book.xlsx")
    assert read_file(tmp_path / "book.xlsx").to_pydict() == {"ID": ["S-1"], "AGE": [30.0]}


def test_a_genuine_workbook_reads_the_same_in_small_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["N", "MIXED", "WHEN", "EMPTY"])
    for i in range(9):
        mixed: object = "text" if i == 7 else i + 0.5
        when: object = dt.datetime(2024, 1, i + 1, 12) if i == 8 else dt.date(2024, 1, i + 1)
        ws.append([i, mixed, when, None])
    ws.append([None, None, None, None])  # trailing empty rows go
    ws.append([None, None, None, None])
    wb.save(tmp_path / "chunks.xlsx")
    whole = read_file(tmp_path / "chunks.xlsx")
    monkeypatch.setattr(_excel, "CHUNK_ROWS", 2)
    chunked = read_file(tmp_path / "chunks.xlsx")
    assert chunked.equals(whole)
    utc = pa.timestamp("us", tz="UTC")
    assert whole.schema.types == [pa.float64(), pa.string(), utc, pa.null()]
    assert whole.column("MIXED").to_pylist()[6:8] == ["6.5", "text"]
    assert whole.num_rows == 9


def test_xls_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = xlwt.Workbook()
    sheet = book.add_sheet("dm")
    rows: list[list[object]] = [["ID", "AGE"], ["S-1", 30], ["S-2", 31]]
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    path = tmp_path / "dm.xls"
    book.save(str(path))
    assert read_file(path).num_rows == 2
    monkeypatch.setenv("DATOM_MAX_SHEET_CELLS", "5")
    assert "3 rows x 2 columns = 6 cells" in _refusal(path)
    monkeypatch.delenv("DATOM_MAX_SHEET_CELLS")
    monkeypatch.setenv("DATOM_MAX_XLS_BYTES", "1000")
    assert "DATOM_MAX_XLS_BYTES" in _refusal(path)


def test_a_bad_limit_setting_is_an_onboarding_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = H.xlsx(tmp_path / "ok.xlsx", H.sheet_xml([[("A1", "ID")], [("A2", "x")]]))
    monkeypatch.setenv("DATOM_MAX_SHEET_ROWS", "lots")
    with pytest.raises(OnboardingError, match="DATOM_MAX_SHEET_ROWS='lots' is not a positive"):
        read_file(path)


# -- through the public API, memory measured in a child process --------------------------

_ONBOARD = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # a regression fails, alone
    import datom_core as dc
    root = Path(sys.argv[1])
    conn = dc.connect(root / "repo")
    rows = conn.sync()
    hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(json.dumps({
        "rows": {r.name: [r.status, r.message] for r in rows},
        "peak": int(hwm.split()[1]) * 1024,
        "dm": conn.read("dm").to_dict(orient="list"),
    }))
    """
)


def test_bombs_fail_alone_in_bounded_memory_while_siblings_onboard(tmp_path: Path) -> None:
    import datom_core as dc

    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    inbox = conn.path / "input_files"
    H.row_bomb(inbox / "rows.xlsx", 5_000_000, columns=5)
    far = H.sheet_xml([[("A1", "ID")], [("XFD1048576", "x")]])
    H.xlsx(inbox / "far.xlsx", far)
    (inbox / "dm.csv").write_text("USUBJID,AGE\nS-001,30\nS-002,31\n")
    pd.DataFrame({"PARAM": ["HR"], "AVAL": [61.0]}).to_excel(inbox / "vs.xlsx", index=False)
    child = subprocess.run(
        [sys.executable, "-c", _ONBOARD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    rows = report["rows"]
    assert rows["dm"][0] == "synced" and rows["vs"][0] == "synced"
    assert rows["rows"][0] == "error" and "past row 1,048,576" in rows["rows"][1]
    assert rows["far"][0] == "error" and "DATOM_MAX_SHEET_CELLS" in rows["far"][1]
    assert report["dm"] == {"USUBJID": ["S-001", "S-002"], "AGE": [30, 31]}
    assert report["peak"] < 1.5 * _GB, f"peak memory {report['peak'] / _GB:.2f} GB"


# -- delimited text -------------------------------------------------------------------------


def test_a_100_mb_single_line_csv_is_reported_as_one_long_line(tmp_path: Path) -> None:
    path = tmp_path / "oneline.csv"
    with path.open("wb") as out:
        for _ in range(100):
            out.write(b"1234567," * (1 << 17))  # 100 MB, no line break
    message = _refusal(path)
    assert "its first line is longer than 16,777,216 bytes" in message
    assert "no line breaks" in message and "DATOM_MAX_LINE_BYTES" in message
    assert "corrupt" not in message


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("quote", ["", '"'])
def test_a_long_line_inside_the_file_is_reported_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool, quote: str
) -> None:
    path = tmp_path / "long.csv"
    body = "".join(f"{i},x{i}\n" for i in range(2000))
    # 200 kB on one line, or a double quote left open that joins the lines after it.
    long = "y" * 200_000 if not quote else '"' + "y\n" * 100_000
    path.write_text("ID,NOTE\n" + body + "1," + long + "\n" + body)
    monkeypatch.setenv("DATOM_MAX_LINE_BYTES", "65536")
    if streamed:
        monkeypatch.setattr(_text, "WHOLE_READ_LIMIT", 0)
    message = _refusal(path)
    assert "a line (record) is longer than 65,536 bytes" in message
    assert "no line breaks" in message and "double quote left open" in message
    assert "corrupt" not in message and "DATOM_MAX_LINE_BYTES" in message
    if not quote:  # a genuine long line reads once the limit is raised
        monkeypatch.setenv("DATOM_MAX_LINE_BYTES", "1000000")
        table = read_file(path)
        assert table.num_rows == 4001 and table.column("NOTE")[2000].as_py() == "y" * 200_000


def test_a_header_of_too_many_columns_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wide.csv"  # 100,000 columns in 1 MB: about 1 GB for pyarrow
    path.write_text(",".join(f"c{i}" for i in range(100_000)) + "\n" + "1," * 99_999 + "1\n")
    message = _refusal(path)
    assert "its header has 100,000 columns" in message and "DATOM_MAX_TEXT_COLUMNS" in message
    quoted = tmp_path / "quoted.csv"  # delimiters inside quotes are not columns
    quoted.write_text('"a,b,c,d",e\n1,2\n')
    monkeypatch.setenv("DATOM_MAX_TEXT_COLUMNS", "2")
    assert read_file(quoted).column_names == ["a,b,c,d", "e"]


# -- SAS, SPSS, Stata -----------------------------------------------------------------------


def _claiming(tmp_path: Path, fmt: str, rows: int) -> Path:
    frame = pd.DataFrame({"A": [1.0, 2.0, 3.0], "B": ["x", "y", "z"]})
    path = tmp_path / f"claim.{fmt}"
    getattr(pyreadstat, f"write_{fmt}")(frame, str(path))
    data = bytearray(path.read_bytes())
    if fmt == "sav":  # the case count of the file header
        assert struct.unpack("<i", data[80:84]) == (3,)
        data[80:84] = struct.pack("<i", rows)
    else:  # Stata 118: <N> then an 8-byte count
        at = data.index(b"<N>") + 3
        assert struct.unpack("<Q", data[at : at + 8]) == (3,)
        data[at : at + 8] = struct.pack("<Q", rows)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_a_header_claiming_more_rows_than_the_file_holds_is_refused(
    tmp_path: Path, fmt: str
) -> None:
    message = _refusal(_claiming(tmp_path, fmt, 50_000_000))
    assert "claims 50,000,000 rows of 2 columns" in message
    assert "damaged or forged" in message


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_the_statistical_cell_limit_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    path = _claiming(tmp_path, fmt, 3)
    assert read_file(path).num_rows == 3
    monkeypatch.setenv("DATOM_MAX_STAT_CELLS", "5")
    message = _refusal(path)
    assert "claims 3 rows of 2 columns (6 cells)" in message
    assert "5 cells (DATOM_MAX_STAT_CELLS)" in message


def test_a_zip_of_too_many_parts_is_refused_before_its_directory_is_parsed(
    tmp_path: Path,
) -> None:
    members = [(f"xl/media/p{i}.xml", b"") for i in range(70_000)]
    path = H.write_zip(tmp_path / "parts.xlsx", [*members, ("xl/workbook.xml", H.WORKBOOK)])
    assert "the zip holds 70,001 parts" in _refusal(path)


def _with_shared_strings(path: Path, strings: bytes, sheet: bytes | H.Repeated) -> Path:
    rels = H.WORKBOOK_RELS.replace(
        b"</Relationships>",
        b'<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/'
        b'2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
    )
    members: list[tuple[str, bytes | H.Repeated]] = [
        ("[Content_Types].xml", H.CONTENT_TYPES),
        ("_rels/.rels", H.ROOT_RELS),
        ("xl/workbook.xml", H.WORKBOOK),
        ("xl/_rels/workbook.xml.rels", rels),
        ("xl/sharedStrings.xml", strings),
        ("xl/worksheets/sheet1.xml", sheet),
    ]
    return H.write_zip(path, members)


def test_one_long_shared_string_in_every_cell_is_refused(tmp_path: Path) -> None:
    # calamine copies the string into every cell: 10 KB x 1M cells = 10 GB from a 10 KB file.
    strings = b"<sst><si><t>" + b"x" * 10_000 + b"</t></si></sst>"
    head = H.SHEET_HEAD + b'<row r="1"><c r="A1" t="inlineStr"><is><t>N</t></is></c></row>'
    cells = H.Repeated(head, b'<row><c t="s"><v>0</v></c></row>', 1_000_000, H.SHEET_TAIL)
    bomb = _with_shared_strings(tmp_path / "copies.xlsx", strings, cells)
    assert bomb.stat().st_size < 100_000
    message = _refusal(bomb)
    assert "of text in its cells" in message
    assert "DATOM_MAX_SHEET_TEXT_BYTES" in message


def test_shared_text_counts_each_reference_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strings = b"<sst><si><t>ID</t></si><si><t>" + b"y" * 1000 + b"</t></si></sst>"
    rows = [b'<row r="1"><c r="A1" t="s"><v>0</v></c></row>']
    rows += [b'<row r="%d"><c r="A%d" t="s"><v>1</v></c></row>' % (r, r) for r in range(2, 12)]
    path = _with_shared_strings(
        tmp_path / "s.xlsx", strings, H.SHEET_HEAD + b"".join(rows) + H.SHEET_TAIL
    )
    monkeypatch.setenv("DATOM_MAX_SHEET_TEXT_BYTES", "11000")  # 10 x ~1 KB fit ...
    assert read_file(path).column("ID").to_pylist() == ["y" * 1000] * 10
    monkeypatch.setenv("DATOM_MAX_SHEET_TEXT_BYTES", "9000")  # ... 9 KB do not
    assert "DATOM_MAX_SHEET_TEXT_BYTES" in _refusal(path)


def test_inline_text_counts_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [[("A1", "NOTE")], *([(f"A{r}", "z" * 500)] for r in range(2, 12))]
    path = H.xlsx(tmp_path / "inline.xlsx", H.sheet_xml(rows))
    assert read_file(path).num_rows == 10
    monkeypatch.setenv("DATOM_MAX_SHEET_TEXT_BYTES", "4000")
    assert "of text in its cells" in _refusal(path)


def test_an_xls_whose_cells_share_one_long_string_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = xlwt.Workbook()
    sheet = book.add_sheet("notes")
    sheet.write(0, 0, "NOTE")
    long = "n" * 30_000
    for r in range(1, 30_001):  # calamine copies the string into each: 1.8 GB from 1 MB
        sheet.write(r, 0, long)
    path = tmp_path / "notes.xls"
    book.save(str(path))
    assert path.stat().st_size < 2 << 20
    message = _refusal(path)
    assert "a sheet is at least 2.5 GB of text in its cells" in message
    assert "DATOM_MAX_SHEET_TEXT_BYTES" in message
    monkeypatch.setenv("DATOM_MAX_SHEET_TEXT_BYTES", str(3 << 30))
    with path.open("rb") as handle:  # raised: the guard lets it through
        _xls_guard.check_xls(Source(str(path), "xls"), handle)


@pytest.mark.parametrize(("body_rows", "refused"), [(1_048_575, False), (1_048_576, True)])
def test_the_row_limit_is_excels_last_row_exactly(
    tmp_path: Path, body_rows: int, refused: bool
) -> None:
    path = H.row_bomb(tmp_path / "edge.xlsx", body_rows)  # a header row, then the body
    if refused:
        assert "past row 1,048,576" in _refusal(path)
    else:
        assert read_file(path).num_rows == 1_048_575


def test_a_zip_whose_directory_cannot_be_read_is_corrupt(tmp_path: Path) -> None:
    path = H.xlsx(tmp_path / "broken.xlsx", H.sheet_xml([[("A1", "ID")], [("A2", "x")]]))
    data = bytearray(path.read_bytes())
    at = data.rindex(b"PK\x01\x02")  # the last central directory entry
    data[at : at + 4] = b"XXXX"
    path.write_bytes(bytes(data))
    message = _refusal(path)
    assert "unreadable or corrupt" in message
