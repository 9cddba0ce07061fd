"""``clone`` gets the store ready while the metadata downloads (``Store.prepare``): a fresh
worker's first write then finds the store's client built and connected."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._errors import DatomError
from tests.core.projects import frame
from tests.faultproxy import FaultProxy


def test_a_clone_reaches_its_s3_store_before_the_first_write(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_proxy: FaultProxy
) -> None:
    origin = dc.init_repo(
        tmp_path / "origin", "PREP", dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    )
    origin.write("t", frame(seed=1))
    s3_proxy.seen.clear()
    fresh = dc.clone(
        origin.repo.remote_url,
        tmp_path / "worker",
        dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_proxy.url),
    )
    assert s3_proxy.seen, "the store was not reached while the clone ran"
    assert fresh.write("t", frame(seed=2)).change == "full"


class _Recording(dc.LocalStore):
    """A local store noting which thread probed it, and whether the probe had ended by
    the time ``clone`` returned."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.probes: list[threading.Thread] = []
        self.done = threading.Event()

    def check_access(self) -> None:
        self.probes.append(threading.current_thread())
        super().check_access()
        self.done.set()


def test_the_store_is_prepared_beside_the_clone_and_ready_when_it_returns(tmp_path: Path) -> None:
    origin = dc.init_repo(tmp_path / "origin", "PREP", dc.LocalStore(tmp_path / "store"))
    origin.write("t", frame(seed=1))
    store = _Recording(tmp_path / "store")
    dc.clone(origin.repo.remote_url, tmp_path / "worker", store)
    assert len(store.probes) == 1 and store.probes[0] is not threading.current_thread()
    assert store.done.is_set()


class _Unreachable(dc.LocalStore):
    def check_access(self) -> None:
        raise RuntimeError("the probe failed")


def test_a_store_that_fails_its_probe_does_not_fail_the_clone(tmp_path: Path) -> None:
    origin = dc.init_repo(tmp_path / "origin", "PREP", dc.LocalStore(tmp_path / "store"))
    origin.write("t", frame(seed=1))
    fresh = dc.clone(origin.repo.remote_url, tmp_path / "worker", _Unreachable(tmp_path / "store"))
    assert fresh.read("t").shape[0] > 0


def test_a_failed_clone_still_waits_for_the_probe(tmp_path: Path) -> None:
    store = _Recording(tmp_path / "store")
    with pytest.raises(DatomError):
        dc.clone(tmp_path / "no-such-remote.git", tmp_path / "worker", store)
    assert store.done.is_set()
