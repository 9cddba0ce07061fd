"""What a server that answers "later" (HTTP 429, 503) asks for: its ``Retry-After``, read
alike for the git remote (``_git._httpclient``) and the S3 store (``_store._s3session``)."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

__all__ = ["retry_after_seconds"]


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds: a number of them, or an HTTP date (RFC 9110, 10.2.3);
    None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None
