"""``DATOM_PLAIN=1``: every accelerator's plain path, and the same repositories and
documents as the accelerated paths give.

A write sequence (a project wider than the size from which root trees are patched, two
clones writing in turn, so that each reads the other's root tree, manifest and history as
edits of its own) runs three times: accelerated, plain, and switching between the two at
every write. With the clocks fixed, the three end with the same commits (so the same
trees), the same working-tree files and the same store objects, byte for byte. Under the
switch no accelerator runs at all: each is replaced by one that fails the test.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import datom_core as dc
from datom_core._git import _logview, _metadata, _repo
from datom_core._git._fast import _compact, _history, _index, _memo, _packs, _tree
from datom_core._git._fast._compact import _pack_loose
from datom_core._git._fast._packs import merge_packs
from datom_core._identity import _chr
from datom_core._plain import NAMED, PLAIN_ENV, plain
from datom_core._project import _documents, _history_text, _manifest_text
from datom_core._project._group import grouping_enabled
from tests.core.projects import fingerprint, frame
from tests.gitcli import git, needs_git

TABLES = 70  # a root tree of more than 64 entries is patched, not re-serialised
MODES = ("fast", "plain", "switching")


class _FixedDatetime(dt.datetime):
    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _FixedDatetime:
        return cls(2030, 1, 2, 3, 4, 5, tzinfo=tz)


@pytest.fixture
def fixed_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents' timestamps and commit times fixed: two runs give the same commits."""
    monkeypatch.setattr(_documents, "dt", SimpleNamespace(datetime=_FixedDatetime, UTC=dt.UTC))
    for module in (_repo, _metadata):
        monkeypatch.setattr(module, "_now", lambda: 1_900_000_000)


def _set_mode(monkeypatch: pytest.MonkeyPatch, mode: str, step: int) -> None:
    is_plain = mode == "plain" or (mode == "switching" and step % 2 == 1)
    monkeypatch.setenv(PLAIN_ENV, "1" if is_plain else "0")
    assert plain() == is_plain


def _sequence(root: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dc.Connection]:
    """The write sequence into a project at ``root``, in ``mode``; yields both clones."""
    store = dc.LocalStore(root / "store")
    _set_mode(monkeypatch, mode, 0)
    a = dc.init_repo(root / "a", "PLAIN", store)
    for i in range(TABLES):
        _set_mode(monkeypatch, mode, i)
        a.write(f"t{i:03d}", frame(seed=i))
    b = dc.clone(a.repo.remote_url, root / "b", store=store)
    for step in range(12):
        _set_mode(monkeypatch, mode, step)
        writer = (a, b)[step % 2]
        writer.write(f"t{(step * 7) % 5:03d}", frame(n=3 + step, seed=100 + step))
    _set_mode(monkeypatch, mode, 1)
    store_a = a.repo._open().object_store
    _pack_loose(store_a)  # the packer: deltas, or whole objects
    _set_mode(monkeypatch, mode, 0)
    a.write("t000", frame(seed=999))
    _set_mode(monkeypatch, mode, 1)
    _pack_loose(store_a)
    store_a._update_pack_cache()
    merge_packs(store_a, list(store_a.packs))  # copied entries, or whole objects
    _set_mode(monkeypatch, mode, 0)
    a.write("t001", frame(seed=998))
    for conn in (a, b):
        conn.repo.fetch_and_reset()
        yield conn


def _reads(conn: dc.Connection) -> dict[str, Any]:
    """What the read side answers: the log of a file, its last commit, a table's versions."""
    return {
        "log": [c.id for c in conn.repo.log("t000/metadata.json")],
        "last": conn.repo.last_commit_touching("t001/metadata.json"),
        "history": [v.version for v in conn.history("t000")],
        "read": conn.read("t000").to_dict(),
    }


@needs_git
@pytest.mark.usefixtures("fixed_clocks")
def test_fast_plain_and_switching_runs_give_the_same_repositories_and_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, list[Any]] = {}
    root = tmp_path / "project"  # one place for each run: the settings name the store
    for mode in MODES:
        out = []
        for conn in _sequence(root, mode, monkeypatch):
            _set_mode(monkeypatch, mode, 1)
            out.append((fingerprint(conn), _reads(conn)))
            git(conn.repo.path, "fsck", "--strict", "--no-dangling")
            assert git(conn.repo.path, "status", "--porcelain") == ""
        seen[mode] = out
        if mode == "fast":
            manifest = json.loads((root / "a" / ".datom" / "manifest.json").read_bytes())
            assert len(manifest["artifacts"]) == TABLES  # the sequence reached a wide root
        shutil.rmtree(root)
    assert seen["plain"] == seen["fast"]
    assert seen["switching"] == seen["fast"]


def _fails(name: str) -> Any:
    def fail(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"the accelerator {name} ran under {PLAIN_ENV}=1")

    return fail


@needs_git
def test_under_the_switch_no_accelerator_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each accelerator replaced by one that fails: a write sequence, reads, a compaction
    and a hash of string columns all take the plain paths."""
    monkeypatch.setenv(PLAIN_ENV, "1")
    for owner, name in [
        (_index.FastIndex, "update"),
        (_tree, "_PatchedTree"),
        (_tree, "_offsets_in"),
        (_tree, "_LAYOUTS"),
        (_packs, "inflate_loose"),
        (_compact, "compact"),
        (_compact, "compact_remote"),
        (_packs, "_delta"),
        (_history.PathHistory, "at"),
        (_memo, "_TREES"),
        (_memo, "_COMMITS"),
        (_memo, "_BLOBS"),
        (_logview, "first_parents"),
        (_logview, "recent_change"),
        (_manifest_text, "_form_of"),
        (_manifest_text, "_grown_form"),
        (_history_text, "_entry_text"),
        (_chr, "_compiled_values"),
    ]:
        failing = _fails(f"{getattr(owner, '__name__', owner)}.{name}")
        if name in (
            "_LAYOUTS",
            "_TREES",
            "_COMMITS",
            "_BLOBS",
        ):  # a memory: each of its methods fails
            failing = SimpleNamespace(newest=failing, get=failing, put=failing)
        monkeypatch.setattr(owner, name, failing)
    monkeypatch.setattr(_tree._MADE_FROM, "get", _fails("made_from"))
    assert not grouping_enabled()  # every write pushes alone
    for conn in _sequence(tmp_path / "p", "plain", monkeypatch):
        assert conn.validate().ok
        _reads(conn)
        git(conn.repo.path, "fsck", "--strict", "--no-dangling")
        assert not (conn.repo.controldir / "objects" / "info" / "alternates").exists()


@pytest.mark.parametrize(
    ("value", "selected"),
    [
        *((name, {name}) for name in sorted(NAMED)),
        ("walk, advert", {"walk", "advert"}),
        ("compact,group,share", {"compact", "group", "share"}),
        ("1", {*NAMED, None}),
        ("walk,nonsense", {*NAMED, None}),  # a name not known: every plain path
        ("0", set()),
        ("", set()),
    ],
)
def test_the_switch_may_name_accelerators_alone(
    monkeypatch: pytest.MonkeyPatch, value: str, selected: set[str | None]
) -> None:
    """``DATOM_PLAIN`` naming accelerators (any of :data:`NAMED`) selects those plain
    paths only; any other value but ``0`` or empty selects every one."""
    monkeypatch.setenv(PLAIN_ENV, value)
    assert {name for name in (*NAMED, None) if plain(name)} == selected
