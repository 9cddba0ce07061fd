"""Alternating writers, R and Python, writing back the same data: after the first
conversion of a format-1 project, nobody records a new version."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import datom_core as dc
from tests.rdatom.rsession import RSession
from tests.rdatom.scenarios import Project, py_rewrite_current, remote_head

# One worker per module under `--dist loadgroup`: its R process and projects are built once.
pytestmark = pytest.mark.xdist_group("rdatom-alternating")
TABLES = ("lb", "adsl")  # adsl: a derived table whose parent carries no lineage


def _r_project(r: RSession, base: Path) -> Project:
    p = Project("ALT", base / "r-clone", base / "store", base / "remote.git")
    r.call("r_init", path=p.clone, project=p.name, store=p.store, remote=p.remote)
    lb = r.call("r_write", conn=p.r_conn(), name="lb", data="lb")["version"]
    r.call(
        "r_write",
        conn=p.r_conn(),
        name="adsl",
        data="adsl",
        parents=[{"table": "lb", "version": lb}],
    )
    return p


def _py_round(conn: dc.Connection, p: Project) -> list[str]:
    conn.pull()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-time conversion notice, if any
        return [py_rewrite_current(conn, p, t).change for t in TABLES]


def _r_round(r: RSession, p: Project, clone: Path) -> list[str]:
    r.call("r_pull", **p.r_conn(clone))
    return [r.call("r_rewrite_current", conn=p.r_conn(clone), name=t)["action"] for t in TABLES]


def _history_lengths(conn: dc.Connection) -> list[int]:
    return [len(conn.history(t)) for t in TABLES]


def test_format2_project_r_python_r_python(r020: RSession, tmp_path: Path) -> None:
    p = _r_project(r020, tmp_path)
    py = dc.clone(p.remote, tmp_path / "py")
    tip = remote_head(p.remote)
    rounds = [
        _py_round(py, p),
        _r_round(r020, p, p.clone),
        _py_round(py, p),
        _r_round(r020, p, p.clone),
    ]
    assert rounds == [["none", "none"]] * 4
    assert remote_head(p.remote) == tip
    assert _history_lengths(p.py_reader()) == [1, 1]


@pytest.mark.parametrize("converter", ["python", "r"])
def test_format1_project_converts_once(
    converter: str, r011: RSession, r020: RSession, tmp_path: Path
) -> None:
    p = _r_project(r011, tmp_path)
    py = dc.clone(p.remote, tmp_path / "py")
    rclone = tmp_path / "r020"
    r020.call("r_clone", path=rclone, store=p.store, remote=p.remote)
    if converter == "python":
        first = _py_round(py, p)
        rest = [_r_round(r020, p, rclone), _py_round(py, p), _r_round(r020, p, rclone)]
    else:
        first = _r_round(r020, p, rclone)
        rest = [_py_round(py, p), _r_round(r020, p, rclone), _py_round(py, p)]
    # The conversion: one metadata-only version per table (kind enters the identity).
    assert first == ["metadata_only", "metadata_only"]
    tip = remote_head(p.remote)
    assert rest == [["none", "none"]] * 3
    assert remote_head(p.remote) == tip
    assert _history_lengths(p.py_reader()) == [2, 2]
