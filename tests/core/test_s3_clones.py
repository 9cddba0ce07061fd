"""Concurrent clones writing into one S3 store (moto's server on loopback, no mocks).

Each writer is its own process with its own clone of one local bare remote; every one of
them writes into the same bucket. Nothing may be lost or recorded twice, the store must
hold exactly one object per distinct table version, and the project must validate clean.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WRITERS = 4
WRITES = 4


def _s3(bucket: str, endpoint: str) -> dc.S3Store:
    return dc.S3Store(bucket, prefix="proj", endpoint_url=endpoint)


def _writer(clone: str, bucket: str, endpoint: str, w: int) -> list[tuple[str, str]]:
    """Alternate between this writer's own table and the shared one: (table, version)."""
    conn = dc.connect(clone, store=_s3(bucket, endpoint))
    out = []
    for k in range(WRITES):
        for table, seed in ((f"own{w}", 100 * w + k), ("shared", 1000 + 100 * w + k)):
            result = conn.write(table, frame(seed=seed))
            assert result.change == "full"
            out.append((table, result.version))
    return out


def test_clones_writing_into_one_s3_store_lose_nothing(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    store = _s3(s3_bucket, s3_endpoint)
    origin = dc.init_repo(tmp_path / "origin", "STUDY_S3", store)
    clones = [tmp_path / f"c{w}" for w in range(WRITERS)]
    for c in clones:
        dc.clone(origin.repo.remote_url, c, store=store)

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=ctx) as pool:
        futures = [
            pool.submit(_writer, str(c), s3_bucket, s3_endpoint, w) for w, c in enumerate(clones)
        ]
        written = [pair for f in futures for pair in f.result()]

    origin = dc.connect(tmp_path / "origin", store=store)
    for table in {t for t, _ in written}:
        history = [h.version for h in origin.history(table)]
        assert len(history) == len(set(history)), f"{table}: a version is recorded twice"
        assert sorted(history) == sorted(v for t, v in written if t == table)
    assert len(origin.history("shared")) == WRITERS * WRITES
    report = origin.validate()
    assert report.ok, report

    # One parquet object per distinct version, nothing half-written left behind.
    data_shas = {origin.version(t, v).data_sha for t, v in written}
    parquet = [k for k in store.list("") if k.endswith(".parquet")]
    assert len(parquet) == len(data_shas)
