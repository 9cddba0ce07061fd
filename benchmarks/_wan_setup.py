"""The WAN benchmarks' world: a smart-HTTP git server and moto S3 on loopback, each behind
a :class:`LatencyProxy`, with the environment a worker needs to reach them."""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for the git server
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _latency import LatencyProxy  # noqa: E402

_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_CLEAR = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
          "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")  # fmt: skip


@dataclass
class World:
    """Where a worker finds the project: the remote's and the store's proxied addresses."""

    tmp: Path
    git_proxy: LatencyProxy
    s3_proxy: LatencyProxy
    git_server: Any
    bucket: str
    prefix: str = "wan"

    def remote(self, name: str) -> str:
        return f"{self.git_proxy.url()}/{name}"

    def store(self, project: str) -> Any:
        """The S3 store of ``project`` (each project its own prefix), through the proxy."""
        import datom_core as dc

        return dc.S3Store(self.bucket, f"{self.prefix}/{project}", endpoint_url=self.s3_proxy.url())

    def spec(self, project: str) -> dict[str, Any]:
        """What a worker process of ``project`` needs (picklable)."""
        return {"bucket": self.bucket, "prefix": f"{self.prefix}/{project}", "s3": self.s3_proxy.url(),
                "git": self.git_proxy.url(), "tmp": str(self.tmp)}  # fmt: skip


def store_of(spec: dict[str, Any]) -> Any:
    import datom_core as dc

    return dc.S3Store(spec["bucket"], spec["prefix"], endpoint_url=spec["s3"])


@contextmanager
def wan_world(rtt: float, git_backend: bool = False, threaded: bool = False) -> Iterator[World]:
    """Start moto S3 and a git HTTP server, each behind a ``rtt`` latency proxy."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from tests.gitbackend import GitBackendServer
    from tests.gitserver import GitHTTPServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    for name in _CLEAR:
        os.environ.pop(name, None)
    os.environ.update(_AWS_ENV)
    with tempfile.TemporaryDirectory(prefix="datom-wan-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["AWS_CONFIG_FILE"] = os.environ["AWS_SHARED_CREDENTIALS_FILE"] = str(
            tmp / "absent"
        )
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        host, port = moto.get_host_and_port()
        (tmp / "git").mkdir()
        server_class = GitBackendServer if git_backend else GitHTTPServer
        threads = {} if git_backend else {"threaded": threaded}  # dulwich's: see tests.gitserver
        git = server_class(tmp / "git", token=secrets.token_urlsafe(24), **threads)
        git.start()
        os.environ["DATOM_GIT_TOKEN"] = git.token
        bucket = f"wan-{secrets.token_hex(6)}"
        boto3.client("s3", endpoint_url=f"http://{host}:{port}").create_bucket(Bucket=bucket)
        git_proxy = LatencyProxy(urlsplit(git.url_for("x")).port or 0, rtt).start()
        s3_proxy = LatencyProxy(port, rtt).start()
        try:
            yield World(tmp, git_proxy, s3_proxy, git, bucket)
        finally:
            git_proxy.stop()
            s3_proxy.stop()
            git.stop()
            moto.stop()
