"""Odd environments: only DatomErrors escape, and init never leaves a half-made clone.

The environment is made real in a subprocess: an unreadable HOME (root without the
capabilities that bypass file permissions, through ``setpriv``), an ASCII locale
(``LC_ALL=C`` without Python's UTF-8 coercion).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame

_ROOT = str(Path(__file__).resolve().parents[2])

_SCRIPT = """
import sys, traceback
import pandas as pd
import datom_core as dc
base = sys.argv[1]
try:
    conn = dc.init_repo(base + "/{repo}", "STUDY_001", dc.LocalStore(base + "/{store}"))
    print("write", conn.write("dm", pd.DataFrame({{"a": [1, 2]}})).change)
    print("validate", conn.validate().ok)
    other = dc.clone(conn.repo.remote_url, base + "/other")
    print("read", len(other.read("dm")))
except dc.DatomError as e:
    print("DatomError", type(e).__name__, e)
except BaseException:
    traceback.print_exc()
    print("RAW")
"""


def _run(tmp_path: Path, env: dict[str, str], prefix: list[str], repo: str = "repo",
         store: str = "store") -> str:  # fmt: skip
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(repo=repo, store=store)), encoding="utf-8")
    full = {**os.environ, "PYTHONPATH": _ROOT, **env}
    done = subprocess.run(
        [*prefix, sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        encoding="utf-8",
        errors="replace",
    )
    return done.stdout + done.stderr


def test_an_unreadable_home_is_skipped_as_git_skips_it(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (to drop the capability that reads any file)")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Someone\n")
    home.chmod(0)
    try:
        drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
        out = _run(tmp_path, {"HOME": str(home)}, drop)
    finally:
        home.chmod(0o700)
    assert "RAW" not in out and "PermissionError" not in out, out
    assert "write full" in out and "validate True" in out and "read 2" in out, out


def test_a_non_utf8_locale_gives_a_datom_error_for_a_path_and_commits_a_non_ascii_author(
    tmp_path: Path,
) -> None:
    c_locale = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    named = _run(tmp_path / "a", c_locale, [], store="st\u00f6re") if _mkdir(tmp_path / "a") else ""
    assert "RAW" not in named and "DatomError InvalidNameError" in named, named
    assert "PYTHONUTF8=1" in named
    author = {**c_locale, "DATOM_AUTHOR_NAME": "Zo\u00eb \u00c5ngstr\u00f6m"}
    out = _run(tmp_path / "b", author, []) if _mkdir(tmp_path / "b") else ""
    assert "RAW" not in out and "write full" in out and "read 2" in out, out
    log = subprocess.run(
        ["git", "-C", str(tmp_path / "b" / "repo"), "log", "-1", "--format=%an"],
        capture_output=True,
        check=True,
    )
    assert log.stdout.decode("utf-8").strip() == "Zo\u00eb \u00c5ngstr\u00f6m"


def _mkdir(path: Path) -> bool:
    path.mkdir()
    return True


def test_a_failed_init_leaves_nothing_and_the_next_init_succeeds(tmp_path: Path) -> None:
    taken = dc.init_repo(tmp_path / "first", "STUDY_001", dc.LocalStore(tmp_path / "s1"))
    target = tmp_path / "second"
    with pytest.raises(dc.ProjectExistsError):  # the remote holds another project
        dc.init_repo(target, "STUDY_002", dc.LocalStore(tmp_path / "s2"), taken.repo.remote_url)
    assert not target.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("the user's")
    with pytest.raises(dc.DatomError):
        dc.init_repo(kept, "STUDY_002", dc.LocalStore(tmp_path / "s2"), taken.repo.remote_url)
    assert (kept / "notes.txt").read_text() == "the user's"  # never what datom did not make
    conn = dc.init_repo(target, "STUDY_002", dc.LocalStore(tmp_path / "s2"))
    assert conn.write("dm", frame()).change == "full"


def test_no_home_directory_asks_for_datom_home(monkeypatch: pytest.MonkeyPatch) -> None:
    from datom_dagster._config import datom_home

    def no_entry(uid: int) -> None:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("DATOM_HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)  # a uid the password database lacks
    with pytest.raises(dc.DatomError) as caught:
        datom_home()
    assert "DATOM_HOME" in str(caught.value)
    with pytest.raises(dc.DatomError):
        dc.LocalStore("~/store")


_SIGTERM_SCRIPT = """
import os, signal, sys, time
import pandas as pd
import datom_core as dc
# As a supervised process starts: a test runner's worker may pass SIGTERM on ignored.
signal.signal(signal.SIGTERM, signal.SIG_DFL)
base = sys.argv[1]
conn = dc.init_repo(base + "/repo", "STUDY_001", dc.LocalStore(base + "/store"))
conn.write("dm", pd.DataFrame({"a": [1, 2]}))
before = sorted(conn.store.list(""))
put = dc.LocalStore.put_content_named

def terminated(self, key, data):  # the supervisor's SIGTERM lands mid-write
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2)
    return put(self, key, data)

dc.LocalStore.put_content_named = terminated
try:
    conn.write("dm", pd.DataFrame({"a": [3, 4]}))
except KeyboardInterrupt:
    print("interrupted")
print("unchanged", sorted(conn.store.list("")) == before)
print("default again", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


def test_sigterm_mid_write_is_handled_like_sigint(tmp_path: Path) -> None:
    script = tmp_path / "term.py"
    script.write_text(_SIGTERM_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": _ROOT},
        timeout=300,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split() == [
        "interrupted", "unchanged", "True", "default", "again", "True"
    ], done.stdout  # fmt: skip
