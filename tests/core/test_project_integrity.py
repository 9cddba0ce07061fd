"""Tampered stores fail loudly, naming the key and both hashes; validate finds and fixes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._project import _upload
from tests.core.projects import fingerprint, frame, new_project


@pytest.fixture
def project(tmp_path):
    conn = new_project(tmp_path)
    v1 = conn.write("dm", frame())
    v2 = conn.write("dm", frame(seed=1))
    return conn, v1, v2


def _flip_byte(store: dc.Store, key: str, at: int = 40) -> None:
    raw = bytearray(store.read_bytes(key))
    raw[at] ^= 0xFF
    store.write_bytes(key, bytes(raw))


def test_flipped_parquet_byte_fails_before_parsing(project) -> None:
    conn, v1, _ = project
    key = L.store_parquet("dm", v1.data_sha)
    _flip_byte(conn.store, key)
    with pytest.raises(dc.IntegrityError) as info:
        conn.read("dm", v1.version)
    err = info.value
    assert err.key == key and err.expected == v1.parquet_sha and err.actual != v1.parquet_sha
    assert key in str(err) and v1.parquet_sha in str(err) and err.actual in str(err)
    report = conn.validate()
    assert not report.ok
    assert [(p.kind, p.key, p.fixable) for p in report.problems] == [
        ("parquet_mismatch", key, False)
    ]
    assert not conn.validate(fix=True).ok  # data cannot be recreated from git


def test_edited_snapshot_fails_and_is_restored_from_git(project) -> None:
    conn, v1, _ = project
    key = L.store_snapshot("dm", v1.version)
    doc = json.loads(conn.store.read_bytes(key))
    doc["nrow"] = 999
    conn.store.write_bytes(key, json.dumps(doc).encode())
    with pytest.raises(dc.IntegrityError) as info:
        conn.read("dm", v1.version)
    assert info.value.key == key and info.value.expected == v1.version
    assert info.value.actual == dc.metadata_sha(doc) and info.value.actual in str(info.value)
    report = conn.validate(fix=True)
    assert [p.kind for p in report.problems] == ["altered_snapshot"] and report.ok
    assert conn.read("dm", v1.version).equals(frame())


@pytest.mark.parametrize(
    "key",
    ["dm/.metadata/metadata.json", "dm/.metadata/version_history.json", ".metadata/manifest.json"],
)
def test_truncated_json_fails_loudly_and_is_repaired(project, key: str) -> None:
    conn, v1, v2 = project
    raw = conn.store.read_bytes(key)
    conn.store.write_bytes(key, raw[: len(raw) // 2])
    with pytest.raises(dc.IntegrityError) as info:
        if key.startswith(".metadata"):
            conn.tables()
        elif "history" in key:
            conn.read("dm", v1.version[:12])  # a prefix is resolved through the history
        else:
            conn.read("dm")
    assert info.value.key == key and key in str(info.value)
    report = conn.validate(fix=True)
    assert report.ok and any(p.key == key and p.kind == "stale_mirror" for p in report.problems)
    assert conn.validate().problems == ()
    assert conn.read("dm").equals(frame(seed=1))


def test_missing_parquet_is_reported_not_fixable(project) -> None:
    conn, v1, _ = project
    key = L.store_parquet("dm", v1.data_sha)
    conn.store.delete(key)
    with pytest.raises(dc.NotFoundError, match="missing"):
        conn.read("dm", v1.version)
    report = conn.validate(fix=True)
    assert [(p.kind, p.fixed) for p in report.problems] == [("missing_parquet", False)]


def test_data_written_again_puts_back_the_parquet_the_store_lost(project) -> None:
    """Data of an earlier version reuses that version's parquet (its bytes are pinned);
    when the store lost them and this data serialises to exactly those bytes again, the
    write puts them back instead of recording a version that names a missing object."""
    conn, v1, _ = project
    key = L.store_parquet("dm", v1.data_sha)
    conn.store.delete(key)
    again = conn.write("dm", frame(), metadata={"note": "back to the first data"})
    assert again.change == "full" and again.parquet_sha == v1.parquet_sha
    assert conn.store.sha256(key) == v1.parquet_sha
    assert conn.read("dm", v1.version).equals(frame())
    assert conn.validate().ok


def test_data_written_again_is_refused_when_its_lost_parquet_cannot_be_remade(
    project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes another serialiser wrote (another pyarrow, other settings) cannot be made
    again: the write is refused, naming the table, the key and the remedy, and nothing
    is written."""
    conn, v1, _ = project
    key = L.store_parquet("dm", v1.data_sha)
    conn.store.delete(key)
    before = fingerprint(conn)
    real = _upload.serialized

    @contextmanager
    def other_bytes(*args: Any, **kwargs: Any) -> Iterator[object]:
        with real(*args, **kwargs) as sp:
            yield replace(sp, parquet_sha="0" * 64)

    monkeypatch.setattr(_upload, "serialized", other_bytes)
    with pytest.raises(dc.IntegrityError) as info:
        conn.write("dm", frame(), metadata={"note": "back to the first data"})
    err = info.value
    assert err.key == key and err.expected == v1.parquet_sha
    assert "'dm'" in str(err) and key in str(err) and "backup" in str(err)
    assert fingerprint(conn) == before


def test_manifest_drift_is_rebuilt_from_table_documents(project) -> None:
    conn, _, v2 = project
    path = conn.path / L.MANIFEST
    doc = json.loads(path.read_text())
    doc["artifacts"]["dm"]["version_count"] = 99
    conn.repo.commit({L.MANIFEST: json.dumps(doc).encode()}, "drift")
    conn.repo.push()
    report = conn.validate(fix=True)
    assert {p.kind for p in report.problems} >= {"manifest_drift"} and report.ok
    fixed = json.loads(path.read_text())
    assert fixed["artifacts"]["dm"]["version_count"] == 2
    assert fixed["artifacts"]["dm"]["current_version"] == v2.version
    assert conn.validate().ok


def test_a_table_folder_deleted_by_hand_loses_nothing_to_a_fix(project) -> None:
    """git records the table, not the working tree: a folder someone deleted from the
    clone is neither drift nor damage, and ``validate(fix=True)`` (the remedy it names for
    problems) keeps the table in the manifest, in git and in the store."""
    conn, _, v2 = project
    conn.write("ae", frame(seed=2))
    for name in ("metadata.json", "version_history.json"):
        (conn.path / "dm" / name).unlink()
    (conn.path / "dm").rmdir()
    before = fingerprint(conn)
    assert conn.validate().ok
    assert conn.validate(fix=True).problems == ()
    assert fingerprint(conn) == before
    manifest = json.loads(conn.repo.read(L.MANIFEST) or b"{}")
    assert manifest["artifacts"]["dm"]["current_version"] == v2.version
    assert json.loads(conn.store.read_bytes(L.STORE_MANIFEST)) == manifest
