"""The botocore session behind an :class:`~datom_core.S3Store`: whose PUTs send a small
body with their headers (one round trip), not after the server's ``100 Continue``."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTINUE_ABOVE", "s3_session"]

CONTINUE_ABOVE = 1 << 20
"""Bytes above which a PUT still asks before it sends its body (``Expect: 100-continue``).

botocore turns every ``PutObject`` body into a file object and then asks for every file
object, so each PUT waited a round trip for ``100 Continue`` before its body left: two
round trips where a GET takes one. A refusal (a failed condition, bad credentials) then
spares the upload of a big body; a small body costs less than that wait."""

_UNIQUE_ID = "datom-body-with-headers"


def s3_session(profile: str | None, session: Any = None) -> Any:
    """An aiobotocore session (``session`` if given, else a new one for ``profile``) whose
    clients send bodies of at most :data:`CONTINUE_ABOVE` bytes with their headers."""
    if session is None:
        from aiobotocore.session import AioSession

        session = AioSession(profile=profile) if profile else AioSession()
    # Runs after botocore's own handler (registered when the session was made), which
    # adds the header; clients made from the session copy its handlers.
    session.register("before-call.s3", _body_with_headers, unique_id=_UNIQUE_ID)
    return session


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
