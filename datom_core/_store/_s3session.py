"""The botocore session behind an :class:`~datom_core.S3Store`: whose PUTs send a small
body with their headers (one round trip), not after the server's ``100 Continue``, and
whose requests an endpoint answers 429 are sent again when it says."""

from __future__ import annotations

import random
from typing import Any

from .._retryafter import retry_after_seconds

__all__ = ["CONTINUE_ABOVE", "LATER_SENDS", "s3_session"]

CONTINUE_ABOVE = 1 << 20
"""Bytes above which a PUT still asks before it sends its body (``Expect: 100-continue``).

botocore turns every ``PutObject`` body into a file object and then asks for every file
object, so each PUT waited a round trip for ``100 Continue`` before its body left: two
round trips where a GET takes one. A refusal (a failed condition, bad credentials) then
spares the upload of a big body; a small body costs less than that wait."""

_UNIQUE_ID = "datom-body-with-headers"

LATER_SENDS = 6
"""Sends of a request the endpoint answers 429 (Too Many Requests).

botocore's standard retry mode retries S3's own throttling answer (503 SlowDown), and the
error codes of other services' throttling, but not the status 429 itself: what a gateway
in front of an endpoint, or an S3-compatible store that limits its rate, answers. Each
is sent again after its ``Retry-After`` (else a growing wait), within :data:`_LATER_MAX`."""
_LATER_MAX = 20.0  # seconds of one wait


def s3_session(profile: str | None, session: Any = None) -> Any:
    """An aiobotocore session (``session`` if given, else a new one for ``profile``) whose
    clients send bodies of at most :data:`CONTINUE_ABOVE` bytes with their headers."""
    if session is None:
        from aiobotocore.session import AioSession

        session = AioSession(profile=profile) if profile else AioSession()
    # Runs after botocore's own handler (registered when the session was made), which
    # adds the header; clients made from the session copy its handlers.
    session.register("before-call.s3", _body_with_headers, unique_id=_UNIQUE_ID)
    # Before botocore's retry handler (registered when a client is made): the first
    # handler's answer other than None decides, and this one answers only a 429.
    session.register("needs-retry.s3", _too_many_requests, unique_id="datom-too-many-requests")
    return session


def _too_many_requests(response: Any = None, attempts: int = 1, **_: Any) -> float | None:
    """The seconds to wait before sending again a request answered 429; None otherwise
    (botocore's own retry rules decide)."""
    http: Any = response[0] if response else None
    if getattr(http, "status_code", None) != 429 or attempts >= LATER_SENDS:
        return None
    said = retry_after_seconds((http.headers or {}).get("Retry-After"))
    wait = said if said is not None else random.uniform(0.5, 1.0) * 2 ** (attempts - 1)
    return min(wait, _LATER_MAX)


def _body_with_headers(params: dict[str, Any], **_: Any) -> None:
    """Drop ``Expect: 100-continue`` from a request whose body is at most
    :data:`CONTINUE_ABOVE` bytes (an unknown length keeps it)."""
    from botocore.utils import determine_content_length

    headers = params.get("headers") or {}
    if str(headers.get("Expect", "")).lower() != "100-continue":
        return
    body = params.get("body")
    size = 0 if body is None else determine_content_length(body)
    if size is not None and size <= CONTINUE_ABOVE:
        del headers["Expect"]
