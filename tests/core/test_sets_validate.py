"""``validate`` checks a product repo's sets too: each damage of a set's store copy is
reported by kind and key, ``fix=True`` restores it from git, and a set damaged in git is
reported and left as it is (store untouched)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._sets import write_set
from tests.core.test_sets_support import frame, member_of, new_product

NAME = "adam"


@pytest.fixture
def product(tmp_path: Path) -> tuple[dc.Connection, dc.SetWriteResult]:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    first = write_set(conn, [member_of(conn, "dm", type="input")], message="first cut")
    conn.write("dm", frame(seed=3))
    second = write_set(conn, [member_of(conn, "dm", type="input")], message="second cut")
    assert first.version != second.version
    return conn, second


def _stored_copies(conn: dc.Connection, result: dc.SetWriteResult) -> dict[str, bytes]:
    keys = [
        f"{NAME}/{result.data_sha}.json",
        f"{NAME}/.metadata/{result.version}.json",
        f"{NAME}/.metadata/metadata.json",
        f"{NAME}/.metadata/version_history.json",
    ]
    return {k: conn.store.read_bytes(k) for k in keys}


def _history(conn: dc.Connection) -> list[dict[str, object]]:
    return json.loads(conn.store.read_bytes(f"{NAME}/.metadata/version_history.json"))


def test_a_clean_product_repo_with_sets_validates(product) -> None:
    conn, _ = product
    report = conn.validate()
    assert report.ok and report.problems == ()


Damage = Callable[[dc.Connection, dc.SetWriteResult], None]


def _drop_payload(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    conn.store.delete(f"{NAME}/{r.data_sha}.json")


def _edit_payload(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    conn.store.write_bytes(f"{NAME}/{r.data_sha}.json", b'{"members": []}')


def _drop_snapshot(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    conn.store.delete(f"{NAME}/.metadata/{r.version}.json")


def _edit_snapshot(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    key = f"{NAME}/.metadata/{r.version}.json"
    conn.store.write_bytes(key, conn.store.read_bytes(key).replace(b'"set"', b'"set" '))


def _stale_metadata(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    conn.store.write_bytes(f"{NAME}/.metadata/metadata.json", b"{}")


def _short_history(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    key = f"{NAME}/.metadata/version_history.json"
    conn.store.write_bytes(key, json.dumps(_history(conn)[1:]).encode())


def _broken_history(conn: dc.Connection, r: dc.SetWriteResult) -> None:
    conn.store.write_bytes(f"{NAME}/.metadata/version_history.json", b"[{not json")


DAMAGES: dict[str, tuple[Damage, str, str]] = {
    "payload deleted": (_drop_payload, "missing_payload", "{data_sha}.json"),
    "payload edited": (_edit_payload, "payload_mismatch", "{data_sha}.json"),
    "snapshot deleted": (_drop_snapshot, "missing_snapshot", ".metadata/{version}.json"),
    "snapshot edited": (_edit_snapshot, "altered_snapshot", ".metadata/{version}.json"),
    "metadata stale": (_stale_metadata, "stale_mirror", ".metadata/metadata.json"),
    "history short": (_short_history, "stale_mirror", ".metadata/version_history.json"),
    "history not JSON": (_broken_history, "stale_mirror", ".metadata/version_history.json"),
}


@pytest.mark.parametrize("case", list(DAMAGES))
def test_a_damaged_store_copy_of_a_set_is_reported_and_restored_from_git(
    product, case: str
) -> None:
    conn, result = product
    good = _stored_copies(conn, result)
    damage, kind, suffix = DAMAGES[case]
    damage(conn, result)
    key = f"{NAME}/" + suffix.format(data_sha=result.data_sha, version=result.version)
    report = conn.validate()
    assert not report.ok
    assert [(p.kind, p.table, p.key, p.fixable) for p in report.problems] == [
        (kind, NAME, key, True)
    ]
    fixed = conn.validate(fix=True)
    assert [(p.kind, p.fixed) for p in fixed.problems] == [(kind, True)] and fixed.ok
    assert conn.validate().problems == ()
    assert _stored_copies(conn, result) == good  # the commit_sha of each entry kept
    assert dc.connect(store=conn.store, project_name=conn.project_name).get_set().version == (
        result.version
    )


def test_a_set_damaged_in_git_is_reported_and_its_store_copy_left_alone(product) -> None:
    conn, result = product
    good = _stored_copies(conn, result)
    payload = conn.path / NAME / "set.json"
    damaged = payload.read_bytes().replace(b"input", b"output")
    conn.repo.commit({f"{NAME}/set.json": damaged}, "damage")  # git holds the damage
    conn.repo.push()
    for fix in (False, True):
        report = conn.validate(fix=fix)
        problems = [(p.kind, p.key, p.fixable, p.fixed) for p in report.problems]
        assert problems == [("corrupt_git_document", f"{NAME}/set.json", False, False)]
        assert not report.ok
    assert _stored_copies(conn, result) == good
