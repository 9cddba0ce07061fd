"""Real clinical files onboarded by both languages: R 0.2.0's ``datom_sync`` (rio: haven,
fread, readxl) and Python's ``sync`` read the same bytes into the same tables.

The files (``clinical_files.py``): the six CDISC pilot xpt files, their csv and xlsx
exports, and hand-made edge files. For every file the test table holds both
``data_sha``; they must be equal except where ``CASES`` names a documented departure of
R's reader from the file (and there they must differ, so the table stays true). Each
side then reads the other's project with the types its users expect.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import datom_core as dc
from tests.rdatom.clinical_files import CASES, DEPARTURES, EDGE_TYPES, write_all
from tests.rdatom.rsession import RSession

pytestmark = pytest.mark.xdist_group("rdatom_clinical")

# R class of a column -> the Arrow type Python reads for it (and writes for R to read).
R_CLASS_OF = {
    "character": pa.string(),
    "integer": pa.int64(),
    "integer64": pa.int64(),
    "numeric": pa.float64(),
    "logical": pa.bool_(),
    "IDate": pa.date32(),
    "Date": pa.date32(),
    "POSIXct": pa.timestamp("us", tz="UTC"),
}


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clinical") / "files"
    write_all(folder)
    return folder


@pytest.fixture(scope="module")
def py_side(files: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("py-clinical")
    conn = dc.init_repo(base / "clone", "PYCLIN", dc.LocalStore(base / "store"))
    for path in files.iterdir():
        shutil.copy(path, conn.path / "input_files" / path.name)
    rows = conn.sync()
    assert {r.name: r.status for r in rows} == {_stem(f): "synced" for f in CASES}, rows
    return {
        "conn": conn,
        "store": base / "store",
        "hashes": {r.name: conn.version(r.name).data_sha for r in rows},
        "messages": {r.name: r.message for r in rows},
    }


@pytest.fixture(scope="module")
def r_side(r020: RSession, files: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("r-clinical")
    conn = {
        "path": str(base / "clone"),
        "store": str(base / "store"),
        "remote": str(base / "r.git"),
    }
    r020.call(
        "r_init", path=conn["path"], project="RCLIN", store=conn["store"], remote=conn["remote"]
    )
    inbox = Path(conn["path"]) / "input_files"
    inbox.mkdir(exist_ok=True)
    for path in files.iterdir():
        shutil.copy(path, inbox / path.name)
    synced = {row["name"]: row for row in r020.call("r_sync", conn=conn)}
    hashes = r020.call("r_current_hashes", conn=conn)
    return {"conn": conn, "store": base / "store", "hashes": hashes, "synced": synced}


def hash_table_text(rows: list[tuple[str, str, str, str]]) -> str:
    lines = [f"{'file':26} {'python data_sha':16} {'R data_sha':18} verdict"]
    lines += [f"{f:26} {p[:16]:16} {r[:18]:18} {v}" for f, p, r, v in rows]
    return "\n".join(lines)


def test_python_and_r_record_the_same_data_sha_per_file(
    py_side: dict[str, Any], r_side: dict[str, Any]
) -> None:
    rows, wrong = [], []
    for file, departure in sorted(CASES.items()):
        name = _stem(file)
        py, r = py_side["hashes"][name], r_side["hashes"].get(name, "(R: not onboarded)")
        if departure is None:
            verdict = "equal" if py == r else "DIFFERENT (must be equal)"
        else:
            verdict = f"departure: {departure}" if py != r else "EQUAL (departure gone?)"
        if verdict.isupper() or verdict.split()[0].isupper():
            wrong.append(file)
        rows.append((file, py, r, verdict))
    table = hash_table_text(rows)
    print("\n" + table)
    assert not wrong, f"{wrong}\n{table}"
    # Every departure the table uses is one the R guide explains.
    assert {d for d in CASES.values() if d} <= set(DEPARTURES)
    assert sum(d is None for d in CASES.values()) >= 20
    # R onboards every file but the non-UTF-8 ones, whose raw bytes its writer refuses.
    refused = {n for n, row in r_side["synced"].items() if n not in r_side["hashes"]}
    assert refused == {_stem(f) for f, d in CASES.items() if d == "haven-bytes"}, r_side["synced"]


def test_haven_hashes_the_raw_bytes_of_non_utf8_text(r020: RSession, files: Path) -> None:
    for file in (f for f, d in CASES.items() if d == "haven-bytes"):
        imported = r020.call("r_import", path=files / file)
        decoded = dc.hash_table(dc.read_extract(files / file, encoding="cp1252")).data_sha
        assert imported["data_sha"] != decoded, file


def test_fallback_encoding_is_reported_by_python_sync(py_side: dict[str, Any]) -> None:
    assert "Windows-1252" in py_side["messages"]["ts"]
    assert "Windows-1252" in py_side["messages"]["edge_cp1252"]


def test_csv_columns_get_the_types_fread_gives(r020: RSession, files: Path) -> None:
    for file in ["edge_types.csv", *(f for f in CASES if f.endswith("_csv.csv"))]:
        imported = r020.call("r_import", path=files / file)
        table = dc.read_extract(files / file)
        got = {f.name: f.type for f in table.schema}
        expected = {name: R_CLASS_OF[cls] for name, cls in imported["classes"].items()}
        assert got == expected, file
    table = dc.read_extract(files / "edge_types.csv")
    assert table.column("TXT").to_pylist() == ["x", "", "", None, "NA", "y"]
    assert table.column("DTC").type == pa.string()  # mixed ISO 8601 precision stays text
    assert set(EDGE_TYPES) == set(table.column_names)


def test_python_reads_the_r_project_with_python_types(
    py_side: dict[str, Any], r_side: dict[str, Any]
) -> None:
    reader = dc.connect(store=dc.LocalStore(r_side["store"]), project_name="RCLIN")
    for name, data_sha in r_side["hashes"].items():
        table = reader.read(name, as_="arrow")
        assert dc.hash_table(table).data_sha == data_sha, name
    dm = reader.read("dm", as_="arrow")
    assert dm.schema.field("DTHFL").type == pa.string()
    assert dm.column("DTHFL").null_count == 0 and "" in dm.column("DTHFL").to_pylist()
    assert reader.read("adsl", as_="arrow").schema.field("TRTSDT").type == pa.date32()
    edge = reader.read("edge_types", as_="arrow").schema
    assert edge.field("DATE").type == pa.date32()
    assert edge.field("DTM").type == pa.timestamp("us", tz="UTC")
    assert edge.field("LGL_UPPER").type == pa.bool_()
    assert edge.field("DTC").type == pa.string()
    assert pa.types.is_integer(edge.field("INT64").type)
    xlsx = reader.read("edge_dates", as_="arrow").schema
    assert pa.types.is_timestamp(xlsx.field("TRTSDT").type)


def test_r_reads_the_python_project_with_r_types(r020: RSession, py_side: dict[str, Any]) -> None:
    reader = {"store": str(py_side["store"]), "project": "PYCLIN"}
    seen = {}
    for name, data_sha in py_side["hashes"].items():
        seen[name] = r020.call("r_read_columns", conn=reader, name=name)
        assert seen[name]["data_sha"] == data_sha, name
    dm = seen["dm"]
    assert dm["classes"]["DTHFL"] == "character"
    assert dm["blank"]["DTHFL"] > 0 and dm["missing"]["DTHFL"] == 0
    assert seen["adsl"]["classes"]["TRTSDT"] == "Date"
    edge = seen["edge_types"]["classes"]
    assert (edge["DATE"], edge["DTM"], edge["LGL_UPPER"]) == ("Date", "POSIXct", "logical")
    assert (edge["INT"], edge["INT64"], edge["DTC"]) == ("integer", "integer64", "character")
    assert seen["edge_dates"]["classes"]["TRTSDT"] == "POSIXct"
    assert seen["ts"]["classes"]["TSVAL"] == "character"
