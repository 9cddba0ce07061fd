"""A product repo knows where its members live: the layout the demo builds (the set in a
product repo, its members in the study's own project and store), read from the product
repo with ``read --set ... --member ...`` and with the pin ``<project>/<set>@<version>``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.csv as pacsv
import pytest
import yaml

import datom_core as dc
from tests.core.cli_helpers import run, run_json
from tests.core.projects import frame

pytestmark = pytest.mark.filterwarnings("ignore:manifest format moved from v1 to v2")

CUT = "DB lock (month 3)"
MEMBER_STORES = "member_stores"  # the key of project.yaml that records them


def _study(tmp_path: Path) -> dc.Connection:
    study = dc.init_repo(tmp_path / "study", "STUDY_001", dc.LocalStore(tmp_path / "study.store"))
    study.write("dm", frame(3))
    study.write("adsl", frame(2, seed=1), parents=["dm"])
    return study


def _product(tmp_path: Path) -> Path:
    made = run("init", tmp_path / "cut", "--project", "CUT_001", "--mode", "product", "--set", CUT)
    assert made.exit_code == 0, made.output
    return tmp_path / "cut"


def _csv(out: bytes) -> list[str]:
    return pacsv.read_csv(io.BytesIO(out)).column("USUBJID").to_pylist()


def test_read_a_member_of_another_project_from_the_product_repo(tmp_path: Path) -> None:
    study, cut = _study(tmp_path), _product(tmp_path)
    source = f"STUDY_001={tmp_path / 'study.store'}"
    written = run_json("--repo", cut, "set", "write", "--member", "STUDY_001:dm",
                       "--member", "STUDY_001:adsl", "--source", source)  # fmt: skip
    # The product repo records where STUDY_001 lives, in its project.yaml, committed.
    config = yaml.safe_load((cut / ".datom" / "project.yaml").read_text())
    assert config[MEMBER_STORES]["STUDY_001"]["root"] == str(tmp_path / "study.store")
    assert config["mode"] == "product" and config["set"] == CUT
    assert (
        dc.connect(cut).repo.read(".datom/project.yaml")
        == (cut / ".datom" / "project.yaml").read_bytes()
    )
    pinned_dm = study.history("dm")[0].version
    study.write("dm", frame(7))  # the study moves on; the cut still pins the old dm

    out = run("--repo", cut, "read", "--set", CUT, "--member", "dm", "-o", "-")
    assert out.exit_code == 0, out.output
    assert _csv(out.stdout_bytes) == frame(3)["USUBJID"].tolist()
    # The pin a data cut prints, with an uppercase version prefix, and the full id.
    for version in (written["version"][:10].upper(), written["version"]):
        pin = f"CUT_001/{CUT}@{version}"
        out = run("--repo", cut, "read", "--set", pin, "--member", "dm", "-o", "-", "--json")
        assert out.exit_code == 2  # --json and stdout: refused, below without --json
        out = run("--repo", cut, "read", "--set", pin, "--member", "dm", "-o", tmp_path / "x.csv",
                  "-f", "--json")  # fmt: skip
        assert out.exit_code == 0, out.output
        said = json.loads(out.stdout)
        assert (said["project"], said["table"], said["version"]) == ("STUDY_001", "dm", pinned_dm)
        shown = run_json("--repo", cut, "set", "show", pin)
        assert shown["version"] == written["version"]
        assert len(run_json("--repo", cut, "set", "members", pin)) == 2
    # A reader of the product's store alone knows it from the store's copy of the record.
    product_store = (tmp_path / "cut.store" / "datom").as_uri()
    out = run("--store", product_store, "--project", "CUT_001", "read", "--set", CUT,
              "--member", "dm", "-o", "-")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert _csv(out.stdout_bytes) == frame(3)["USUBJID"].tolist()
    # A fresh clone of the product repo knows it too (it is in git, not in this checkout).
    remote = run_json("--repo", cut, "status")["remote"]
    assert run("clone", remote, tmp_path / "cut2").exit_code == 0
    again = run("--repo", tmp_path / "cut2", "read", "--set", CUT, "--member", "adsl", "-o", "-")
    assert again.exit_code == 0, again.output
    assert _csv(again.stdout_bytes) == frame(2, seed=1)["USUBJID"].tolist()


def test_the_remedies_lead_somewhere(tmp_path: Path) -> None:
    """A reader of the product's store alone is told to pass --source, which works; a set
    written before stores were recorded is taught them by set write --update --source."""
    _study(tmp_path)
    cut = _product(tmp_path)
    conn = dc.connect(cut)
    study_reader = dc.connect(
        store=dc.LocalStore(tmp_path / "study.store"), project_name="STUDY_001"
    )
    conn.write_set([study_reader.member("dm")])  # typed member: its store is recorded
    assert MEMBER_STORES in yaml.safe_load((cut / ".datom" / "project.yaml").read_text())
    # Forget the record, as a product repo written by an earlier release would be.
    config = yaml.safe_load(conn.repo.read(".datom/project.yaml") or b"")
    del config[MEMBER_STORES]
    conn.repo.commit({".datom/project.yaml": yaml.safe_dump(config).encode()}, "older release")
    conn.repo.push()
    conn.store.delete(".metadata/member_stores.json")  # and its copy in the store

    product_store = (tmp_path / "cut.store" / "datom").as_uri()
    as_reader = ("--store", product_store, "--project", "CUT_001")
    for where in (as_reader, ("--repo", cut)):
        out = run(*where, "read", "--set", CUT, "--member", "dm", "-o", "-")
        assert out.exit_code == 2, out.output
        assert "--source STUDY_001=STORE_URL" in out.stderr
        study_url = (tmp_path / "study.store" / "datom").as_uri()  # as status prints it
        fixed = run(*where, "read", "--set", CUT, "--member", "dm", "-o", "-",
                    "--source", f"STUDY_001={study_url}")  # fmt: skip
        assert fixed.exit_code == 0, fixed.output

    head = conn.repo.head()
    taught = run_json("--repo", cut, "set", "write", "--update", "--source",
                      f"STUDY_001={tmp_path / 'study.store'}")  # fmt: skip
    assert taught["change"] == "none"  # the same set version, now with its members located
    assert conn.repo.head() != head
    for where in (as_reader, ("--repo", cut)):  # the store's copy is back too
        out = run(*where, "read", "--set", CUT, "--member", "dm", "-o", "-")
        assert out.exit_code == 0, out.output
    # Recording again changes nothing.
    head = conn.repo.head()
    assert run_json("--repo", cut, "set", "write", "--update")["change"] == "none"
    assert conn.repo.head() == head


def test_a_pin_of_another_project_says_where_to_run(tmp_path: Path) -> None:
    study = _study(tmp_path)
    out = run("--repo", study.path, "read", "--set", f"CUT_001/{CUT}@abcdef", "--member", "dm",
              "-o", "-")  # fmt: skip
    assert out.exit_code == 2
    assert "project 'CUT_001'" in out.stderr and "--project CUT_001" in out.stderr


def test_a_set_named_to_a_table_command_is_sent_to_the_set_commands(tmp_path: Path) -> None:
    _study(tmp_path)
    cut = _product(tmp_path)
    source = f"STUDY_001={tmp_path / 'study.store'}"
    run_json("--repo", cut, "set", "write", "--member", "STUDY_001:dm", "--source", source)
    listed = run("--repo", cut, "list")
    assert listed.exit_code == 0 and f"set: {CUT}" in listed.stdout
    assert "(no tables)" not in listed.stdout
    for command in (("show",), ("read", "-o", "-"), ("lineage",), ("diff",)):
        out = run("--repo", cut, command[0], CUT, *command[1:])
        assert out.exit_code == 2, (command, out.output)
        assert "is a set, not a table" in out.stderr and "datom set show" in out.stderr
        assert "gone" not in out.stderr
    out = run("--repo", cut, "read", "--set", CUT, "-o", "-")
    assert out.exit_code == 2 and "--member TABLE, one of: dm" in out.stderr


def test_an_s3_members_store_is_recorded_without_credentials(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str
) -> None:
    """The record names bucket, prefix and endpoint; the credentials stay in the
    environment, and the member is fetched with the environment's."""
    secret = "an-s3-secret-never-recorded"
    store = dc.S3Store(s3_bucket, "study", endpoint_url=s3_endpoint, key="testing", secret=secret)
    study = dc.init_repo(tmp_path / "study", "STUDY_S3", store)
    study.write("dm", frame(4))
    cut = _product(tmp_path)
    dc.connect(cut).write_set([study.member("dm")])
    text = (cut / ".datom" / "project.yaml").read_text()
    assert secret not in text and "testing" not in text
    recorded = yaml.safe_load(text)[MEMBER_STORES]["STUDY_S3"]
    assert recorded == {"type": "s3", "root": s3_bucket, "prefix": "study", "region": None,
                        "endpoint_url": s3_endpoint}  # fmt: skip
    out = run("--repo", cut, "read", "--set", CUT, "--member", "dm", "-o", "-")
    assert out.exit_code == 0, out.output
    assert len(_csv(out.stdout_bytes)) == 4
