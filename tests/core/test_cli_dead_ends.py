"""What the command line prints leads somewhere: URLs it prints open the project again,
``show`` says the types, ``--json`` carries the table and version and its errors,
version prefixes of any case, ``read --out -``, and partitioned assets by their name."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from tests.core.cli_helpers import Seeded, run, run_json, seeded_project
from tests.core.projects import frame

# Every URL a command prints: file:// and s3:// ones, and absolute paths on their own.
_URL = re.compile(r"(?:file|s3)://[^\s'\",;)]+|(?<![\w:/])/[^\s'\",;)]+")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seeded_project(tmp_path_factory.mktemp("dead_ends"))


def _urls(*outputs: str) -> set[str]:
    return {u.rstrip(".:") for text in outputs for u in _URL.findall(text)}


def _printed_by_the_cli(tmp_path: Path, store_arg: str | None) -> tuple[str, set[str], Path]:
    """A project made by ``datom init``; every store URL its commands print."""
    extra = ("--store", store_arg) if store_arg else ()
    made = run("init", tmp_path / "study", "--project", "P_URL", *extra)
    assert made.exit_code == 0, made.output
    dc.connect(tmp_path / "study").write("dm", frame(3))
    repo = ("--repo", tmp_path / "study")
    outputs = [
        made.stdout,
        run(*repo, "status").stdout,
        run(*repo, "status", "--json").stdout,
        run(*repo, "history", "nope").stderr,  # an error that names the store
    ]
    status = json.loads(outputs[2])
    reader = run("--store", status["store"], "--project", "P_URL", "status")
    wrong = run("--store", status["store"], "--project", "OTHER", "list")  # names the store
    missing = run("--store", status["store"], "--project", "P_URL", "show", "nope")
    outputs += [reader.stdout, wrong.stderr, missing.stderr]
    urls = {u for u in _urls(*outputs) if "remote" not in u and u != str(tmp_path / "study")}
    return status["store"], urls, tmp_path / "study"


def test_every_store_url_the_cli_prints_opens_the_project(tmp_path: Path) -> None:
    store_url, urls, clone = _printed_by_the_cli(tmp_path, None)
    assert store_url.endswith("/datom")  # the store's root, as status prints it
    assert store_url in urls, urls
    for url in sorted(urls):
        listed = run("--store", url, "--project", "P_URL", "list", "--json")
        assert listed.exit_code == 0, (url, listed.output)
        assert [t["name"] for t in json.loads(listed.stdout)] == ["dm"]
        # ... and as a developer's store override, and for a second clone.
        assert run("--repo", clone, "--store", url, "list").exit_code == 0, url
    remote = run_json("--repo", clone, "status")["remote"]
    second = run("clone", remote, tmp_path / "second", "--store", store_url)
    assert second.exit_code == 0, second.output
    # The location above datom/ (what init takes) still works, and nothing else is guessed.
    assert run("--store", tmp_path / "study.store", "--project", "P_URL", "list").exit_code == 0
    wrong = run("--store", tmp_path / "elsewhere" / "datom", "--project", "P_URL", "list")
    assert wrong.exit_code == 3 and "datom init" in wrong.stderr


def test_s3_store_urls_round_trip(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    location = f"s3://{s3_bucket}/studies/p"
    made = run("--endpoint-url", s3_endpoint, "init", tmp_path / "s3", "--project", "P_S3",
               "--store", location, "--json")  # fmt: skip
    assert made.exit_code == 0, made.output
    printed = json.loads(made.stdout)["store"]
    assert printed == f"{location}/datom"
    for url in (printed, location):
        out = run("--endpoint-url", s3_endpoint, "--store", url, "--project", "P_S3", "status")
        assert out.exit_code == 0, (url, out.output)
        assert f"store:       {printed}" in out.stdout


# -- show ------------------------------------------------------------------------------------


def test_show_prints_column_types_and_json_names_table_and_version(shared: Seeded) -> None:
    human = run(*shared.dev, "show", "dm").stdout
    assert re.search(r"AGE\s+│\s+int64", human) and re.search(r"SEX\s+│\s+\S*string", human)
    shown = run_json(*shared.reader, "show", "dm", "-v", shared.dm[0][:8])
    assert (shown["table"], shown["version"]) == ("dm", shared.dm[0])
    types = {c["name"]: c["type"] for c in shown["columns"]}
    assert types["AGE"] == "int64" and types["WEIGHT"] == "double"
    assert [c["name"] for c in shown["columns"]] == shown["colnames"]


def test_show_without_the_parquet_object_still_shows_the_metadata(tmp_path: Path) -> None:
    seeded = seeded_project(tmp_path)
    for obj in (tmp_path / "store").rglob("*.parquet"):
        obj.unlink()
    out = run(*seeded.dev, "show", "dm")
    assert out.exit_code == 0 and "types unknown" in out.stdout
    assert run_json(*seeded.dev, "show", "dm")["columns"][0]["type"] is None


@pytest.mark.parametrize(
    ("args", "code", "kind"),
    [
        (("show", "nope"), 3, "NotFoundError"),
        (("show", "dm", "-v", "zz"), 2, "InvalidNameError"),
        (("read", "dm"), 2, "UsageError"),  # --out missing: click's own usage error
        (("diff", "dm", "--key", "NOPE"), 3, "NotFoundError"),
        (("set", "show"), 3, "NotFoundError"),  # a data repo holds no set
        (("set", "write", "--member", "dm"), 5, "NotProductRepoError"),
    ],
)
def test_errors_are_json_under_json(shared: Seeded, args: tuple[str, ...], code: int, kind: str):
    for where in ("--json", None):  # before the command, and after it
        argv = ("--json", *shared.dev, *args) if where else (*shared.dev, *args, "--json")
        out = run(*argv)
        assert out.exit_code == code, out.output
        error = json.loads(out.stdout)["error"]
        assert (error["type"], error["exit_code"]) == (kind, code)
        assert error["message"] and error["message"] in out.stderr  # humans still see it


# -- version prefixes ------------------------------------------------------------------------


def test_version_prefixes_are_case_insensitive(shared: Seeded) -> None:
    old, new = shared.dm[0][:10].upper(), shared.dm[2][:10].upper()
    assert run_json(*shared.dev, "show", "dm", "-v", old)["version"] == shared.dm[0]
    diff = run_json(*shared.dev, "diff", "dm", old, new)
    assert (diff["from_version"], diff["to_version"]) == (shared.dm[0], shared.dm[2])
    lineage = run(*shared.dev, "lineage", "dm", "--version", old)
    assert lineage.exit_code == 0, lineage.output
    read = run(*shared.dev, "read", "dm", "-v", old, "--out", "-")
    assert read.exit_code == 0 and read.stdout.count("\n") == 4  # header + 3 rows of v1


# -- read --out - ----------------------------------------------------------------------------


def test_read_streams_csv_and_parquet_to_stdout(shared: Seeded) -> None:
    expected = shared.conn.read("dm", as_="arrow")
    csv = run(*shared.reader, "read", "dm", "--out", "-")
    assert csv.exit_code == 0, csv.output
    assert pacsv.read_csv(io.BytesIO(csv.stdout_bytes)).num_rows == expected.num_rows
    assert "to stdout" in csv.stderr  # the summary goes to stderr, the data alone to stdout
    parquet = run(*shared.reader, "read", "dm", "-o", "-", "--format", "parquet")
    assert pq.read_table(io.BytesIO(parquet.stdout_bytes)).equals(expected)
    tsv = run(*shared.reader, "read", "dm", "-o", "-", "--format", "tsv", "--columns", "AGE")
    assert tsv.stdout.splitlines()[0] == '"AGE"'
    clash = run(*shared.reader, "--json", "read", "dm", "-o", "-")
    assert clash.exit_code == 2 and "stdout" in json.loads(clash.stdout)["error"]["message"]


def test_read_format_overrides_the_extension(shared: Seeded, tmp_path: Path) -> None:
    out = tmp_path / "dm.data"
    assert run(*shared.reader, "read", "dm", "-o", out, "--format", "parquet").exit_code == 0
    assert pq.read_table(out).num_rows == 5


# -- partitioned assets ----------------------------------------------------------------------


def test_a_partitioned_asset_is_found_by_its_name(tmp_path: Path) -> None:
    conn = dc.init_repo(tmp_path / "repo", "SALES", dc.LocalStore(tmp_path / "store"))
    for day in ("2026-01-01", "2026-01-02"):
        conn.write(f"daily_sales({day})", pd.DataFrame({"amount": [1.5, 2.5]}))
    conn.write("daily_sales(2026-01-01)", pd.DataFrame({"amount": [9.0]}), message="restated")
    repo = ("--repo", conn.path)
    history = run_json(*repo, "history", "daily_sales")
    expected = [
        ("daily_sales(2026-01-01)", v.version) for v in conn.history("daily_sales(2026-01-01)")
    ]
    expected += [
        ("daily_sales(2026-01-02)", v.version) for v in conn.history("daily_sales(2026-01-02)")
    ]
    assert sorted((h["table"], h["version"]) for h in history) == sorted(expected)
    stamps = [h["timestamp"] for h in history]
    assert stamps == sorted(stamps, reverse=True)  # newest first across the partitions
    human = run(*repo, "history", "daily_sales").stdout
    assert "daily_sales(2026-01-02)" in human
    for command in (("show",), ("lineage",), ("diff",), ("read", "-o", "-")):
        out = run(*repo, command[0], "daily_sales", *command[1:])
        assert out.exit_code == 3, (command, out.output)
        assert "partitioned asset" in out.stderr and "daily_sales(2026-01-02)" in out.stderr
        assert f"datom {command[0]} 'daily_sales(2026-01-02)'" in out.stderr
    # A name that is neither a table nor an asset is still a plain "not found".
    missing = run(*repo, "show", "daily")
    assert missing.exit_code == 3 and "partitioned asset" not in missing.stderr
