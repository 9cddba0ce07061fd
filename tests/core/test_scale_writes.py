"""Writes into a wide project and a deep table, through ``Connection.write``: every document
in git and in the store is what the full re-print (and the full derivation of the store's
``commit_sha``) gives, also after hand edits the splices must not build on; ``validate``
is clean, reads are right and git itself finds the repositories sound."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import datom_core as dc
from datom_core._git import MetadataRepo
from datom_core._project import _history_text, _manifest_text, _mirror
from datom_core._project import _layout as L
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._tip import Recent

WIDE = 3000
DEEP = 1000


def _data(i: int) -> pa.Table:
    return pa.table({"USUBJID": [f"S{i}-{k}" for k in range(4)], "AVAL": [i + 0.5] * 4})


def _project(tmp_path: Path) -> dc.Connection:
    return dc.init_repo(tmp_path / "repo", "SCALE", dc.LocalStore(tmp_path / "store"))


def _commit(conn: dc.Connection, files: dict[str, bytes], message: str) -> None:
    conn.repo.commit(files, message)
    conn.repo.push()


def _seed_tables(conn: dc.Connection, n: int) -> None:
    """``n`` tables with one version each, copied from one real write (its store objects
    too), in one commit."""
    conn.write("template", _data(0))
    datom = Path(conn.store.url.removeprefix("file://"))
    meta = conn.repo.read(L.git_metadata("template"))
    hist = conn.repo.read(L.git_history("template"))
    manifest = json.loads(conn.repo.read(L.MANIFEST) or b"")
    assert meta is not None and hist is not None
    files = {}
    for i in range(n):
        name = f"s{i:04d}"
        files[L.git_metadata(name)] = meta
        files[L.git_history(name)] = hist
        manifest["artifacts"][name] = manifest["artifacts"]["template"]
        shutil.copytree(datom / "template", datom / name)
    files[L.MANIFEST] = (json.dumps(manifest, indent=2) + "\n").encode()  # stale summary
    _commit(conn, files, f"Seed {n} tables")


def _full_manifest(before: bytes, after: dict[str, Any]) -> bytes:
    """What the full path prints: the tip's manifest, the written entry replaced, all
    sorted and summed again (the clock taken from the result)."""
    doc = json.loads(before)
    merged = dict(doc["artifacts"])
    merged.update(after["artifacts"])
    return dump(assemble_manifest("SCALE", merged, base=doc, updated_at=after["updated_at"]))


def _full_history(before: bytes | None, after: bytes) -> bytes:
    old = json.loads(before) if before else []
    return dump([json.loads(after)[0]] + (old if isinstance(old, list) else [old]))


def _derived_store_history(
    conn: dc.Connection, table: str, monkeypatch: pytest.MonkeyPatch
) -> bytes:
    """The store's history as the full derivation gives it (nothing kept from before)."""
    with monkeypatch.context() as m:
        m.setattr(_history_text, "_texts", Recent(48))
        git = conn.repo.read(L.git_history(table))
        assert git is not None
        return _mirror.store_history(conn.context, table, git)


def _write_and_check(
    conn: dc.Connection, table: str, i: int, monkeypatch: pytest.MonkeyPatch
) -> dc.WriteResult:
    repo = conn.repo
    manifest, history = repo.read(L.MANIFEST), repo.read(L.git_history(table))
    assert manifest is not None
    result = conn.write(table, _data(i))
    assert result.change == "full" and result.commit == repo.head()
    new_manifest, new_history = repo.read(L.MANIFEST), repo.read(L.git_history(table))
    assert new_manifest is not None and new_history is not None
    assert new_manifest == _full_manifest(manifest, json.loads(new_manifest))
    assert new_history == _full_history(history, new_history)
    store = conn.store
    assert store.read_bytes(L.STORE_MANIFEST) == new_manifest
    stored = store.read_bytes(L.store_history(table))
    assert stored == _derived_store_history(conn, table, monkeypatch)
    assert json.loads(stored)[0]["commit_sha"] == result.commit  # checked against git
    # What the next write splices onto is known (the splices are the path taken).
    assert _manifest_text._forms.get(new_manifest) is not None
    kept = _history_text._texts.get(stored)
    assert kept is not None and kept.mirrors is not None
    return result


def _git_fsck(path: Path) -> None:
    out = subprocess.run(["git", "-C", str(path), "fsck", "--strict", "--no-progress"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_a_wide_project_stays_the_full_reprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _project(tmp_path)
    _seed_tables(conn, WIDE)
    written: dict[str, tuple[str, int]] = {}
    names = ["s0001", "s1500", "s2999", "a_first", "s1500", "zz_last", "s1500x", "s0001"]
    for i, name in enumerate(names * 2, start=1):
        written[name] = (_write_and_check(conn, name, i, monkeypatch).version, i)
    manifest = json.loads(conn.repo.read(L.MANIFEST) or b"")
    assert manifest["summary"]["total_tables"] == WIDE + 1 + 3
    assert list(manifest["artifacts"]) == sorted(manifest["artifacts"])
    assert conn.validate().ok
    for name, (version, i) in written.items():
        assert conn.resolve(name) == version
        assert conn.read(name, as_="arrow").equals(_data(i))
    clone = dc.clone(conn.repo.remote_url, tmp_path / "second")
    assert {t.name: t.current_version for t in clone.tables()} == {
        t.name: t.current_version for t in conn.tables()
    }
    _git_fsck(conn.path)
    _git_fsck(MetadataRepo.embedded_remote_path(conn.path))


def _seed_versions(conn: dc.Connection, table: str, n: int) -> None:
    """``n`` synthetic versions no commit produced (as a squashed history has), one commit."""
    conn.write(table, _data(0))
    hist = json.loads(conn.repo.read(L.git_history(table)) or b"")
    fakes = [dict(hist[0], version=f"{i:064x}") for i in range(n, 0, -1)]
    _commit(conn, {L.git_history(table): dump(hist + fakes)}, f"Seed {n} versions")


def test_a_deep_table_stays_the_full_reprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _project(tmp_path)
    _seed_versions(conn, "old", DEEP)
    for i in range(1, 31):
        _write_and_check(conn, "old", i, monkeypatch)
    stored = json.loads(conn.store.read_bytes(L.store_history("old")))
    assert len(stored) == DEEP + 31 == len(conn.history("old"))
    with_commit = [e for e in stored if "commit_sha" in e]
    assert len(with_commit) == 31  # the synthetic versions have no commit to record
    for entry in with_commit:
        assert conn.repo.read_at(entry["commit_sha"], L.git_metadata("old")) is not None
    # Clean but for the synthetic versions, which have no metadata document to snapshot.
    problems = conn.validate().problems
    assert {(p.kind, p.key) for p in problems} == {
        ("missing_snapshot", L.store_snapshot("old", f"{i:064x}")) for i in range(1, DEEP + 1)
    }
    assert conn.read("old", as_="arrow").equals(_data(30))
    _git_fsck(conn.path)


def test_hand_edited_documents_are_reprinted_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _project(tmp_path)
    _seed_tables(conn, 100)
    for i in range(1, 4):
        _write_and_check(conn, "s0005", i, monkeypatch)
    repo = conn.repo
    # Someone reformats the history and the manifest (indent 4, unsorted) and commits.
    hist = json.loads(repo.read(L.git_history("s0005")) or b"")
    manifest = json.loads(repo.read(L.MANIFEST) or b"")
    manifest["artifacts"] = dict(reversed(list(manifest["artifacts"].items())))
    _commit(
        conn,
        {
            L.git_history("s0005"): json.dumps(hist, indent=4).encode(),
            L.MANIFEST: json.dumps(manifest, indent=4, ensure_ascii=True).encode(),
        },
        "Reformat by hand",
    )
    assert not _history_text.history_text(
        repo.read(L.git_history("s0005")) or b"", key="h"
    ).canonical
    for i in range(4, 7):
        _write_and_check(conn, "s0005", i, monkeypatch)
    # The store's copy edited: one commit_sha dropped, the text reformatted.
    stored = json.loads(conn.store.read_bytes(L.store_history("s0005")))
    del stored[1]["commit_sha"]
    conn.store.write_bytes(L.store_history("s0005"), json.dumps(stored).encode())
    for i in range(7, 10):
        _write_and_check(conn, "s0005", i, monkeypatch)
    # R writes a lone history entry as a bare object.
    one = json.loads(repo.read(L.git_history("s0007")) or b"")
    _commit(conn, {L.git_history("s0007"): dump(one[0])}, "R's shape")
    _write_and_check(conn, "s0007", 10, monkeypatch)
    assert conn.validate().ok
    assert len(conn.history("s0005")) == 10 and len(conn.history("s0007")) == 2


def test_the_door_still_refuses_what_a_write_did_not_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _project(tmp_path)
    _seed_tables(conn, 100)
    for i in range(1, 3):
        _write_and_check(conn, "s0005", i, monkeypatch)
    manifest = json.loads(conn.repo.read(L.MANIFEST) or b"")
    manifest["artifacts"]["s0050"]["future_field"] = 1
    _commit(conn, {L.MANIFEST: dump(manifest)}, "A newer writer")
    head = conn.repo.head()
    with pytest.raises(dc.FormatError, match="future_field"):
        conn.write("s0005", _data(3))
    assert conn.repo.head() == head
    manifest["artifacts"]["s0050"].pop("future_field")
    manifest["artifacts"]["s0060"]["kind"] = "set"
    _commit(conn, {L.MANIFEST: dump(manifest)}, "A set now")
    with pytest.raises(dc.FormatError, match="already holds a set"):
        conn.write("s0060", _data(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert conn.write("s0005", _data(5)).change == "full"


def test_a_pipeline_writing_many_deep_tables_in_turn_parses_only_what_each_write_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """120 tables of 200 versions each, written in turn twice (a pipeline's runs): after
    the first pass, a write parses and prints only its own new entry, not the table's
    history (the texts of only the last 48 were kept: every write of such a pipeline
    re-parsed and re-printed the whole history of its table)."""
    conn = _project(tmp_path)
    _seed_tables(conn, 120)
    names = [f"s{i:04d}" for i in range(120)]
    hist = json.loads(conn.repo.read(L.git_history(names[0])) or b"")
    fakes = [dict(hist[0], version=f"{i:064x}") for i in range(199, 0, -1)]
    _commit(conn, {L.git_history(n): dump(hist + fakes) for n in names}, "Squash the histories")
    for i, name in enumerate(names):  # the first pass: each table's texts met once
        conn.write(name, _data(500 + i))
    parsed: list[int] = []
    printed: list[int] = []
    real_parse, real_dump = _history_text.parse_history, _history_text.dump

    def parse(raw: Any, *, key: str) -> Any:
        entries = real_parse(raw, key=key)
        parsed.append(len(entries))
        return entries

    def dump_entries(value: Any) -> bytes:
        printed.append(len(value) if isinstance(value, list) else 1)
        return real_dump(value)

    monkeypatch.setattr(_history_text, "parse_history", parse)
    monkeypatch.setattr(_history_text, "dump", dump_entries)
    for i, name in enumerate(names):
        conn.write(name, _data(1000 + i))
    assert max(parsed, default=0) <= 2 and max(printed, default=0) <= 2, (parsed, printed)
    for name in names[::17]:
        assert len(conn.history(name)) == 202
    assert conn.read(names[-1], as_="arrow").equals(_data(1119))


def test_a_table_written_again_and_again_keeps_a_few_texts_not_its_every_history(
    tmp_path: Path,
) -> None:
    """Each write supersedes its table's previous store copy and the history two steps
    back: they are dropped, so a deep table does not fill the memory with its old texts
    (and many tables' newest texts fit in it)."""
    conn = _project(tmp_path)
    _seed_versions(conn, "old", 200)
    conn.write("old", _data(1))
    before = len(_history_text._texts.values())
    for i in range(2, 32):
        conn.write("old", _data(i))
    assert len(_history_text._texts.values()) - before <= 2
    assert len(conn.history("old")) == 1 + 200 + 31
    assert conn.read("old", as_="arrow").equals(_data(31))
