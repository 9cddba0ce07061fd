"""What an S3 failure is: throttling, a server error, an untrusted certificate, a timeout,
an unreachable endpoint, a missing bucket or (only then) credentials, each with its own
remedy."""

from __future__ import annotations

__all__ = ["s3_error_code", "s3_remedy"]

_THROTTLED = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "503",
     "ServiceUnavailable", "TooManyRequestsException", "RequestThrottled", "TooManyRequests",
     "429"}
)  # fmt: skip
_TIMEOUTS = frozenset(
    {"ReadTimeoutError", "ConnectTimeoutError", "TimeoutError", "ServerTimeoutError",
     "ConnectionTimeoutError", "SocketTimeoutError"}
)  # fmt: skip
_UNREACHABLE = frozenset(
    {"EndpointConnectionError", "ClientConnectorError", "ConnectionClosedError",
     "ServerDisconnectedError", "ClientOSError", "ConnectionRefusedError"}
)  # fmt: skip

_UNTRUSTED = frozenset({"SSLCertVerificationError", "ClientConnectorCertificateError"})


def _causes(error: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and all(error is not s for s in seen):
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _s3_failure(error: BaseException) -> tuple[str | None, int | None]:
    """The S3 error code and HTTP status behind an s3fs-translated exception."""
    for seen in _causes(error):
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return response.get("Error", {}).get("Code"), status if isinstance(
                status, int
            ) else None
    return None, None


def s3_remedy(error: BaseException, where: str, bucket: str) -> str | None:
    """The remedy of ``error`` when its cause is told apart (None: the generic one)."""
    code, status = _s3_failure(error)
    names = {type(c).__name__ for c in _causes(error)}
    if code in _THROTTLED or status in (429, 503):
        http = f"HTTP {status or 503}"
        label = f"{code}, {http}" if code and not code.isdigit() else http
        return (
            f"{where} is throttling requests ({label}, after retries): retry later or "
            "with fewer concurrent writers (not a credentials problem)"
        )
    if status is not None and status >= 500:
        return f"{where} failed on its side (HTTP {status}, after retries): retry later"
    if code == "NoSuchBucket":
        return (
            f"bucket {bucket!r} does not exist at {where}: create it, or fix the "
            "bucket name / endpoint_url"
        )
    if names & _UNTRUSTED:
        return (
            f"the TLS certificate of {where} is not trusted: if your organisation's own "
            "certificate authority signs it, point AWS_CA_BUNDLE (or ca_bundle in the AWS "
            "profile) at that authority's certificate (not a credentials problem)"
        )
    if names & _TIMEOUTS:
        return f"{where} did not answer in time: check the network to it, then retry"
    if names & _UNREACHABLE and code is None:
        return f"cannot connect to {where}: check endpoint_url and the network, then retry"
    return None


def s3_error_code(error: BaseException) -> str | None:
    """The S3 error code behind an s3fs-translated exception, if there is one."""
    seen: BaseException | None = error
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
        seen = seen.__cause__ or seen.__context__
    return None
