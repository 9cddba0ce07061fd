"""A cut's members still resolve and verify: bytes, and content on request."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc
from datom_core._sets import verify_set, write_set
from tests.core.test_sets_support import frame, member_of, new_product, read


@pytest.fixture
def cut(tmp_path: Path) -> tuple[dc.Connection, dc.Connection]:
    source = dc.init_repo(tmp_path / "sdtm", "SDTM_001", dc.LocalStore(tmp_path / "sdtm-store"))
    source.write("ex", frame(seed=4))
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("adsl", frame(seed=1), parents=["dm"])
    write_set(conn, [member_of(conn, "dm"), member_of(conn, "adsl"), member_of(source, "ex")])
    return conn, source


def _parquet_key(conn: dc.Connection, table: str) -> str:
    return f"{table}/{conn.metadata(table)['data_sha']}.parquet"


def test_a_healthy_cut_verifies(cut: tuple[dc.Connection, dc.Connection]) -> None:
    conn, source = cut
    check = verify_set(read(conn), {"SDTM_001": source.store}, content=True)
    assert check.ok and [m.status for m in check.members] == ["ok", "ok", "ok"]
    partial = verify_set(read(conn))
    assert {m.member.name: m.status for m in partial.members} == {
        "adsl": "ok", "dm": "ok", "ex": "unchecked",
    }  # fmt: skip
    assert not partial.ok and not partial.failed


def test_a_missing_or_altered_member_fails(cut: tuple[dc.Connection, dc.Connection]) -> None:
    conn, source = cut
    conn.store.delete(_parquet_key(conn, "dm"))
    key = _parquet_key(source, "ex")
    table = pq.read_table(source.store.open_read(key))
    other = pa.table({c: table[c] for c in table.column_names}, metadata={b"x": b"y"})
    sink = pa.BufferOutputStream()
    pq.write_table(other, sink)
    source.store.write_bytes(key, sink.getvalue().to_pybytes())
    check = verify_set(read(conn), {"SDTM_001": source.store})
    assert {m.member.name: m.status for m in check.failed} == {"dm": "failed", "ex": "failed"}
    assert "missing" in next(m.problem for m in check.failed if m.member.name == "dm")


def test_a_product_clone_verifies_other_projects_members_where_it_recorded_them(
    cut: tuple[dc.Connection, dc.Connection],
) -> None:
    conn, _ = cut
    check = dc.connect(conn.path).verify_set(content=True)
    assert [m.status for m in check.members] == ["ok", "ok", "ok"]
