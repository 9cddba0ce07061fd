"""A set writer killed (SIGKILL) at every step boundary: re-running the write converges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from datom_core._sets import get_set, write_set
from tests.core.test_sets_support import frame, member_of, new_product, opener, remote_head

STEPS = [
    "set:planned",
    "set:committed",
    "set:pushed",
    "set:mirror:payload",
    "set:mirror:snapshot",
    "set:mirror:history",
    "set:mirror:metadata",
    "set:mirrored",
]

_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import datom_core as dc
    from datom_core._sets import write_set
    from tests.core.test_sets_support import member_of
    conn = dc.connect({clone!r})
    write_set(conn, [member_of(conn, "dm", type="input")], tags={{"cut": "lock"}})
    """
)


def _write_and_die(clone: Path, step: str) -> int:
    code = _WRITER.format(root=str(Path(__file__).parents[2]), clone=str(clone))
    env = {**os.environ, "DATOM_CRASH_AT": step, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode


@pytest.mark.parametrize("step", STEPS)
def test_killed_set_writer_converges_on_rerun(tmp_path: Path, step: str) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    assert _write_and_die(conn.path, step) == -9
    again = write_set(conn, [member_of(conn, "dm", type="input")], tags={"cut": "lock"})
    expected = "full" if step in ("set:planned", "set:committed") else "none"
    assert again.change == expected
    history = json.loads(conn.store.read_bytes("adam/.metadata/version_history.json"))
    assert [h["version"] for h in history] == [again.version]
    assert history[0]["commit_sha"] and history[0]["document_sha"] == again.document_sha
    assert conn.repo.head() == remote_head(conn)
    x = get_set(conn.store, "STUDY_001", opener=opener)
    assert (x.version, x.member("dm").version) == (again.version, conn.history("dm")[0].version)
    manifest = json.loads(conn.store.read_bytes(".metadata/manifest.json"))
    assert manifest["artifacts"]["adam"]["current_version"] == again.version
    assert (
        conn.store.read_bytes(".metadata/manifest.json")
        == (conn.path / ".datom" / "manifest.json").read_bytes()
    )
