"""An S3-compatible store over HTTPS whose certificate a private authority signs (an
on-premises MinIO, a corporate gateway): trusted through ``AWS_CA_BUNDLE`` as every AWS
tool is told, and an untrusted certificate named as such, not as a credentials problem,
before anything is made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.tls import TlsFront

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
