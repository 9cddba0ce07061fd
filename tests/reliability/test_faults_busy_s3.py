"""An S3 endpoint that says "too many requests" (HTTP 429, what a gateway or an
S3-compatible store that limits its rate answers; botocore's standard mode retries only
S3's own 503 SlowDown): the request is sent again when it says; past its sends the error
names the throttling, not credentials, and the write leaves nothing behind (fault proxy
in front of moto S3, tests/faultproxy.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._store import _s3session
from tests.core.projects import frame
from tests.faultproxy import FaultProxy
from tests.reliability.test_faults_s3 import PARQUET, SNAPSHOT, _keys, _project


def test_a_request_answered_429_is_sent_again_after_its_retry_after(
    tmp_path: Path, s3_bucket: str, s3_proxy: FaultProxy
) -> None:
    conn = _project(tmp_path, s3_bucket, s3_proxy)
    conn.write("dm", frame())
    rule = s3_proxy.inject("status", method="PUT", path=PARQUET, status=429, times=2)
    rule.retry_after = "1"
    started = time.monotonic()
    result = conn.write("dm", frame(seed=2))
    assert rule.fired == 2 and time.monotonic() - started >= 2.0  # its word was kept
    assert result.change == "full"
    assert conn.read("dm").equals(frame(seed=2)) and conn.validate().ok


@pytest.mark.parametrize("path", [PARQUET, SNAPSHOT])
def test_an_endpoint_still_answering_429_is_named_as_throttling_and_nothing_is_left(
    tmp_path: Path,
    s3_bucket: str,
    s3_proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    conn = _project(tmp_path, s3_bucket, s3_proxy)
    conn.write("dm", frame())
    monkeypatch.setattr(_s3session, "LATER_SENDS", 3)
    before, head = _keys(conn), conn.repo.head()
    rule = s3_proxy.inject("status", method="PUT", path=path, status=429, times=10**6)
    rule.retry_after = "0"
    with pytest.raises(dc.StoreError, match=r"throttling requests \(HTTP 429") as refused:
        conn.write("dm", frame(seed=2))
    assert "not a credentials problem" in str(refused.value)
    assert rule.fired >= 3
    s3_proxy.clear()
    assert _keys(conn) == before and conn.repo.head() == head
    assert conn.write("dm", frame(seed=2)).change == "full"
