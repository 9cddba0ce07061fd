"""``datom set write|show|members|diff`` on a real product repo, with ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.cli_helpers import run
from tests.core.test_sets_support import frame, new_product

pytestmark = pytest.mark.filterwarnings("ignore:manifest format moved from v1 to v2")


def test_set_commands(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("adsl", frame(seed=1), parents=["dm"])
    source = dc.init_repo(tmp_path / "sdtm", "SDTM_001", dc.LocalStore(tmp_path / "sdtm-store"))
    source.write("ex", frame(seed=3))
    repo = ("--repo", conn.path)
    out = run(*repo, "set", "write", "--member", "dm", "--member", "adsl",
              "--member", "SDTM_001:ex", "--source", f"SDTM_001={(tmp_path / 'sdtm-store').as_uri()}",
              "--member-tag", "dm:type=input", "--member-tag", "adsl:type=output",
              "--tag", "cut=month 3", "--json")  # fmt: skip
    assert out.exit_code == 0, out.output
    first = json.loads(out.stdout)
    assert (first["change"], first["member_count"]) == ("full", 3)
    shown = json.loads(run(*repo, "set", "show", "--json").stdout)
    assert (shown["version"], shown["tags"]) == (first["version"], {"cut": ["month 3"]})
    members = json.loads(run(*repo, "set", "members", "--json").stdout)
    assert [m["id"]["name"] for m in members] == ["ex", "adsl", "dm"]
    assert run(*repo, "set", "write", "--update", "--json").stdout.count('"none"') == 1
    conn.write("dm", frame(n=9))
    conn.write("adsl", frame(seed=2), parents=["dm"])
    second = json.loads(run(*repo, "set", "write", "--update", "--json").stdout)
    assert second["change"] == "full"
    diff = json.loads(run(*repo, "set", "diff", "--json").stdout)
    assert {m["name"] for m in diff["moved"]} == {"dm", "adsl"}
    human = run(*repo, "set", "diff", first["version"][:8])
    assert "moved dm" in human.stdout
    listing = run(*repo, "set", "members", first["version"][:8]).stdout
    assert "SDTM_001" in listing and "type=input" in listing
    store_url = (tmp_path / "store").as_uri()
    reader = run("--store", store_url, "--project", "STUDY_001", "set", "show", "--json")
    assert reader.exit_code == 0, reader.output
    assert json.loads(reader.stdout)["version"] == second["version"]


def test_set_write_refusals_exit_nonzero(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    out = run("--repo", conn.path, "set", "write", "--member", "dm", "--tag", "bad")
    assert out.exit_code != 0 and "KEY=VALUE" in out.output
    out = run("--repo", conn.path, "set", "write", "--member", "OTHER:dm")
    assert out.exit_code != 0 and "--source" in out.output


def test_read_a_member_at_the_version_a_set_pins(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    run("--repo", conn.path, "set", "write", "--member", "dm")
    pinned = conn.history("dm")[0].version
    conn.write("dm", frame(n=9))
    target = tmp_path / "dm.csv"
    out = run(
        "--repo", conn.path, "read", "--set", "adam", "--member", "dm", "-o", target, "--json"
    )
    assert out.exit_code == 0, out.output
    said = json.loads(out.stdout)
    assert (said["version"], said["nrow"]) == (pinned, 5)
    x = conn.get_set()
    out = run("--repo", conn.path, "read", "--set", f"adam@{x.version[:8]}", "--member", "dm",
              "-o", tmp_path / "again.parquet", "--json")  # fmt: skip
    assert json.loads(out.stdout)["version"] == pinned
    bad = run("--repo", conn.path, "read", "dm", "--set", "adam", "-o", tmp_path / "x.csv")
    assert bad.exit_code != 0
