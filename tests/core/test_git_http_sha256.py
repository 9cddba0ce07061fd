"""A SHA-256 remote served over smart HTTP (``git http-backend``): its advertisement says
``object-format=sha256``. datom writes SHA-1 objects only, so it refuses such a remote by
name, with the remedy, before anything is written (the local case: ``_git/_settings.py``,
tests/core/test_gitcli_settings.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.gitbackend import GIT
from tests.gitserver import GitHTTPServer

WHO = ("-c", "user.name=Colleague", "-c", "user.email=c@example.org")
_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")


def _git(*args: str | Path) -> str:
    done = subprocess.run([GIT, *map(str, args)], capture_output=True, text=True, env=_ENV)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sha256_remote(server: GitHTTPServer, name: str, tmp_path: Path, empty: bool) -> Path:
    bare = server.root / name
    if bare.exists():
        shutil.rmtree(bare)
    if empty:
        _git("init", "-q", "--bare", "-b", "main", "--object-format=sha256", bare)
    else:
        work = tmp_path / f"work-{name}"
        _git("init", "-q", "-b", "main", "--object-format=sha256", work)
        (work / "README").write_text("a sha256 project\n")
        _git("-C", work, "add", "README")
        _git("-C", work, *WHO, "commit", "-qm", "first")
        _git("clone", "-q", "--bare", work, bare)
    _git("-C", bare, "config", "http.receivepack", "true")
    return bare


def _contents(bare: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (str(p.relative_to(bare)), p.read_bytes()) for p in bare.rglob("*") if p.is_file()
    )


@pytest.fixture
def server(
    git_backend_server: GitHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHTTPServer]:
    monkeypatch.setenv("DATOM_GIT_TOKEN", git_backend_server.token)
    yield git_backend_server


def _refused(e: pytest.ExceptionInfo[dc.GitError], url: str) -> None:
    message = str(e.value)
    assert url in message
    assert "sha256" in message.lower() and "--object-format=sha1" in message


@pytest.mark.parametrize("empty", [True, False], ids=["empty", "with-history"])
def test_init_on_a_sha256_http_remote_is_refused_and_writes_nothing(
    server: GitHTTPServer, tmp_path: Path, empty: bool
) -> None:
    bare = _sha256_remote(server, "proj", tmp_path, empty)
    before = _contents(bare)
    url = server.url_for("proj")
    with pytest.raises(dc.GitError) as e:
        dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"), url)
    _refused(e, url)
    assert _contents(bare) == before
    assert not (tmp_path / "repo").exists()  # no half-made clone either
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.parquet"))
    _git("-C", bare, "fsck", "--strict", "--full")


def test_clone_of_a_sha256_http_remote_is_refused(server: GitHTTPServer, tmp_path: Path) -> None:
    bare = _sha256_remote(server, "proj", tmp_path, empty=False)
    before = _contents(bare)
    url = server.url_for("proj")
    with pytest.raises(dc.GitError) as e:
        dc.clone(url, tmp_path / "clone", dc.LocalStore(tmp_path / "store"))
    _refused(e, url)
    assert _contents(bare) == before
    assert not (tmp_path / "clone").exists()


def test_a_project_whose_http_remote_became_sha256_refuses_to_write(
    server: GitHTTPServer, tmp_path: Path
) -> None:
    """The remote a clone knows was replaced by a SHA-256 repository of the same name:
    connect, then a write, is refused; the remote and the store stay as they were."""
    server.create_bare("proj")
    url = server.url_for("proj")
    store = dc.LocalStore(tmp_path / "store")
    dc.init_repo(tmp_path / "repo", "STUDY_001", store, url).write("dm", frame())
    store_before = sorted(p for p in (tmp_path / "store").rglob("*") if p.is_file())
    bare = _sha256_remote(server, "proj", tmp_path, empty=False)
    before = _contents(bare)
    with pytest.raises(dc.GitError) as e:
        conn = dc.connect(tmp_path / "repo")
        conn.write("dm", frame(seed=2))
    _refused(e, url)
    assert _contents(bare) == before
    assert sorted(p for p in (tmp_path / "store").rglob("*") if p.is_file()) == store_before
