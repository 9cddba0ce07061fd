"""Shared fixtures: a real S3 (moto server on loopback) and one store per backend."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datom_core._store import FsspecStore, LocalStore, S3Store, Store

# Subprocesses (CLI, Dagster webserver and daemon, spawned workers) import this checkout's
# packages, whichever checkout the shared virtualenv was installed from.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p
)

# Dummy credentials for moto, and no route to anything but loopback: no shared AWS
# config/profile of the machine, no instance-metadata lookups, no proxies.
_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_AWS_ENV_TO_CLEAR = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a moto S3 server on 127.0.0.1 (free port), with dummy AWS credentials set.

    The environment is restored when the session ends.
    """
    from moto.server import ThreadedMotoServer

    no_config = tmp_path_factory.mktemp("aws") / "absent"
    with pytest.MonkeyPatch.context() as env:
        for name, value in _FAKE_AWS_ENV.items():
            env.setenv(name, value)
        env.setenv("AWS_CONFIG_FILE", str(no_config))
        env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(no_config))
        for name in _AWS_ENV_TO_CLEAR:
            env.delenv(name, raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture(scope="session")
def s3_admin(s3_endpoint: str) -> Iterator[Any]:
    """A boto3 S3 client on the moto server, for test setup (creating buckets...)."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def s3_bucket(s3_admin: Any) -> str:
    """A fresh, empty bucket on the moto server; its name."""
    name = f"datom-test-{uuid.uuid4().hex[:16]}"
    s3_admin.create_bucket(Bucket=name)
    return name


@pytest.fixture(params=["local", "s3", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store on each backend: a directory, moto S3, fsspec memory://."""
    if request.param == "local":
        yield LocalStore(tmp_path / "store", prefix="proj")
    elif request.param == "s3":
        bucket = request.getfixturevalue("s3_bucket")
        endpoint = request.getfixturevalue("s3_endpoint")
        yield S3Store(bucket, prefix="proj", endpoint_url=endpoint)
    else:
        location = f"memory://datom-test-{uuid.uuid4().hex}"
        memory_store = FsspecStore(location)
        yield memory_store
        # The memory filesystem is one process-wide dict: leave nothing behind.
        from fsspec.implementations.memory import MemoryFileSystem

        memory = MemoryFileSystem()
        if memory.exists(location):
            memory.rm(location, recursive=True)


# Smart-HTTP git server fixtures: dulwich's (tests/gitserver.py) and git's own
# http-backend (tests/gitbackend.py).
from tests.faultproxy import FaultProxy  # noqa: E402
from tests.gitbackend import any_git_http_server, git_backend_server  # noqa: E402, F401
from tests.gitserver import git_http_server  # noqa: E402, F401
from tests.s3util import iam_credentials  # noqa: E402, F401


@pytest.fixture
def accelerated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The accelerators on, whatever ``DATOM_PLAIN`` says: for tests of an accelerator
    itself (its plain path is checked by ``tests/core/test_plain_mode.py``)."""
    monkeypatch.setenv("DATOM_PLAIN", "0")


@pytest.fixture
def s3_proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    """A fault proxy (:mod:`tests.faultproxy`) in front of the moto S3 endpoint."""
    proxy = FaultProxy(s3_endpoint)
    try:
        yield proxy
    finally:
        proxy.close()
