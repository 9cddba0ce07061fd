"""Creating a product repo: ``init_repo(..., mode="product", set=NAME)`` and
``datom init --mode product --set NAME`` write project.yaml as R does, and every bad
combination is refused before the store or git is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import datom_core as dc
from tests.core.cli_helpers import run
from tests.core.test_sets_support import frame

pytestmark = pytest.mark.filterwarnings("ignore:manifest format moved from v1 to v2")


def test_product_repo_declares_its_set_last(tmp_path: Path) -> None:
    conn = dc.init_repo(
        tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"),
        mode="product", set="STUDY-001 DB lock",
    )  # fmt: skip
    config = yaml.safe_load(conn.repo.read(".datom/project.yaml") or b"")
    # R appends the two keys after everything init writes.
    assert list(config)[-2:] == ["mode", "set"]
    assert (config["mode"], config["set"]) == ("product", "STUDY-001 DB lock")
    conn.write("adsl", frame())
    r = conn.write_set([conn.member("adsl")], tags={"milestone": "DB lock"})
    assert (r.change, conn.get_set().version) == ("full", r.version)


def test_an_ordinary_repo_names_no_mode(tmp_path: Path) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    config = yaml.safe_load(conn.repo.read(".datom/project.yaml") or b"")
    assert "mode" not in config and "set" not in config


@pytest.mark.parametrize(
    ("mode", "set_name", "match"),
    [
        ("product", None, "must name the set it owns"),
        ("product", "", "must name the set it owns"),
        (None, "adam", "without mode"),
        ("developer", "adam", 'mode= must be "product"'),
        ("product", "1bad", "invalid table name"),
        ("product", ".metadata", "invalid table name"),
    ],
)
def test_bad_mode_or_set_is_refused_before_anything(
    tmp_path: Path, mode: str | None, set_name: str | None, match: str
) -> None:
    with pytest.raises(dc.DatomError, match=match):
        dc.init_repo(
            tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"),
            mode=mode, set=set_name,
        )  # fmt: skip
    assert not (tmp_path / "repo").exists()
    assert not (tmp_path / "repo.remote.git").exists()
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


def test_cli_init_makes_a_product_repo(tmp_path: Path) -> None:
    out = run("init", tmp_path / "p", "--project", "STUDY_001", "--mode", "product",
              "--set", "adam", "--json")  # fmt: skip
    assert out.exit_code == 0, out.output
    config = yaml.safe_load((tmp_path / "p" / ".datom" / "project.yaml").read_text())
    assert (config["mode"], config["set"]) == ("product", "adam")
    refused = run("init", tmp_path / "q", "--project", "STUDY_001", "--mode", "product")
    assert refused.exit_code != 0
    assert "must name the set" in refused.output
    assert not (tmp_path / "q").exists()
