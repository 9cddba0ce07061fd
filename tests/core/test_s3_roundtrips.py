"""Requests a small write makes to S3 (moto behind a loopback proxy that logs them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._store import _s3
from tests.core.projects import frame
from tests.faultproxy import FaultProxy

PARQUET = re.compile(r"/dm/[0-9a-f]{64}\.parquet$")


def _write(tmp_path: Path, bucket: str, proxy: FaultProxy) -> tuple[dc.Connection, list[str]]:
    store = dc.S3Store(bucket, prefix="proj", endpoint_url=proxy.url)
    conn = dc.init_repo(tmp_path / "repo", "STUDY_001", store)
    conn.write("dm", frame())
    proxy.seen.clear()
    conn.write("dm", frame(seed=2))
    return conn, [f"{m} {t.split('?')[0]}" for m, t in proxy.seen]


def test_a_small_parquet_is_put_without_a_look_first(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    """The conditional PUT finds an object already there by itself: a small new parquet
    is one request (a HEAD first would be a second round trip)."""
    conn, seen = _write(tmp_path, s3_bucket, s3_proxy)
    parquet = [r for r in seen if PARQUET.search(r)]
    assert [r.split()[0] for r in parquet] == ["PUT"]
    assert conn.validate().ok


def test_a_parquet_already_there_is_kept_and_not_replaced(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    """An object no recorded version names already holds the new data's parquet (an
    interrupted write's): the conditional PUT is refused, the object verified and used."""
    conn, _ = _write(tmp_path, s3_bucket, s3_proxy)
    other = dc.init_repo(
        tmp_path / "other",
        "OTHER",
        dc.S3Store(s3_bucket, prefix="other", endpoint_url=s3_proxy.url),
    )
    other.write("dm", frame(seed=3))
    key = next(k for k in other.store.list("dm") if k.endswith(".parquet"))
    there = other.store.read_bytes(key)
    conn.store.put_if_absent(key, there)
    s3_proxy.seen.clear()
    result = conn.write("dm", frame(seed=3))
    assert result.change == "full" and not result.uploaded
    assert conn.store.read_bytes(key) == there
    parquet = [m for m, t in s3_proxy.seen if PARQUET.search(t.split("?")[0])]
    assert parquet[0] == "PUT" and parquet.count("PUT") == 1  # refused: then verified
    assert conn.validate().ok


def test_a_large_parquet_is_looked_for_first(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold the HEAD spares an upload: the look stays."""
    monkeypatch.setattr(_s3, "_LOOK_FIRST_ABOVE", 0)
    _, seen = _write(tmp_path, s3_bucket, s3_proxy)
    parquet = [r for r in seen if PARQUET.search(r)]
    assert [r.split()[0] for r in parquet] == ["HEAD", "PUT"]
