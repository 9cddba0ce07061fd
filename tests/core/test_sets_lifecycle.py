"""Writing sets in a real product repo (git clone + bare remote + local store): the
lifecycle, every refusal leaving git and the store unchanged, and the documents' shape."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import datom_core as dc
from datom_core._sets import (
    ArtifactKindError,
    ConflictingMemberError,
    EmptySetError,
    InconsistentParentsError,
    InvalidLabelError,
    NotProductRepoError,
    SelfReferenceError,
    SetNameMismatchError,
    UnresolvableMemberError,
    current_versions,
)
from datom_core._sets._edit import add_members, remove_members, update_members
from datom_core._sets._records import diff_sets
from datom_core._sets._write import write_set
from tests.core.test_sets_support import fingerprint, frame, member_of, new_product, read


@pytest.fixture
def study(tmp_path: Path) -> dc.Connection:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("ae", frame(seed=7))
    conn.write("adsl", frame(seed=1), parents=["dm"])
    return conn


def members(conn: dc.Connection) -> list[Any]:
    return [
        member_of(conn, "dm", type="input"),
        member_of(conn, "adsl", type="output", domain=["safety", "efficacy"]),
    ]


def store_json(conn: dc.Connection, key: str) -> Any:
    return json.loads(conn.store.read_bytes(key))


def test_write_records_r_shaped_documents(study: dc.Connection) -> None:
    r = write_set(study, members(study), tags={"description": "DB lock"}, message="Lock month 3")
    assert (r.change, r.member_count, r.uploaded) == ("full", 2, True)
    git_payload = (study.path / "adam" / "set.json").read_bytes()
    assert study.store.read_bytes(f"adam/{r.data_sha}.json") == git_payload
    assert hashlib.sha256(git_payload).hexdigest() == r.document_sha
    meta = json.loads((study.path / "adam" / "metadata.json").read_bytes())
    assert list(meta) == [
        "schema_version", "kind", "data_sha", "hash_algo", "document_sha",
        "created_at", "datom_version", "project",
    ]  # fmt: skip
    assert (meta["schema_version"], meta["kind"], meta["hash_algo"]) == (2, "set", "datom-sv1")
    identity = f'{{"data_sha":"{r.data_sha}","hash_algo":"datom-sv1","kind":"set"}}'
    assert r.version == hashlib.sha256(identity.encode()).hexdigest()
    assert dc.hash_table is not None and meta["project"] == "STUDY_001"
    history = json.loads((study.path / "adam" / "version_history.json").read_bytes())
    assert list(history[0]) == [
        "version", "data_sha", "timestamp", "author", "commit_message", "document_sha",
    ]  # fmt: skip
    assert history[0]["commit_message"] == "Lock month 3" and set(history[0]["author"]) == {
        "name",
        "email",
    }
    stored = store_json(study, "adam/.metadata/version_history.json")
    assert stored[0]["commit_sha"] == r.commit == study.repo.head()
    assert "commit_sha" not in history[0]
    assert store_json(study, f"adam/.metadata/{r.version}.json") == meta
    entry = store_json(study, ".metadata/manifest.json")["artifacts"]["adam"]
    assert list(entry) == [
        "kind", "current_version", "current_data_sha", "last_updated", "member_count",
        "version_count",
    ]  # fmt: skip
    assert (entry["current_version"], entry["member_count"], entry["version_count"]) == (
        r.version,
        2,
        1,
    )
    assert (
        study.store.read_bytes(".metadata/manifest.json")
        == (study.path / ".datom" / "manifest.json").read_bytes()
    )


def test_identical_rewrite_is_none(study: dc.Connection) -> None:
    first = write_set(study, members(study), tags={"d": ["b", "a"]})
    before = fingerprint(study)
    shuffled = [*reversed(members(study)), members(study)[0]]
    again = write_set(study, shuffled, tags={"d": ["a", "b", "a"]})
    assert (again.change, again.version, again.commit) == ("none", first.version, None)
    assert fingerprint(study) == before


def test_label_edit_is_a_new_version(study: dc.Connection) -> None:
    a = write_set(study, members(study), tags={"description": "draft"})
    b = write_set(study, members(study), tags={"description": "final"})
    assert b.change == "full" and b.version != a.version and b.data_sha != a.data_sha
    history = store_json(study, "adam/.metadata/version_history.json")
    assert [h["version"] for h in history] == [b.version, a.version]
    assert [h["commit_sha"] for h in history] == [b.commit, a.commit]
    diff = diff_sets(read(study, version=a.version[:10]), read(study))
    assert diff.changed and not (diff.added or diff.removed or diff.moved)
    assert dict(diff.tags_after) == {"description": ("final",)}
    as_json = json.loads(json.dumps(diff.to_json()))
    assert (as_json["before"], as_json["after"]) == (a.version, b.version)
    assert as_json["tags_after"] == {"description": ["final"]}
    listing = json.loads(json.dumps(read(study).to_json()))
    assert listing["version"] == b.version and len(listing["members"]) == 2


def test_member_tag_edit_is_a_new_version_and_a_retag(study: dc.Connection) -> None:
    a = write_set(study, members(study))
    edited = [members(study)[0].with_tags({"type": "baseline"}), members(study)[1]]
    b = write_set(study, edited)
    assert b.version != a.version
    diff = diff_sets(read(study, version=a.version), read(study, version=b.version))
    assert [x.name for x, _ in diff.retagged] == ["dm"]


def test_revert_reuses_the_stored_payload(study: dc.Connection) -> None:
    a = write_set(study, members(study), tags={"description": "A"})
    payload_a = study.store.read_bytes(f"adam/{a.data_sha}.json")
    write_set(study, members(study), tags={"description": "B"})
    back = write_set(study, members(study), tags={"description": "A"})
    assert (back.change, back.version, back.uploaded) == ("full", a.version, False)
    assert back.document_sha == a.document_sha
    assert study.store.read_bytes(f"adam/{a.data_sha}.json") == payload_a
    assert (study.path / "adam" / "set.json").read_bytes() == payload_a
    history = store_json(study, "adam/.metadata/version_history.json")
    assert len(history) == 2 and history[-1]["commit_sha"] == a.commit
    assert read(study).version == a.version


def test_repointing_reports_what_moved(study: dc.Connection) -> None:
    write_set(study, members(study))
    old_dm = read(study).member("dm").version
    study.write("dm", frame(n=9))
    study.write("adsl", frame(seed=2), parents=["dm"])
    current = current_versions(study.store)
    assert current == {t.name: t.current_version for t in study.tables()}
    edit = update_members(read(study), current, project="STUDY_001")
    assert {(m.name, m.before, m.after) for m in edit.moved} == {
        ("dm", old_dm, current["dm"]),
        ("adsl", read(study).member("adsl").version, current["adsl"]),
    }
    r = write_set(study, edit.members, message=edit.message("adam"))
    assert r.change == "full" and read(study).member("dm").version == current["dm"]
    assert (
        "move dm" in store_json(study, "adam/.metadata/version_history.json")[0]["commit_message"]
    )


def test_add_and_remove_members(study: dc.Connection) -> None:
    write_set(study, members(study))
    added = add_members(read(study), [member_of(study, "ae", type="input")])
    assert [m.name for m in added.added] == ["ae"]
    with pytest.raises(ConflictingMemberError):
        add_members(added.members, [member_of(study, "ae", type="other")])
    write_set(study, added.members)
    assert sorted(m.name for m in read(study).members) == ["adsl", "ae", "dm"]
    dropped = remove_members(read(study), "ae")
    assert [m.name for m in dropped.removed] == ["ae"]
    with pytest.raises(dc.NotFoundError):
        remove_members(read(study), "nope")


def test_the_same_table_at_two_versions(study: dc.Connection) -> None:
    baseline = member_of(study, "ae", tag="baseline")
    study.write("ae", frame(seed=8))
    r = write_set(study, [baseline, member_of(study, "ae", tag="live")])
    assert r.member_count == 2


# -- refusals ------------------------------------------------------------------------------

BAD_VERSION = "0" * 64


def _bad_cases(conn: dc.Connection) -> dict[str, tuple[Any, dict[str, Any], type[Exception]]]:
    good = members(conn)
    dm = good[0].to_json()
    return {
        "empty": ([], {}, EmptySetError),
        "conflicting duplicate": (
            [good[0], good[0].with_tags({"type": "other"})],
            {},
            ConflictingMemberError,
        ),
        "self reference": (
            [*good, {"id": {**dm["id"], "name": "adam", "kind": "set"}}],
            {},
            SelfReferenceError,
        ),
        "bad label": (good, {"tags": {"n": 500}}, InvalidLabelError),
        "blank label": (good, {"tags": {"n": ""}}, InvalidLabelError),
        "unresolvable member": (
            [*good, {"id": {**dm["id"], "version": BAD_VERSION}}],
            {},
            UnresolvableMemberError,
        ),
        "wrong name": (good, {"name": "other"}, SetNameMismatchError),
    }


@pytest.mark.parametrize(
    "case",
    ["empty", "conflicting duplicate", "self reference", "bad label", "blank label",
     "unresolvable member", "wrong name"],
)  # fmt: skip
def test_refusals_change_nothing(study: dc.Connection, case: str) -> None:
    write_set(study, members(study))
    bad, kwargs, error = _bad_cases(study)[case]
    before = fingerprint(study)
    with pytest.raises(error) as info:
        write_set(study, bad, **kwargs)
    assert isinstance(info.value, dc.DatomError)
    assert fingerprint(study) == before


def test_first_write_refused_leaves_nothing(study: dc.Connection) -> None:
    before = fingerprint(study)
    with pytest.raises(EmptySetError):
        write_set(study, [])
    assert fingerprint(study) == before and not (study.path / "adam").exists()


def test_inconsistent_parents_are_refused(study: dc.Connection) -> None:
    stale_input = member_of(study, "dm")
    study.write("dm", frame(n=8))
    study.write("adsl", frame(seed=3), parents=["dm"])  # built from the new dm
    before = fingerprint(study)
    with pytest.raises(InconsistentParentsError, match="adsl was built from dm"):
        write_set(study, [stale_input, member_of(study, "adsl")])
    assert fingerprint(study) == before
    # Pinning the input the output was built from is fine, beside the old one too.
    r = write_set(study, [stale_input, member_of(study, "dm"), member_of(study, "adsl")])
    assert r.member_count == 3


@pytest.mark.parametrize("mode", [None, "developer"])
def test_not_product_mode_is_refused(tmp_path: Path, mode: str | None) -> None:
    conn = new_product(tmp_path, mode=mode)
    conn.write("dm", frame())
    before = fingerprint(conn)
    with pytest.raises(NotProductRepoError, match="product repo"):
        write_set(conn, [member_of(conn, "dm")])
    assert fingerprint(conn) == before


def test_a_set_cannot_take_a_tables_name(tmp_path: Path) -> None:
    conn = new_product(tmp_path, set_name="dm")
    conn.write("dm", frame())
    conn.write("ae", frame(seed=2))
    before = fingerprint(conn)
    with pytest.raises(ArtifactKindError, match="already exists in this project as a table"):
        write_set(conn, [member_of(conn, "ae")])
    assert fingerprint(conn) == before


def test_a_reader_cannot_write_a_set(study: dc.Connection) -> None:
    reader = dc.connect(store=study.store, project_name="STUDY_001")
    with pytest.raises(dc.ReadOnlyError):
        write_set(reader, members(study))


def test_the_write_door_refuses_a_newer_manifest(study: dc.Connection) -> None:
    manifest = json.loads((study.path / ".datom" / "manifest.json").read_bytes())
    manifest["schema_version"] = 3
    study.repo.commit({".datom/manifest.json": json.dumps(manifest).encode()}, "newer")
    study.repo.push()
    before = fingerprint(study)
    with pytest.raises(dc.DatomError, match="upgrade datom"):
        write_set(study, members(study))
    assert fingerprint(study) == before


def test_a_set_read_back_is_written_back_with_its_tags(study: dc.Connection) -> None:
    first = write_set(study, members(study), tags={"description": "kept"})
    x = read(study)
    assert write_set(study, x).change == "none"
    edited = [*x.members, member_of(study, "ae")]
    r = write_set(study, edited, tags=x.tag_json())
    assert r.version != first.version and dict(read(study).tags) == {"description": ("kept",)}
    before = fingerprint(study)
    with pytest.raises(SetNameMismatchError):
        write_set(study, x, name="other")
    with pytest.raises(SetNameMismatchError, match="belongs to project"):
        write_set(study, dataclasses.replace(x, project="ELSEWHERE"))
    assert fingerprint(study) == before


def test_a_connection_for_another_project_is_refused(study: dc.Connection) -> None:
    write_set(study, members(study))
    before = fingerprint(study)
    wrong = dc.Connection("OTHER_STUDY", study.store, study.repo)
    with pytest.raises(SetNameMismatchError, match="declares project"):
        write_set(wrong, members(study))
    assert fingerprint(study) == before


def test_the_first_set_write_into_a_format1_manifest_converts_it_and_says_so(
    study: dc.Connection,
) -> None:
    doc = json.loads((study.path / ".datom" / "manifest.json").read_bytes())
    # The previous release's shape: "tables", no kind, no schema_version.
    entries = doc.get("tables") or doc["artifacts"]
    v1 = {
        "project_name": doc["project_name"],
        "updated_at": doc["updated_at"],
        "tables": {n: {k: v for k, v in e.items() if k != "kind"} for n, e in entries.items()},
        "summary": {k: v for k, v in doc["summary"].items() if k != "total_sets"},
    }
    study.repo.commit({".datom/manifest.json": json.dumps(v1, indent=2).encode()}, "format 1")
    study.repo.push()
    with pytest.warns(UserWarning, match="moved from v1 to v2"):
        write_set(study, members(study))
    v2 = json.loads((study.path / ".datom" / "manifest.json").read_bytes())
    assert "tables" not in v2 and v2["schema_version"] == 2
    assert {n: e["kind"] for n, e in v2["artifacts"].items()} == {
        "dm": "table", "ae": "table", "adsl": "table", "adam": "set",
    }  # fmt: skip
    assert v2["summary"] == {
        "total_tables": 3,
        "total_size_bytes": sum(v1["tables"][t]["size_bytes"] for t in v1["tables"]),
        "total_versions": 3,
        "total_sets": 1,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_set(study, members(study), tags={"again": "no warning"})
