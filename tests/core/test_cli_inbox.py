"""``datom scan``, ``sync`` and ``check-hashable`` against a real project and real files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from tests.core.cli_helpers import run, run_json
from tests.core.projects import new_project


def _csv(path: Path, n: int, age: int = 30) -> Path:
    path.write_text("USUBJID,AGE\n" + "".join(f"S-{i:03d},{age + i}\n" for i in range(n)))
    return path


@pytest.fixture
def project(tmp_path: Path) -> dc.Connection:
    return new_project(tmp_path)


def _statuses(rows: list[dict[str, object]]) -> dict[object, object]:
    return {row["name"]: row["status"] for row in rows}


def test_scan_then_sync_the_inbox(project: dc.Connection) -> None:
    inbox = project.path / "input_files"
    _csv(inbox / "dm.csv", 3)
    (inbox / "ae.tsv").write_text("A\tB\n1\tx\n")
    (inbox / "notes.rds").write_bytes(b"\x00not onboarded")
    dev = ("--repo", project.path)

    scan = run_json(*dev, "scan")
    assert _statuses(scan) == {"ae": "new", "dm": "new", "notes": "unsupported_format"}
    assert scan[1]["original_file_sha"] == dc.file_sha(inbox / "dm.csv")
    assert project.tables() == []  # a scan writes nothing

    synced = run_json(*dev, "sync")
    assert _statuses(synced) == {"ae": "synced", "dm": "synced", "notes": "skipped"}
    assert {t.name for t in project.tables()} == {"ae", "dm"}
    dm = project.metadata("dm")
    assert dm["table_type"] == "imported" and dm["nrow"] == 3
    assert {r["name"]: r["version"] for r in synced}["dm"] == dc.metadata_sha(dm)

    assert _statuses(run_json(*dev, "scan"))["dm"] == "unchanged"
    again = run(*dev, "sync")
    assert (
        again.exit_code == 0 and "3 skipped" in again.stdout
    )  # ae, dm unchanged; notes unsupported
    assert len(project.history("dm")) == 1

    _csv(inbox / "dm.csv", 4)
    assert _statuses(run_json(*dev, "scan"))["dm"] == "changed"
    changed = {r["name"]: r for r in run_json(*dev, "sync")}
    assert (changed["dm"]["status"], changed["dm"]["change"]) == ("synced", "full")
    assert len(project.history("dm")) == 2


def test_scan_of_another_folder_and_human_output(project: dc.Connection, tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    _csv(folder / "lb.csv", 2)
    (folder / "sub").mkdir()
    result = run("--repo", project.path, "scan", folder)
    assert result.exit_code == 0
    assert "lb.csv" in result.stdout and "refused" in result.stdout and "1 new" in result.stdout
    assert run("--repo", project.path, "sync", folder).exit_code == 1  # the sub-folder failed
    assert [t.name for t in project.tables()] == ["lb"]


def test_a_failing_file_exits_1_and_never_blocks_its_siblings(project: dc.Connection) -> None:
    inbox = project.path / "input_files"
    _csv(inbox / "dm.csv", 3)
    (inbox / "lb.xlsx").write_bytes(b"this is not a spreadsheet")
    result = run("--json", "--repo", project.path, "sync")
    assert result.exit_code == 1
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["dm"]["status"] == "synced"
    assert rows["lb"]["status"] == "error" and "lb.xlsx" in rows["lb"]["message"]
    assert [t.name for t in project.tables()] == ["dm"]


def test_stop_on_error_writes_nothing_when_a_file_cannot_be_onboarded(
    project: dc.Connection,
) -> None:
    inbox = project.path / "input_files"
    _csv(inbox / "dm.csv", 3)
    (inbox / "2bad.csv").write_text("a\n1\n")  # not a valid table name
    result = run("--repo", project.path, "sync", "--stop-on-error")
    assert result.exit_code == 5
    assert result.stderr.startswith("datom: error: ") and "2bad.csv" in result.stderr
    assert "Traceback" not in result.stderr
    assert project.tables() == []


def test_a_reader_cannot_sync(project: dc.Connection, tmp_path: Path) -> None:
    _csv(project.path / "input_files" / "dm.csv", 3)
    reader = ("--store", tmp_path / "store", "--project", project.project_name)
    result = run(*reader, "sync")
    assert result.exit_code == 5 and "reader" in result.stderr
    assert run(*reader, "scan").exit_code == 5  # a reader has no inbox of its own
    rows = run_json(*reader, "scan", project.path / "input_files")  # but may scan a folder
    assert _statuses(rows) == {"dm": "new"}


def test_check_hashable(tmp_path: Path) -> None:
    good = _csv(tmp_path / "dm.csv", 3)
    ok = run_json("check-hashable", good)
    assert ok["ok"] is True and [c["column"] for c in ok["columns"]] == ["USUBJID", "AGE"]
    assert "ok: datom can version dm.csv" in run("check-hashable", good).stdout

    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"id": [1, 2], "tags": [[1], [2, 3]]}), nested)
    refused = run("--json", "check-hashable", nested)
    assert refused.exit_code == 1
    report = json.loads(refused.stdout)
    assert report["ok"] is False
    assert [(c["column"], c["status"]) for c in report["columns"]] == [
        ("id", "ok"),
        ("tags", "unsupported"),
    ]
    assert report["columns"][1]["recourse"]
    human = run("check-hashable", nested)
    assert human.exit_code == 1 and "cannot be versioned" in human.stdout

    txt = tmp_path / "dm.dat"
    txt.write_text("a|b\n1|2\n")
    assert run_json("check-hashable", "--format", "psv", txt)["ok"] is True
    assert run("check-hashable", tmp_path / "absent.csv").exit_code == 3
    assert run("check-hashable", txt).exit_code == 5  # .dat is not an onboarding format
