"""Valid JSON of the wrong shape, in the store and in git: an ``IntegrityError`` naming the
key, or a ``validate`` finding; never a raw Python exception, never ``null`` written back.

Complements the typed-document tests of format 2 with what they leave out: ``validate``
before the fix, the command line's exit codes, and a ``version_history.json`` whose
deletion was committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame, new_project

DATOM = str(Path(sys.executable).with_name("datom"))

STORE_CASES = [
    ("dm/.metadata/version_history.json", "hello"),
    ("dm/.metadata/version_history.json", {"version": 5}),
    ("dm/.metadata/metadata.json", []),
    (".metadata/manifest.json", [1, 2, 3]),
]


def _datom(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DATOM, *map(str, args)], capture_output=True, text=True, timeout=120, cwd="/"
    )


def _git(clone: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=clone,
        check=True,
        capture_output=True,
    )


def _reader_args(conn: dc.Connection) -> list[str]:
    assert isinstance(conn.store, dc.LocalStore)
    return ["--store", conn.store.root, "--project", conn.project_name]


@pytest.mark.parametrize(("key", "doc"), STORE_CASES, ids=["str", "object", "list", "manifest"])
def test_a_wrong_shape_store_document_is_an_integrity_error_everywhere(
    tmp_path: Path, key: str, doc: object
) -> None:
    conn = new_project(tmp_path)
    v1 = conn.write("dm", frame())
    conn.store.write_bytes(key, json.dumps(doc).encode())

    # The command line: exit 4 and one line, never an internal error (70).
    command = ["list"] if key.startswith(".metadata") else ["history", "dm"]
    if key.endswith("metadata.json"):
        command = ["show", "dm"]
    out = _datom(*_reader_args(conn), *command)
    assert out.returncode == 4, out
    assert key in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr

    # A developer's validate reports the damaged copy before repairing it.
    report = conn.validate()
    assert not report.ok and any(p.key == key for p in report.problems), report
    assert conn.validate(fix=True).ok
    assert conn.validate().ok
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    assert reader.read("dm", version=v1.version[:10]).equals(frame())
    assert b"null" not in conn.store.read_bytes(key)


def test_a_committed_wrong_shape_metadata_is_reported_refused_and_never_written_back(
    tmp_path: Path,
) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.repo.commit({"dm/metadata.json": b"[1]\n"}, "damage")
    conn.repo.push()

    report = conn.validate()
    assert ("corrupt_git_document", "dm") in {(p.kind, p.table) for p in report.problems}
    out = _datom("--json", "--repo", conn.path, "validate")
    assert out.returncode == 1, out
    assert "corrupt_git_document" in {p["kind"] for p in json.loads(out.stdout)["problems"]}

    before = fingerprint(conn)
    with pytest.raises(dc.IntegrityError, match="dm/metadata.json"):
        conn.write("dm", frame(seed=5))
    assert fingerprint(conn) == before

    conn.validate(fix=True)
    for key in ("dm/.metadata/metadata.json", "dm/.metadata/version_history.json"):
        assert b"null" not in conn.store.read_bytes(key)
    assert b"null" not in (conn.path / ".datom/manifest.json").read_bytes()
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    assert reader.read("dm").equals(frame())  # store readers keep the last good version
    # Git's last good copy agrees with the history: the fix committed it back.
    restored = json.loads((conn.path / "dm/metadata.json").read_text())
    assert isinstance(restored, dict) and dc.metadata_sha(restored) == conn.history("dm")[0].version
    assert conn.validate().ok
    assert conn.write("dm", frame(seed=5)).change == "full"


def test_a_committed_deletion_of_the_history_is_reported_and_refused(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    first = conn.write("dm", frame())
    conn.write("dm", frame(seed=1))
    _git(conn.path, "rm", "-q", "dm/version_history.json")
    _git(conn.path, "commit", "-q", "-m", "lose the history")
    _git(conn.path, "push", "-q", "origin", "HEAD")  # a colleague's push, with git

    report = conn.validate()
    assert not report.ok
    assert any(p.table == "dm" and "version_history" in p.key for p in report.problems), report

    before = fingerprint(conn)
    with pytest.raises(dc.IntegrityError, match="dm/version_history.json"):
        conn.write("dm", frame(seed=2))  # a write would start a one-entry history: refused
    assert fingerprint(conn) == before

    conn.validate(fix=True)
    history = json.loads(conn.store.read_bytes("dm/.metadata/version_history.json"))
    assert isinstance(history, list) and len(history) == 2  # the store's copy is kept
    assert len(json.loads((conn.path / "dm/version_history.json").read_text())) == 2
    assert conn.validate().ok
    conn.write("dm", frame(seed=2))
    assert len(conn.history("dm")) == 3
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    assert reader.read("dm", version=first.version).equals(frame())
