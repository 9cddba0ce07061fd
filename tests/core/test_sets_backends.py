"""A set written and read back on every store backend (directory, moto S3, fsspec memory)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd

import datom_core as dc
from datom_core._sets import get_set, write_set
from tests.core.test_sets_support import frame, member_of, new_product, opener


def test_write_then_read_from_a_fresh_store_handle(store: dc.Store, tmp_path: Path) -> None:
    conn = new_product(tmp_path, store=store)
    conn.write("dm", frame())
    r = write_set(conn, [member_of(conn, "dm", type="input")], tags={"cut": "lock"})
    fresh = pickle.loads(pickle.dumps(store))  # a reader elsewhere: same address, no state
    x = get_set(fresh, "STUDY_001", opener=opener)
    assert (x.version, x.document_sha) == (r.version, r.document_sha)
    assert (
        fresh.read_bytes(f"adam/{r.data_sha}.json")
        == (conn.path / "adam" / "set.json").read_bytes()
    )
    pd.testing.assert_frame_equal(x.member("dm").fetch(), conn.read("dm"))
