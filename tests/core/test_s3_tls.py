"""An S3-compatible store over HTTPS whose certificate a private authority signs (an
on-premises MinIO, a corporate gateway): trusted through ``AWS_CA_BUNDLE`` as every AWS
tool is told, an untrusted certificate named as such, not as a credentials problem,
before anything is made, and the proxy variables read in either case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.tls import ConnectProxy, TlsFront

_TRUST_ENV = (
    "AWS_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
)


@pytest.fixture
def front(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TlsFront]:
    for name in _TRUST_ENV:
        monkeypatch.delenv(name, raising=False)
    tls = TlsFront(s3_endpoint.removeprefix("http://"), tmp_path)
    yield tls
    tls.close()


def test_an_untrusted_store_certificate_is_named_before_anything_is_made(
    front: TlsFront, s3_bucket: str, tmp_path: Path
) -> None:
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=front.url)
    with pytest.raises(dc.StoreError, match="TLS certificate of endpoint_url") as refused:
        dc.init_repo(tmp_path / "c", "P1", store)
    assert "AWS_CA_BUNDLE" in str(refused.value)
    assert "not a credentials problem" in str(refused.value)
    assert not (tmp_path / "c").exists() and not (tmp_path / "c.remote.git").exists()


def test_a_store_trusted_through_aws_ca_bundle_is_written_and_read(
    front: TlsFront, s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CA_BUNDLE", str(front.ca))
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=front.url)
    conn = dc.init_repo(tmp_path / "c", "P1", store)
    conn.write("dm", frame(4))
    reader = dc.connect(
        store=dc.S3Store(s3_bucket, prefix="p", endpoint_url=front.url), project_name="P1"
    )
    assert len(reader.read("dm")) == 4
    assert conn.validate().ok


@pytest.mark.parametrize(
    ("settings", "tunnelled"),
    [
        ({"HTTPS_PROXY": "proxy"}, True),
        ({"https_proxy": "proxy"}, True),
        ({"HTTPS_PROXY": "proxy", "NO_PROXY": "localhost"}, False),
    ],
    ids=["HTTPS_PROXY", "https_proxy", "NO_PROXY"],
)
def test_the_store_goes_through_the_proxy_the_environment_names(
    front: TlsFront,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: dict[str, str],
    tunnelled: bool,
) -> None:
    """What the git guide says of the store: its S3 client reads the proxy variables as
    git does, in either case, ``NO_PROXY`` naming the hosts reached directly."""
    monkeypatch.setenv("AWS_CA_BUNDLE", str(front.ca))
    for name in ("https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    proxy = ConnectProxy()
    try:
        for name, value in settings.items():
            monkeypatch.setenv(name, proxy.url if value == "proxy" else value)
        store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=front.url)
        dc.init_repo(tmp_path / "c", "P1", store).write("dm", frame(2))
        assert bool(proxy.tunnelled) is tunnelled
    finally:
        proxy.close()
