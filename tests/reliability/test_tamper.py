"""Tamper evidence for store-only readers, and repair from git.

The attack: swap a version's parquet for another valid parquet and edit ``parquet_sha``
in the snapshot and in ``metadata.json`` to match (or delete it). ``parquet_sha`` is not
part of the version id, so the snapshot still certifies itself and a bytes-only read is
fooled; ``read(verify="content")`` re-hashes the decoded table against ``data_sha``, which
the version id covers, so it is not. A developer's ``validate`` compares every store
snapshot with what git recorded for that version, reports the forgery, and
``validate(fix=True)`` restores the recorded documents.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datom_core as dc

GENUINE = pd.DataFrame({"USUBJID": ["S-001", "S-002", "S-003"], "AGE": [34, 51, 47]})
FORGED = pd.DataFrame({"USUBJID": ["S-001", "S-002", "S-003"], "AGE": [34, 15, 47]})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _forge(store: dc.Store, table: str, version: str, data_sha: str, *, drop: bool) -> None:
    """Replace the parquet of ``version`` and make its documents vouch for the new bytes."""
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(FORGED, preserve_index=False), buf)
    forged = buf.getvalue()
    store.write_bytes(f"{table}/{data_sha}.parquet", forged)
    for key in (f"{table}/.metadata/{version}.json", f"{table}/.metadata/metadata.json"):
        doc = json.loads(store.read_bytes(key))
        if drop:
            doc.pop("parquet_sha", None)
        else:
            doc["parquet_sha"] = _sha(forged)
        store.write_bytes(key, json.dumps(doc, indent=2).encode())
    history_key = f"{table}/.metadata/version_history.json"
    history = json.loads(store.read_bytes(history_key))
    for entry in history:
        if entry["version"] == version:
            if drop:
                entry.pop("parquet_sha", None)
            else:
                entry["parquet_sha"] = _sha(forged)
    store.write_bytes(history_key, json.dumps(history, indent=2).encode())


@pytest.fixture
def project(tmp_path: Path) -> tuple[dc.Connection, dc.WriteResult]:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    result = conn.write("dm", GENUINE, message="genuine")
    return conn, result


@pytest.mark.parametrize("drop", [False, True], ids=["edited-parquet-sha", "deleted-parquet-sha"])
def test_a_swapped_parquet_is_caught_by_a_content_read(project, drop: bool) -> None:
    conn, genuine = project
    _forge(conn.store, "dm", genuine.version, genuine.data_sha, drop=drop)
    reader = dc.connect(store=conn.store, project_name=conn.project_name)

    for who in (reader, conn):
        with pytest.raises(dc.IntegrityError) as caught:
            who.read("dm", verify="content")
        assert genuine.data_sha[:12] in str(caught.value) and "dm" in str(caught.value)
        with pytest.raises(dc.IntegrityError):
            who.read("dm", version=genuine.version[:8], verify="content")


@pytest.mark.parametrize("drop", [False, True], ids=["edited-parquet-sha", "deleted-parquet-sha"])
def test_validate_reports_and_repairs_a_forged_snapshot(project, drop: bool) -> None:
    conn, genuine = project
    _forge(conn.store, "dm", genuine.version, genuine.data_sha, drop=drop)

    report = conn.validate()
    assert not report.ok
    assert any(p.table == "dm" and genuine.version in p.key for p in report.problems), report

    conn.validate(fix=True)
    # The documents git recorded are back; the forged parquet no longer matches them and
    # the genuine bytes are gone from the store, so a read fails loudly instead of lying.
    snapshot = json.loads(conn.store.read_bytes(f"dm/.metadata/{genuine.version}.json"))
    assert snapshot["parquet_sha"] == genuine.parquet_sha
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    with pytest.raises(dc.IntegrityError):
        reader.read("dm")


def test_an_edited_snapshot_is_reported_and_restored(project) -> None:
    conn, genuine = project
    key = f"dm/.metadata/{genuine.version}.json"
    doc = json.loads(conn.store.read_bytes(key))
    doc["created_at"] = "1999-01-01T00:00:00Z"  # outside the version id: still certifies
    conn.store.write_bytes(key, json.dumps(doc).encode())

    assert any(genuine.version in p.key for p in conn.validate().problems)
    assert conn.validate(fix=True).problems
    assert conn.validate().ok
    restored = json.loads(conn.store.read_bytes(key))
    assert restored["created_at"] != "1999-01-01T00:00:00Z"


def test_a_clean_content_read_returns_the_data(project) -> None:
    conn, genuine = project
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    back = reader.read("dm", version=genuine.version, verify="content", as_="arrow")
    assert dc.hash_table(back).data_sha == genuine.data_sha


def test_the_cli_reads_with_content_verification(project, tmp_path: Path) -> None:
    conn, genuine = project
    _forge(conn.store, "dm", genuine.version, genuine.data_sha, drop=False)
    out = tmp_path / "dm.parquet"
    cmd = [str(Path(sys.executable).with_name("datom")), "--repo", str(conn.path), "read", "dm"]
    plain = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True)
    assert plain.returncode == 0  # a bytes-only read is fooled: that is why --verify exists
    refused = tmp_path / "checked.parquet"  # --out refuses to overwrite the first file
    checked = subprocess.run(
        [*cmd, "--verify", "content", "--out", str(refused)], capture_output=True, text=True
    )
    assert checked.returncode == 4, checked.stderr
    assert not refused.exists(), "nothing is written from data that failed its check"
    assert "dm" in checked.stderr and len(checked.stderr.strip().splitlines()) == 1


def _hand_made_version(store: dc.Store, genuine: dc.WriteResult, **changes: object) -> str:
    """A version as another writer would have recorded it over ``genuine``'s parquet bytes:
    the documents rebuilt by hand with ``changes``, the data left as stored."""
    doc = json.loads(store.read_bytes(f"dm/.metadata/{genuine.version}.json"))
    doc.update(changes)
    version = dc.metadata_sha(doc)
    data = store.read_bytes(f"dm/{genuine.data_sha}.parquet")
    store.write_bytes(f"dm/{doc['data_sha']}.parquet", data)
    body = json.dumps(doc, indent=2).encode()
    store.write_bytes(f"dm/.metadata/{version}.json", body)
    store.write_bytes("dm/.metadata/metadata.json", body)
    history = json.loads(store.read_bytes("dm/.metadata/version_history.json"))
    entry = {**history[0], "version": version, "data_sha": doc["data_sha"]}
    store.write_bytes("dm/.metadata/version_history.json", json.dumps([entry, *history]).encode())
    return version


# R hashes an NA that went through arithmetic with other bits than a fresh NA (FORMAT2.md
# §8): the measured pair for data.frame(a = c(1.5, NA)) and the same after `* 1`.
R_SHA_AFTER_ARITHMETIC = "263ca4c5" + "0" * 56


@pytest.mark.parametrize(
    ("written_by", "values", "says_quirk"),
    [
        ("0.2.0", [1.5, None], True),  # R, missing doubles: possibly R's quirk
        ("0.2.0", [1.5, 2.5], False),  # R, no missing double: the quirk cannot explain it
        ("py-0.3.0", [1.5, None], False),  # this package always hashes the pinned NA
    ],
    ids=["r-with-na", "r-without-na", "python-with-na"],
)
def test_a_content_mismatch_names_r_s_na_quirk_only_when_it_can_be_the_cause(
    tmp_path: Path, written_by: str, values: list, says_quirk: bool
) -> None:
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", dc.LocalStore(tmp_path / "store"))
    genuine = conn.write("dm", pd.DataFrame({"a": values}))
    version = _hand_made_version(
        conn.store, genuine, datom_version=written_by, data_sha=R_SHA_AFTER_ARITHMETIC
    )
    reader = dc.connect(store=conn.store, project_name=conn.project_name)
    reader.read("dm", version=version)  # the bytes match their parquet_sha
    with pytest.raises(dc.IntegrityError) as caught:
        reader.read("dm", version=version, verify="content")
    message = str(caught.value)
    assert R_SHA_AFTER_ARITHMETIC in message and "'dm'" in message
    if says_quirk:
        assert "R datom 0.2.0" in message and "column(s) a hold missing doubles" in message
        assert "quirk" in message and "FORMAT2.md §8" in message
        assert "swapped" not in message
    else:
        assert "quirk" not in message and "swapped or altered" in message


def test_validate_with_content_verification(project) -> None:
    conn, genuine = project
    assert conn.validate(verify_data="content").ok
    _forge(conn.store, "dm", genuine.version, genuine.data_sha, drop=False)
    report = conn.validate(verify_data="content")
    data_key = f"dm/{genuine.data_sha}.parquet"
    assert any(p.key == data_key and not p.fixable for p in report.problems), report
    with pytest.raises(dc.InvalidArgumentError):
        conn.validate(verify_data="everything")
