"""S3 test helpers: a closed loopback port, and moto's request authentication switch."""

from __future__ import annotations

import json
import socket
import urllib.request
import uuid
from collections.abc import Iterator

import pytest


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def set_moto_auth(endpoint: str, free_requests: str) -> None:
    request = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth",
        data=free_requests.encode(),
        method="POST",
        headers={"Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["status"] == "ok"


@pytest.fixture
def iam_credentials(s3_endpoint: str, s3_bucket: str) -> Iterator[tuple[str, str]]:
    """Real IAM credentials on moto, with moto's request authentication switched on.

    moto accepts any credentials by default; with authentication on it checks the access
    key id and the SigV4 signature like AWS does. Switched off again afterwards (the
    setting is process-wide, and tests in one worker run one at a time).
    """
    import boto3

    iam = boto3.client("iam", endpoint_url=s3_endpoint, region_name="us-east-1")
    try:
        user = f"datom-{uuid.uuid4().hex[:12]}"
        iam.create_user(UserName=user)
        iam.put_user_policy(
            UserName=user,
            PolicyName="everything",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
                }
            ),
        )
        access = iam.create_access_key(UserName=user)["AccessKey"]
    finally:
        iam.close()
    set_moto_auth(s3_endpoint, "0")
    try:
        yield access["AccessKeyId"], access["SecretAccessKey"]
    finally:
        set_moto_auth(s3_endpoint, "inf")
