"""The ``datom`` command line, in-process, against real projects (git clone + local store)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from tests.core.cli_helpers import (
    Seeded,
    flip_a_byte,
    parquet_objects,
    run,
    run_json,
    seeded_project,
)
from tests.core.projects import frame

COMMANDS = (
    "init clone status list history show read lineage diff scan sync validate check-hashable"
).split()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """One project for the tests that only read it (seeding costs most of a test's time)."""
    return seeded_project(tmp_path_factory.mktemp("shared"))


@pytest.fixture
def seeded(tmp_path: Path) -> Seeded:
    """A project of the test's own, for the tests that damage or change it."""
    return seeded_project(tmp_path)


def test_help_lists_every_command_and_the_exit_codes() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in COMMANDS:
        assert f"  {command} " in result.stdout
    assert "Exit codes" in result.stdout
    assert "integrity error" in result.stdout
    version = run("--version")
    assert version.exit_code == 0 and version.stdout.startswith("datom, version ")


# -- project commands ------------------------------------------------------------------------


def test_init_puts_store_and_remote_next_to_the_clone(tmp_path: Path) -> None:
    status = run_json("init", tmp_path / "study", "--project", "STUDY_009")
    assert status["project_name"] == "STUDY_009"
    assert status["role"] == "developer"
    assert status["path"] == str(tmp_path / "study")
    assert (tmp_path / "study.store" / "datom" / ".metadata" / "manifest.json").is_file()
    assert (tmp_path / "study.remote.git").is_dir()
    conn = dc.connect(tmp_path / "study")
    assert conn.store.url == status["store"] == (tmp_path / "study.store" / "datom").as_uri()


def test_init_names_the_project_after_its_folder_unless_told(tmp_path: Path) -> None:
    """``datom init PATH`` as ``git init PATH``: the folder names the project; a folder
    name that is no project name is refused before anything is made, naming --project."""
    assert run_json("init", tmp_path / "study001")["project_name"] == "study001"
    assert dc.connect(tmp_path / "study001").project_name == "study001"
    refused = run("init", tmp_path / "my trial")
    assert refused.exit_code == 2 and "pass --project NAME" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "study001",
        "study001.remote.git",
        "study001.store",
    ]
    assert run_json("init", tmp_path / "my trial", "--project", "T1")["project_name"] == "T1"


def test_init_with_store_and_remote_then_clone_as_a_second_developer(tmp_path: Path) -> None:
    from dulwich.repo import Repo

    store, remote = tmp_path / "data", tmp_path / "meta.git"
    Repo.init_bare(remote, mkdir=True).close()  # an empty remote, as a git host creates one
    result = run("init", tmp_path / "a", "--project", "P1", "--store", store, "--remote", remote)
    assert result.exit_code == 0, result.stderr
    assert "Initialised project P1" in result.stdout
    dc.connect(tmp_path / "a").write("dm", frame(2))

    status = run_json("clone", remote, tmp_path / "b")
    assert (status["project_name"], status["role"], status["tables"]) == ("P1", "developer", 1)
    assert status["store"] == dc.LocalStore(store).url
    tables = run_json("--repo", tmp_path / "b", "list")
    assert [t["name"] for t in tables] == ["dm"]


def test_init_refuses_a_store_that_holds_a_project(tmp_path: Path) -> None:
    run_json("init", tmp_path / "a", "--project", "P1", "--store", tmp_path / "s")
    result = run("init", tmp_path / "b", "--project", "P2", "--store", tmp_path / "s")
    assert result.exit_code == 5
    assert (
        result.stderr.startswith("datom: error: ") and "already holds project 'P1'" in result.stderr
    )


def test_status_as_developer_and_as_reader(shared: Seeded) -> None:
    dev = run_json(*shared.dev, "status")
    assert dev["role"] == "developer" and dev["tables"] == 2 and dev["head"]
    assert dev["unpushed_commits"] is False
    reader = run_json(*shared.reader, "status")
    assert reader["role"] == "reader" and reader["tables"] == 2
    assert reader["path"] is None and reader["remote"] is None
    human = run(*shared.reader, "status").stdout
    assert "role:" in human and "reader" in human


def test_the_clone_is_found_from_the_working_directory(
    shared: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(shared.repo / "input_files")
    assert [t["name"] for t in run_json("list")] == ["adsl", "dm"]
    # In a clone, --store alone replaces the recorded store (here: an empty one).
    empty = run("--store", tmp_path / "elsewhere", "list")
    assert empty.exit_code == 3 and "holds no datom project" in empty.stderr
    monkeypatch.chdir(tmp_path)
    result = run("list")
    assert result.exit_code == 2
    assert "--repo PATH" in result.stderr and "Traceback" not in result.stderr


def test_reader_connection_from_flags_or_environment(
    shared: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not inside any clone
    env = {"DATOM_STORE": str(shared.store), "DATOM_PROJECT": "STUDY_001"}
    assert [t["name"] for t in run_json("list", env=env)] == ["adsl", "dm"]
    assert run_json(*shared.reader, "status")["role"] == "reader"
    no_project = run("--store", shared.store, "list")
    assert no_project.exit_code == 2 and "--store also needs --project" in no_project.stderr
    assert run("--project", "STUDY_001", "list").exit_code == 2  # no --store
    assert run(*shared.reader, "--endpoint-url", "http://127.0.0.1:1", "list").exit_code == 2
    wrong = run("--store", shared.store, "--project", "OTHER", "list")
    assert wrong.exit_code == 3 and "holds project 'STUDY_001'" in wrong.stderr


def test_validate_reports_findings_and_fixes_what_git_restores(seeded: Seeded) -> None:
    assert run_json(*seeded.dev, "validate") == {"ok": True, "problems": []}
    (seeded.store / "datom" / "dm" / ".metadata" / "metadata.json").unlink()
    report = run("--json", *seeded.dev, "validate")
    assert report.exit_code == 1
    problems = json.loads(report.stdout)["problems"]
    assert [(p["table"], p["fixable"], p["fixed"]) for p in problems] == [("dm", True, False)]
    human = run(*seeded.dev, "validate")
    assert human.exit_code == 1 and "fixable with --fix" in human.stdout

    fixed = run("--json", *seeded.dev, "validate", "--fix")
    assert fixed.exit_code == 0, fixed.stdout
    assert json.loads(fixed.stdout)["problems"][0]["fixed"] is True
    assert run(*seeded.dev, "validate").stdout.strip() == "ok: repo and store agree"

    for path in parquet_objects(seeded.store / "datom" / "adsl"):
        path.unlink()
    lost = run("--json", *seeded.dev, "validate", "--fix")
    assert lost.exit_code == 1
    kinds = {(p["table"], p["fixable"]) for p in json.loads(lost.stdout)["problems"]}
    assert kinds == {("adsl", False)}


def test_validate_needs_a_clone(shared: Seeded) -> None:
    result = run(*shared.reader, "validate")
    assert result.exit_code == 5
    assert "reader" in result.stderr and "Traceback" not in result.stderr


# -- table commands --------------------------------------------------------------------------


def test_list_and_history(shared: Seeded) -> None:
    tables = {t["name"]: t for t in run_json(*shared.reader, "list")}
    after = run(*shared.reader, "list", "--json")  # --json also after the command name
    assert after.exit_code == 0 and json.loads(after.stdout) == list(tables.values())
    assert tables["dm"]["current_version"] == shared.dm[2]
    assert tables["dm"]["version_count"] == 3
    history = run_json(*shared.reader, "history", "dm")
    assert [h["version"] for h in history] == list(reversed(shared.dm))
    assert history[0]["commit_message"] == "two more subjects"
    human = run(*shared.dev, "history", "dm").stdout
    assert shared.dm[0][:12] in human and "ages corrected" in human
    assert shared.dm[0] not in human  # humans see short ids


def test_show_prints_the_metadata(shared: Seeded) -> None:
    added = ("table", "version", "columns")  # beside the metadata document itself
    shown = run_json(*shared.reader, "show", "dm")
    assert (shown["table"], shown["version"]) == ("dm", shared.dm[2])
    assert {k: v for k, v in shown.items() if k not in added} == shared.conn.metadata("dm")
    old = run_json(*shared.reader, "show", "dm", "--version", shared.dm[0][:10])
    assert dc.metadata_sha({k: v for k, v in old.items() if k not in added}) == shared.dm[0]
    assert old["colnames"] == ["USUBJID", "AGE", "WEIGHT"]
    human = run(*shared.dev, "show", "adsl").stdout
    assert shared.adsl in human and "derived" in human
    assert f"dm@{shared.dm[2][:12]}, RAW_001/lab@aaaaaaaaaaaa" in human  # parents: versions
    assert "RAW_001/lab@bbbbbbbbbbbb" in human  # sources: data


def test_read_writes_parquet_csv_and_tsv(shared: Seeded, tmp_path: Path) -> None:
    expected = shared.conn.read("dm", as_="arrow")
    out = run_json(*shared.reader, "read", "dm", "--out", tmp_path / "dm.parquet")
    assert (out["version"], out["nrow"], out["format"]) == (shared.dm[2], 5, "parquet")
    assert pq.read_table(tmp_path / "dm.parquet").equals(expected)

    result = run(*shared.dev, "read", "dm", "-v", shared.dm[0][:8], "-o", tmp_path / "dm.csv")
    assert result.exit_code == 0 and "3 rows x 3 columns" in result.stdout
    csv = pacsv.read_csv(tmp_path / "dm.csv")
    assert csv.column_names == ["USUBJID", "AGE", "WEIGHT"]
    assert csv["AGE"].to_pylist() == [30, 31, 32]

    run_json(*shared.dev, "read", "dm", "--columns", "SEX,AGE", "-o", tmp_path / "dm.tsv")
    tsv = pacsv.read_csv(tmp_path / "dm.tsv", parse_options=pacsv.ParseOptions(delimiter="\t"))
    assert tsv.column_names == ["SEX", "AGE"] and tsv["SEX"].to_pylist() == ["M"] * 5


def test_read_refusals(shared: Seeded, tmp_path: Path) -> None:
    assert run(*shared.dev, "read", "dm", "-o", tmp_path / "dm.json").exit_code == 2
    existing = tmp_path / "dm.csv"
    existing.write_text("keep me")
    assert run(*shared.dev, "read", "dm", "-o", existing).exit_code == 2
    assert existing.read_text() == "keep me"
    assert run(*shared.dev, "read", "dm", "-o", existing, "--force").exit_code == 0
    assert existing.read_text() != "keep me"
    missing = run(*shared.dev, "read", "dm", "--columns", "NOPE", "-o", tmp_path / "x.csv")
    assert missing.exit_code == 3 and "NOPE" in missing.stderr
    assert not (tmp_path / "x.csv").exists()
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_lineage_source_and_parents(shared: Seeded) -> None:
    sources = run_json(*shared.reader, "lineage", "adsl")
    assert sources == [{"project": "RAW_001", "table": "lab", "version_sha": "b" * 64}]
    tree = run_json(*shared.reader, "lineage", "adsl", "--depth", "parents")
    assert tree["version"] == shared.adsl
    parents = {(p["project"], p["table"]): p for p in tree["parents"]}
    assert parents[("STUDY_001", "dm")]["version"] == shared.dm[2]
    assert parents[("STUDY_001", "dm")]["resolved"] is True
    assert parents[("RAW_001", "lab")]["resolved"] is False
    human = run(*shared.dev, "lineage", "adsl", "--depth", "parents").stdout
    assert f"STUDY_001/dm@{shared.dm[2][:12]}" in human
    assert "RAW_001/lab@aaaaaaaaaaaa (not readable here)" in human
    assert run(*shared.dev, "lineage", "adsl", "--depth", "everything").exit_code == 2


def _zero_the_data_pages(path: Path) -> None:
    # Keep the parquet footer (its last 8 bytes give its length), destroy everything else.
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little")
    raw[4 : len(raw) - 8 - footer] = bytes(len(raw) - 12 - footer)
    path.write_bytes(bytes(raw))


def test_diff_reads_the_footers_only(seeded: Seeded) -> None:
    # Format 2 keeps column digests in the parquet footers: with the data pages destroyed,
    # reading fails, and the diff still works from the footers alone.
    for path in parquet_objects(seeded.store):
        _zero_the_data_pages(path)
    assert run(*seeded.reader, "read", "dm", "-o", seeded.store / "x.csv").exit_code == 4

    d = run_json(*seeded.reader, "diff", "dm", seeded.dm[0][:8], seeded.dm[1][:8])
    assert (d["from_version"], d["to_version"]) == seeded.dm[:2]
    assert d["columns"] == {
        "added": ["SEX"],
        "removed": ["WEIGHT"],
        "changed": ["AGE"],
        "unchanged": ["USUBJID"],
        "unknown": [],
        "reordered": False,
    }
    assert d["nrow"] == {"from": 3, "to": 3, "change": 0} and d["same_data"] is False

    grown = run_json(*seeded.dev, "diff", "dm", seeded.dm[1], seeded.dm[2][:12])
    assert grown["nrow"] == {"from": 3, "to": 5, "change": 2}
    assert grown["columns"]["changed"] == ["USUBJID", "AGE", "SEX"]

    human = run(*seeded.dev, "diff", "dm", seeded.dm[0][:8], seeded.dm[2][:8])
    assert human.exit_code == 0  # differences are not a failure
    assert "rows: 3 -> 5 (+2)" in human.stdout and "removed" in human.stdout


def test_diff_of_identical_versions(shared: Seeded) -> None:
    d = run_json(*shared.dev, "diff", "dm", shared.dm[0][:8], shared.dm[0])
    assert d["same_data"] is True and d["columns"]["unchanged"] == ["USUBJID", "AGE", "WEIGHT"]
    assert d["columns"]["added"] == d["columns"]["removed"] == d["columns"]["changed"] == []


# -- exit codes and error reports ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("show", "nope"),
        ("history", "nope"),
        ("show", "dm", "--version", "abcdef"),
        ("diff", "dm", "abcdef", "abcdef"),
        ("lineage", "nope"),
    ],
)
def test_not_found_exits_3_with_one_line(shared: Seeded, args: tuple[str, ...]) -> None:
    result = run(*shared.reader, *args)
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.startswith("datom: error: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_malformed_names_are_usage_errors(shared: Seeded) -> None:
    assert run(*shared.reader, "history", "1bad").exit_code == 2
    assert run(*shared.reader, "show", "dm", "--version", "XYZ").exit_code == 2


def test_integrity_error_exits_4_and_debug_adds_the_traceback(
    seeded: Seeded, tmp_path: Path
) -> None:
    data_sha = seeded.conn.metadata("dm")["data_sha"]
    flip_a_byte(seeded.store / "datom" / "dm" / f"{data_sha}.parquet")
    out = tmp_path / "dm.parquet"

    result = run(*seeded.reader, "read", "dm", "-o", out)
    assert result.exit_code == 4
    assert result.stderr.startswith("datom: error: ") and "parquet_sha" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()

    debug = run("--debug", *seeded.reader, "read", "dm", "-o", out)
    assert debug.exit_code == 4
    assert "Traceback (most recent call last)" in debug.stderr
    assert "IntegrityError" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1].startswith("datom: error: ")

    assert run(*seeded.reader, "read", "dm", "-v", seeded.dm[0][:8], "-o", out).exit_code == 0
