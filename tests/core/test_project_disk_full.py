"""A disk that fills once a write's push has landed: the version stays recorded (and its
parquet stored); a clone that cannot follow is logged and finished by the next operation
once there is room (which says what to do meanwhile); a store copy that cannot be
written raises a DatomError noting that the version is recorded."""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from typing import Any

import pytest

import datom_core as dc
from datom_core._errors import DatomError, GitError, StoreError
from datom_core._git import _internals as gi
from datom_core._git._repo import RepoCore
from datom_core._project import _layout as L
from datom_core._project import _mirror
from tests.core.projects import frame, new_project


def _disk_full(*args: Any) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_while_the_clone_follows_its_push_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))
    real = gi.write_worktree_file

    def full_here(path: Path, data: bytes) -> None:  # this clone's working-tree files
        if conn.repo.path in path.parents:
            _disk_full()
        real(path, data)

    monkeypatch.setattr(gi, "write_worktree_file", full_here)
    with caplog.at_level(logging.WARNING, "datom_core.git"):
        result = conn.write("dm", frame(seed=2))  # recorded: the clone's update is logged
    assert result.change == "full" and "could not follow it" in caplog.text
    with pytest.raises(DatomError) as got:  # still full: the next operation says what to do
        conn.repo.recover()
    assert isinstance(got.value, GitError) and "No space left on device" in str(got.value)
    # the file it could not write: the write's files are written in no fixed order
    named = ("dm/metadata.json", "dm/version_history.json", ".datom/manifest.json")
    assert any(f in str(got.value) for f in named) and "run any datom command" in str(got.value)
    want = dc.hash_table(frame(seed=2)).data_sha
    other = dc.clone(conn.repo.remote_url, tmp_path / "other", store=conn.store)
    assert other.tables()[0].current_data_sha == want  # recorded in the remote
    assert conn.store.exists(L.store_parquet("dm", want))  # and its parquet kept
    monkeypatch.undo()  # room again: the next operation finishes the clone's update
    assert conn.write("dm", frame(seed=2)).change == "none"
    assert conn.repo.recover() is False
    head_bytes = conn.repo.read(L.git_metadata("dm"))
    assert (conn.repo.path / L.git_metadata("dm")).read_bytes() == head_bytes
    assert conn.validate(fix=True).ok and conn.validate().ok
    assert conn.read("dm").equals(frame(seed=2))


def test_an_error_after_the_push_never_deletes_the_recorded_versions_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails once the remote holds the commit (here: the clone cannot follow it,
    and cannot reach the remote to judge either), the write's upload is the recorded
    version's parquet: it is not undone."""
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))

    def unreachable(*args: Any, **kwargs: Any) -> None:
        raise GitError("the remote is out of reach")

    monkeypatch.setattr(RepoCore, "_follow", unreachable)
    monkeypatch.setattr(type(conn.repo), "fetch_and_reset", unreachable)
    with pytest.raises(GitError):
        conn.write("dm", frame(seed=2))
    want = dc.hash_table(frame(seed=2)).data_sha
    monkeypatch.undo()
    assert conn.store.exists(L.store_parquet("dm", want))
    conn.pull()
    assert conn.validate(fix=True).ok and conn.validate().ok  # the store's copy catches up
    assert conn.tables()[0].current_data_sha == want
    assert conn.read("dm").equals(frame(seed=2))


def test_a_store_copy_that_cannot_be_written_raises_noting_the_version_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))

    def full(self: Any) -> None:
        raise StoreError("cannot write dm/.metadata/metadata.json: No space left on device")

    monkeypatch.setattr(_mirror.PushedMirror, "finish", full)
    with pytest.raises(StoreError) as got:
        conn.write("dm", frame(seed=2))
    assert any("is recorded (commit" in note and "validate(fix=True)" in note
               for note in got.value.__notes__)  # fmt: skip
    monkeypatch.undo()
    want = dc.hash_table(frame(seed=2)).data_sha
    assert conn.store.exists(L.store_parquet("dm", want))
    assert conn.validate(fix=True).ok and conn.validate().ok
    assert conn.read("dm").equals(frame(seed=2))
