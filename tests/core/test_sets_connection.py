"""Sets through the connection: member(), write_set(), get_set(), the edit helpers, diff."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from tests.core.test_sets_support import frame, new_product

pytestmark = pytest.mark.filterwarnings("ignore:manifest format moved from v1 to v2")


def test_the_connection_api(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("adsl", frame(seed=1), parents=["dm"])
    first = conn.write_set(
        [conn.member("dm", tags={"type": "input"}), conn.member("adsl", tags={"type": "output"})],
        tags={"description": "month 3"},
    )
    assert (first.change, first.member_count) == ("full", 2)
    assert conn.write_set(conn.get_set()).change == "none"
    x = conn.get_set()
    assert x.version == first.version and dict(x.tags) == {"description": ("month 3",)}
    reader = dc.connect(store=conn.store, project_name="STUDY_001")
    pd.testing.assert_frame_equal(reader.get_set().member("adsl").fetch(), conn.read("adsl"))
    conn.write("dm", frame(n=8))
    conn.write("adsl", frame(seed=2), parents=["dm"])
    edit = conn.update_members(x)
    assert {m.name for m in edit.moved} == {"dm", "adsl"}
    second = conn.write_set(edit.members, tags=x.tag_json(), message=edit.message("adam"))
    diff = conn.diff_sets()
    assert (diff.before, diff.after) == (first.version, second.version)
    assert {m.name for m in diff.moved} == {"dm", "adsl"}
    assert conn.diff_sets(first.version[:8], first.version).changed is False
    dropped = conn.remove_members(conn.get_set(), "dm")
    assert [m.name for m in dropped.members] == ["adsl"]
    assert conn.add_members(dropped.members, [conn.member("dm")]).added[0].name == "dm"
    assert conn.verify_set(content=True).ok
    assert conn.verify_set(first.version[:8]).ok  # an old cut still verifies
