"""Sets whose members live in other projects (their own stores), and tampered snapshots."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from datom_core._sets import InconsistentParentsError, UnresolvableMemberError, write_set
from tests.core.test_sets_support import fingerprint, frame, member_of, new_product, read


@pytest.fixture
def source(tmp_path: Path) -> dc.Connection:
    conn = dc.init_repo(tmp_path / "sdtm", "SDTM_001", dc.LocalStore(tmp_path / "sdtm-store"))
    conn.write("dm", frame())
    return conn


@pytest.fixture
def product(tmp_path: Path) -> dc.Connection:
    return new_product(tmp_path / "product", project="ADAM_001")


def test_members_of_another_project_are_fetched_from_its_store(
    source: dc.Connection, product: dc.Connection
) -> None:
    product.write("adsl", frame(seed=1), parents=[source.parent("dm")])
    dm = member_of(source, "dm", type="input")
    assert dm.project == "SDTM_001"
    r = write_set(product, [dm, member_of(product, "adsl", type="output")])
    assert r.member_count == 2
    pinned = read(product).member("dm")
    assert pinned.project == "SDTM_001"
    pd.testing.assert_frame_equal(pinned.fetch(store=source.store), source.read("dm"))


def test_an_input_moved_in_its_own_project_is_caught(
    source: dc.Connection, product: dc.Connection
) -> None:
    product.write("adsl", frame(seed=1), parents=[source.parent("dm")])
    source.write("dm", frame(n=7))  # the input moved; adsl was not rebuilt
    before = fingerprint(product)
    with pytest.raises(InconsistentParentsError, match="adsl was built from dm"):
        write_set(product, [member_of(source, "dm"), member_of(product, "adsl")])
    assert fingerprint(product) == before


def test_an_unresolvable_member_of_another_project(
    source: dc.Connection, product: dc.Connection
) -> None:
    product.write("adsl", frame())
    ghost = dataclasses.replace(member_of(source, "dm"), version="0" * 64)
    before = fingerprint(product)
    with pytest.raises(UnresolvableMemberError, match="SDTM_001"):
        write_set(product, [ghost, member_of(product, "adsl")])
    assert fingerprint(product) == before


def test_a_tampered_snapshot_cannot_be_pinned(source: dc.Connection) -> None:
    version = source.history("dm")[0].version
    key = f"dm/.metadata/{version}.json"
    snap = json.loads(source.store.read_bytes(key))
    snap["nrow"] = 999
    source.store.write_bytes(key, json.dumps(snap).encode())
    with pytest.raises(dc.IntegrityError, match="does not certify itself"):
        member_of(source, "dm", version)


def test_a_set_read_back_with_foreign_members_is_rewritten(
    source: dc.Connection, product: dc.Connection
) -> None:
    product.write("adsl", frame(seed=1), parents=[source.parent("dm")])
    first = write_set(product, [member_of(source, "dm"), member_of(product, "adsl")])
    x = read(product)
    assert x.member("dm").store is None  # the set does not name SDTM_001's store
    with pytest.raises(dc.DatomError, match="pass store="):
        x.member("dm").fetch()
    again = write_set(product, x)
    assert (again.change, again.version) == ("none", first.version)
    moved = write_set(product, x, tags={"cut": "two"})
    assert moved.change == "full"
