"""Reading sets from the store alone: no clone, no remote, no token."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from datom_core._errors import ArtifactKindError
from datom_core._sets import MalformedSetError, MissingDocumentShaError, UnresolvableMemberError
from datom_core._sets._read import declare_member, read_set, set_names
from datom_core._sets._write import write_set
from tests.core.test_sets_support import frame, member_of, new_product, opener


@pytest.fixture
def written(tmp_path: Path) -> tuple[dc.Connection, list[str]]:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("adsl", frame(seed=1), parents=["dm"])
    a = write_set(conn, [member_of(conn, "dm", type="input")], tags={"cut": "month 3"})
    b = write_set(
        conn,
        [member_of(conn, "dm", type="input"), member_of(conn, "adsl", type="output")],
        tags={"cut": "month 4"},
    )
    return conn, [a.version, b.version]


def test_a_store_only_reader_reads_a_set_and_fetches_a_member(
    written: tuple[dc.Connection, list[str]], tmp_path: Path
) -> None:
    conn, (a, b) = written
    expected = conn.read("adsl")
    shutil.rmtree(conn.path)  # no clone ...
    shutil.rmtree(tmp_path / "repo.remote.git")  # ... and no remote
    store = dc.LocalStore(tmp_path / "store")
    assert set_names(store) == ["adam"]
    current = read_set(store, "STUDY_001", "adam", opener=opener)
    assert (current.version, current.project) == (b, "STUDY_001")
    assert dict(current.tags) == {"cut": ("month 4",)}
    assert [m.name for m in current.members] == ["adsl", "dm"]
    adsl = current.member("adsl")
    assert (adsl.kind, adsl.project, dict(adsl.tags)) == (
        "table",
        "STUDY_001",
        {"type": ("output",)},
    )
    pd.testing.assert_frame_equal(adsl.fetch(), expected)
    assert adsl.fetch(as_="arrow").num_rows == len(expected)
    old = read_set(store, "STUDY_001", "adam", a[:7], opener=opener)
    assert old.version == a and [m.name for m in old.members] == ["dm"]


def test_a_set_member_is_a_pointer_fetched_one_level(
    written: tuple[dc.Connection, list[str]], tmp_path: Path
) -> None:
    conn, (a, b) = written
    inner = declare_member(conn.store, "STUDY_001", "adam", a[:8], opener=opener)
    assert (inner.kind, inner.version) == ("set", a)
    fetched = inner.fetch()
    assert fetched.version == a and fetched.members[0].name == "dm"


def test_unknown_and_ambiguous_versions(written: tuple[dc.Connection, list[str]]) -> None:
    conn, _ = written
    with pytest.raises(dc.NotFoundError, match="not found"):
        read_set(conn.store, "STUDY_001", "adam", "abcdef0", opener=opener)
    with pytest.raises(dc.InvalidNameError):
        read_set(conn.store, "STUDY_001", "adam", "../etc", opener=opener)
    with pytest.raises(dc.NotFoundError, match="no set"):
        read_set(conn.store, "STUDY_001", "nothing", opener=opener)
    with pytest.raises(ArtifactKindError, match="is a table"):
        read_set(conn.store, "STUDY_001", "dm", opener=opener)


def test_tampered_payload_fails_before_parsing(written: tuple[dc.Connection, list[str]]) -> None:
    conn, (_, b) = written
    current = read_set(conn.store, "STUDY_001", "adam", opener=opener)
    key = f"adam/{current.data_sha}.json"
    conn.store.write_bytes(key, b"not json at all")
    with pytest.raises(dc.IntegrityError) as info:
        read_set(conn.store, "STUDY_001", "adam", opener=opener)
    assert not isinstance(info.value, MalformedSetError)  # refused on the hash, not the parse
    assert info.value.key == key and info.value.expected == current.document_sha


def test_missing_document_sha_is_an_error(written: tuple[dc.Connection, list[str]]) -> None:
    conn, (a, _) = written
    key = "adam/.metadata/metadata.json"
    meta = json.loads(conn.store.read_bytes(key))
    del meta["document_sha"]
    conn.store.write_bytes(key, json.dumps(meta).encode())
    with pytest.raises(MissingDocumentShaError):
        read_set(conn.store, "STUDY_001", "adam", opener=opener)
    hkey = "adam/.metadata/version_history.json"
    history = json.loads(conn.store.read_bytes(hkey))
    history[-1].pop("document_sha")
    conn.store.write_bytes(hkey, json.dumps(history).encode())
    with pytest.raises(MissingDocumentShaError):
        read_set(conn.store, "STUDY_001", "adam", a, opener=opener)


def test_a_malformed_member_id_is_refused(written: tuple[dc.Connection, list[str]]) -> None:
    conn, _ = written
    current = read_set(conn.store, "STUDY_001", "adam", opener=opener)
    payload = {"members": [{"id": {"kind": "table", "name": "dm", "project": "", "version": "x"}}]}
    raw = json.dumps(payload).encode()
    key = f"adam/{current.data_sha}.json"
    conn.store.write_bytes(key, raw)
    meta_key = "adam/.metadata/metadata.json"
    meta = json.loads(conn.store.read_bytes(meta_key))
    meta["document_sha"] = hashlib.sha256(raw).hexdigest()
    conn.store.write_bytes(meta_key, json.dumps(meta).encode())
    with pytest.raises(MalformedSetError, match="id.project"):
        read_set(conn.store, "STUDY_001", "adam", opener=opener)


def test_declaring_members(written: tuple[dc.Connection, list[str]]) -> None:
    conn, _ = written
    current = conn.history("dm")[0].version
    assert member_of(conn, "dm").version == current
    assert member_of(conn, "dm", current[:6]).version == current
    assert member_of(conn, "dm").to_json() == {
        "id": {"kind": "table", "name": "dm", "project": "STUDY_001", "version": current}
    }
    with pytest.raises(UnresolvableMemberError):
        member_of(conn, "dm", "0" * 64)
    with pytest.raises(UnresolvableMemberError):
        member_of(conn, "dm", "ffffff")
    with pytest.raises(UnresolvableMemberError):
        member_of(conn, "nothing")
    with pytest.raises(dc.InvalidNameError):
        member_of(conn, "../x")


def _plant(conn: dc.Connection, raw: bytes) -> None:
    """Store ``raw`` as the current payload with a matching document_sha (a hostile edit)."""
    meta_key = "adam/.metadata/metadata.json"
    meta = json.loads(conn.store.read_bytes(meta_key))
    conn.store.write_bytes(f"adam/{meta['data_sha']}.json", raw)
    meta["document_sha"] = hashlib.sha256(raw).hexdigest()
    conn.store.write_bytes(meta_key, json.dumps(meta).encode())


@pytest.mark.parametrize(
    "raw, match",
    [
        (b'{"members": [], "members": []}', "repeats the key"),
        (b'{"members": {"id": 1}}', "not a list"),
        (b'{"members": [{"id": {"kind": "table", "name": "dm", "project": "P", '
         b'"version": "abcdef"}, "tags": {"n": 5}}]}', "text"),
        (b'{"members": [{"id": ["x"]}]}', "no id map"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)  # fmt: skip
def test_hostile_payloads_are_refused_by_name(
    written: tuple[dc.Connection, list[str]], raw: bytes, match: str
) -> None:
    conn, _ = written
    _plant(conn, raw)
    with pytest.raises(MalformedSetError, match=match):
        read_set(conn.store, "STUDY_001", "adam", opener=opener)


def test_an_ambiguous_prefix_names_the_candidates(
    written: tuple[dc.Connection, list[str]],
) -> None:
    conn, (a, _) = written
    key = "adam/.metadata/version_history.json"
    history = json.loads(conn.store.read_bytes(key))
    twin = {**history[-1], "version": a[:10] + "0" * 54}
    conn.store.write_bytes(key, json.dumps([*history, twin]).encode())
    with pytest.raises(dc.AmbiguousVersionError) as info:
        read_set(conn.store, "STUDY_001", "adam", a[:8], opener=opener)
    assert set(info.value.candidates) == {a, twin["version"]}
