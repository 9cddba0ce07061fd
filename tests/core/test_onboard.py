"""Onboarding an inbox: every allowlisted format, the getting-started story, failing files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

import datom_core as dc
from datom_core._onboard import ScanRow, SyncRow
from datom_core._project import _layout as L
from tests.core.projects import new_project
from tests.core.test_readers import FIXTURES


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _by_name(rows: list[ScanRow] | list[SyncRow]) -> dict[str, ScanRow | SyncRow]:
    return {r.name: r for r in rows}


def _statuses(rows: list[ScanRow] | list[SyncRow]) -> dict[str, str]:
    return {r.name: r.status for r in rows}


def _parquet_objects(conn: dc.Connection, table: str) -> list[str]:
    return sorted(k for k in conn.store.list(f"{table}/") if k.endswith(".parquet"))


def _csv(path: Path, rows: list[tuple[str, int, float]], newline: str = "\n") -> Path:
    lines = ["USUBJID,AGE,WEIGHT"] + [f"{s},{a},{w}" for s, a, w in rows]
    path.write_bytes((newline.join(lines) + newline).encode())
    return path


DM_V1 = [("S-001", 34, 70.5), ("S-002", 51, 82.0)]
DM_V2 = [("S-001", 34, 70.5), ("S-002", 51, 82.0), ("S-003", 29, 64.25)]


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_each_format_onboards_and_reads_back(tmp_path: Path, fmt: str) -> None:
    conn = new_project(tmp_path)
    write, expected = FIXTURES[fmt]
    path = conn.path / L.INBOX / f"dm.{fmt}"
    write(path)

    (scan,) = conn.scan_inbox()
    assert (scan.name, scan.format, scan.status) == ("dm", fmt, "new")
    assert scan.original_file_sha == _sha(path)
    (result,) = conn.sync()
    assert (result.status, result.change) == ("synced", "full"), result.message

    back = conn.read("dm", as_="arrow")
    assert back.column_names == expected.column_names
    assert back.to_pydict() == expected.to_pydict()
    metadata = conn.metadata("dm")
    assert metadata["table_type"] == "imported"
    assert metadata["original_file_sha"] == _sha(path)
    assert "parents" not in metadata
    assert metadata["source_lineage"] == [
        {"project": "STUDY_001", "table": "dm", "version_sha": metadata["data_sha"]}
    ]
    assert dc.hash_table(back).data_sha == metadata["data_sha"]
    (info,) = conn.tables()
    assert (info.original_format, info.original_file_sha) == (fmt, _sha(path))
    (entry,) = conn.history("dm")
    # As R writes it: the format is in metadata.json, the history entry has no extras.
    assert metadata["original_format"] == fmt and entry.extra == {}
    assert conn.lineage("dm") == [dc.SourceRef("STUDY_001", "dm", metadata["data_sha"])]


def test_unsupported_formats_do_not_block_allowlisted_neighbours(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX
    for name in ("ae.rds", "cm.json", "lb.xml"):
        (inbox / name).write_bytes(b"not onboarded")
    _csv(inbox / "dm.csv", DM_V1)

    scan = _by_name(conn.scan_inbox())
    assert {n: (r.status, r.format) for n, r in scan.items()} == {
        "ae": ("unsupported_format", "rds"),
        "cm": ("unsupported_format", "json"),
        "lb": ("unsupported_format", "xml"),
        "dm": ("new", "csv"),
    }
    assert "convert it once to csv/parquet" in scan["ae"].message
    assert ".rds" in scan["ae"].message and scan["ae"].original_file_sha is None

    results = _by_name(conn.sync())
    assert _statuses(list(results.values())) == {
        "ae": "skipped",
        "cm": "skipped",
        "lb": "skipped",
        "dm": "synced",
    }
    assert "read it yourself" in results["cm"].message
    assert [t.name for t in conn.tables()] == ["dm"]


def test_getting_started_story(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX

    # 1. One file: new.
    _csv(inbox / "dm.csv", DM_V1)
    assert _statuses(conn.scan_inbox()) == {"dm": "new"}
    (first,) = conn.sync()
    assert (first.status, first.change) == ("synced", "full")
    v1 = first.version

    # 2. The same file again: unchanged; no write, no commit, nothing in the store changes.
    head, stored = conn.repo.head(), sorted(conn.store.list(""))
    (again,) = conn.scan_inbox()
    assert again.status == "unchanged"
    (skipped,) = conn.sync()
    assert (skipped.status, skipped.change, skipped.version) == ("skipped", "none", None)
    assert conn.repo.head() == head and sorted(conn.store.list("")) == stored

    # 3. An updated extract: changed; a new version, the old one still readable.
    _csv(inbox / "dm.csv", DM_V2)
    (scan,) = conn.scan_inbox()
    assert (scan.status, scan.message) == ("changed", "a new extract of 'dm'")
    (second,) = conn.sync()
    assert (second.status, second.change) == ("synced", "full")
    v2 = second.version
    assert conn.read("dm", as_="arrow").num_rows == 3
    assert conn.read("dm", version=v1, as_="arrow").to_pydict()["USUBJID"] == ["S-001", "S-002"]

    # 4. A re-export: new bytes (CRLF line ends), same rows: metadata_only, nothing uploaded.
    parquet_before = _parquet_objects(conn, "dm")
    _csv(inbox / "dm.csv", DM_V2, newline="\r\n")
    (scan,) = conn.scan_inbox()
    assert scan.status == "changed"
    (third,) = conn.sync()
    assert (third.status, third.change) == ("synced", "metadata_only")
    assert _parquet_objects(conn, "dm") == parquet_before
    v3 = third.version
    assert conn.metadata("dm")["data_sha"] == conn.metadata("dm", v2)["data_sha"]
    assert conn.metadata("dm")["original_file_sha"] == _sha(inbox / "dm.csv")

    # 5. A batch of four domains: three new, one changed.
    _csv(inbox / "dm.csv", DM_V2 + [("S-004", 45, 90.0)])
    for domain in ("ae", "lb", "vs"):
        _csv(inbox / f"{domain}.csv", [(f"{domain}-1", 1, 1.5)])
    assert _statuses(conn.scan_inbox()) == {
        "ae": "new",
        "dm": "changed",
        "lb": "new",
        "vs": "new",
    }
    commits_before = len(conn.repo.log())
    batch = conn.sync()
    assert {r.name: (r.status, r.change) for r in batch} == {
        "ae": ("synced", "full"),
        "dm": ("synced", "full"),
        "lb": ("synced", "full"),
        "vs": ("synced", "full"),
    }
    assert len(conn.repo.log()) == commits_before + 4  # one commit per table
    v4 = _by_name(batch)["dm"].version
    assert [h.version for h in conn.history("dm")] == [v4, v3, v2, v1]

    # 6. The first extract dropped again: recognised, made current, history not duplicated.
    for domain in ("ae", "lb", "vs"):
        (inbox / f"{domain}.csv").unlink()
    _csv(inbox / "dm.csv", DM_V1)
    (scan,) = conn.scan_inbox()
    assert scan.status == "changed"
    assert f"version {v1[:12]}" in scan.message and "earlier extract" in scan.message
    (redrop,) = conn.sync()
    assert (redrop.status, redrop.version) == ("synced", v1)
    assert "nothing uploaded" in redrop.message
    assert _parquet_objects(conn, "dm") == sorted(
        L.store_parquet("dm", conn.metadata("dm", v)["data_sha"]) for v in (v1, v2, v4)
    )
    assert [h.version for h in conn.history("dm")] == [v4, v3, v2, v1]
    assert conn.resolve("dm") == v1
    assert conn.read("dm", as_="arrow").to_pydict()["USUBJID"] == ["S-001", "S-002"]
    assert conn.tables()[1].current_version == v1  # ae, dm, lb, vs
    assert _statuses(conn.scan_inbox()) == {"dm": "unchanged"}
    assert conn.validate().ok


def test_a_corrupt_file_fails_its_own_row_only(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX
    (inbox / "ae.xlsx").write_bytes(b"PK\x03\x04 this is no workbook")
    (inbox / "lb.parquet").write_bytes(b"PAR1 truncated")
    _csv(inbox / "dm.csv", DM_V1)
    _csv(inbox / "vs.csv", [("S-001", 1, 2.0)])

    assert _statuses(conn.scan_inbox()) == {"ae": "new", "dm": "new", "lb": "new", "vs": "new"}
    results = _by_name(conn.sync())
    assert _statuses(list(results.values())) == {
        "ae": "error",
        "dm": "synced",
        "lb": "error",
        "vs": "synced",
    }
    assert "ae.xlsx" in results["ae"].message and "corrupt" in results["ae"].message
    assert "lb.parquet" in results["lb"].message
    assert [t.name for t in conn.tables()] == ["dm", "vs"]


def test_continue_on_error_false_raises_at_the_failing_file(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX
    _csv(inbox / "dm.csv", DM_V1)
    (inbox / "vs.xpt").write_bytes(b"garbage, not a transport file" * 10)

    with pytest.raises(dc.OnboardingError, match="vs.xpt"):
        conn.sync(continue_on_error=False)
    assert [t.name for t in conn.tables()] == ["dm"]  # rows before the failure stay synced


def test_continue_on_error_false_refuses_a_failed_scan_before_writing(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX
    _csv(inbox / "dm.csv", DM_V1)
    _csv(inbox / "1st visit.csv", DM_V1)
    head = conn.repo.head()

    with pytest.raises(dc.OnboardingError, match="nothing was written") as caught:
        conn.sync(continue_on_error=False)
    assert "1st visit.csv" in str(caught.value) and "invalid_name" in str(caught.value)
    assert conn.repo.head() == head and conn.tables() == []


def test_invalid_names_and_ambiguous_stems_are_rows_not_exceptions(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    inbox = conn.path / L.INBOX
    _csv(inbox / "1st visit.csv", DM_V1)
    _csv(inbox / "dm.v2.csv", DM_V1)
    _csv(inbox / "datom.csv", DM_V1)
    _csv(inbox / "vs.csv", DM_V1)
    _csv(inbox / "vs.tsv", DM_V1)
    _csv(inbox / "ae.csv", DM_V1)
    (inbox / "extra").mkdir()
    (inbox / ".DS_Store").write_bytes(b"\0")
    (inbox / "~$ae.xlsx").write_bytes(b"lock")

    rows = conn.scan_inbox()
    assert [(r.name, r.status) for r in rows] == [
        ("1st visit", "invalid_name"),
        ("ae", "new"),
        ("datom", "invalid_name"),
        ("dm.v2", "invalid_name"),
        ("extra", "refused"),
        ("vs", "refused"),
        ("vs", "refused"),
    ]
    messages = {r.file.rsplit("/", 1)[-1]: r.message for r in rows}
    assert "Rename the file" in messages["1st visit.csv"]
    assert "reserved" in messages["datom.csv"]
    assert "vs.csv and vs.tsv" in messages["vs.tsv"]
    assert "sub-folder" in messages["extra"]

    results = conn.sync()
    assert [(r.name, r.status) for r in results if r.status != "error"] == [("ae", "synced")]
    assert [t.name for t in conn.tables()] == ["ae"]


def test_a_derived_table_is_not_replaced_by_an_import(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("adsl", pa.table({"USUBJID": ["S-001"]}))
    _csv(conn.path / L.INBOX / "adsl.csv", DM_V1)

    (row,) = conn.scan_inbox()
    assert row.status == "refused" and "derived table" in row.message
    (result,) = conn.sync()
    assert result.status == "error"
    assert conn.metadata("adsl")["table_type"] == "derived"


def test_a_reviewed_scan_can_rename_a_table(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", DM_V1)
    (row,) = conn.scan_inbox()
    reviewed = {**row.__dict__, "name": "dm_raw"}

    (result,) = conn.sync([reviewed])
    assert (result.name, result.status) == ("dm_raw", "synced")
    assert conn.metadata("dm_raw")["original_file_sha"] == _sha(path)
    assert [t.name for t in conn.tables()] == ["dm_raw"]


def test_a_file_changed_after_the_scan_is_onboarded_as_it_is_now(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    path = _csv(conn.path / L.INBOX / "dm.csv", DM_V1)
    rows = conn.scan_inbox()
    _csv(path, DM_V2)

    (result,) = conn.sync(rows)
    assert result.status == "synced" and "changed after the scan" in result.message
    assert conn.metadata("dm")["original_file_sha"] == _sha(path)
    assert conn.read("dm", as_="arrow").num_rows == 3


def test_sync_refuses_rows_it_cannot_understand(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    with pytest.raises(dc.OnboardingError, match="ScanRow"):
        conn.sync([{"table": "dm"}])


def test_sync_can_be_limited_to_some_tables_of_any_folder(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    drops = tmp_path / "drops"
    drops.mkdir()
    _csv(drops / "dm.csv", [("S1", 30, 60.5)])
    _csv(drops / "ae.csv", [("S1", 2, 1.0)])
    results = conn.sync(path=drops, tables=["dm"])
    assert [(r.name, r.status) for r in results] == [("dm", "synced")]
    assert [t.name for t in conn.tables()] == ["dm"]
    assert [(r.name, r.status) for r in conn.sync(path=drops)] == [
        ("ae", "synced"),
        ("dm", "skipped"),
    ]
