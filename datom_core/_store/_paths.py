"""Store keys and locations: the rules every backend shares.

Keys are ``/``-separated paths relative to the datom root; each is validated before it
reaches a path. Store URLs are recorded in ``project.yaml`` and shown in messages, so they
may not carry credentials.
"""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import urlsplit

from datom_core._errors import InvalidNameError, NotFoundError, StoreError

__all__ = [
    "TEMP_MARKER",
    "check_bucket",
    "check_endpoint",
    "TEMP_NAME",
    "check_source",
    "source_size",
    "split_source",
    "normalise_prefix",
    "refuse_userinfo",
    "validate_key",
    "check_encodable",
]

# Local writes go through a temp file next to the target; a crash can leave one behind,
# so listings hide anything with this shape and keys may not take it.
TEMP_MARKER = ".datom-tmp-"
TEMP_NAME = re.compile(r"^\..+\.datom-tmp-[0-9a-f]+$")
# fsspec expands these as globs in some calls; no datom key ever needs them.
_FORBIDDEN_CHARS = set("\\*?[]") | {chr(c) for c in range(32)} | {"\x7f"}


def validate_key(key: str, *, prefix: bool = False) -> str:
    """Return ``key`` if it is a safe store key, else raise :class:`InvalidNameError`.

    A key is relative (no leading ``/``), uses ``/`` only (no backslashes), and has no empty,
    ``.`` or ``..`` segment. With ``prefix=True`` the empty string (the whole store) and one
    trailing ``/`` are accepted, and the normalised prefix (no trailing ``/``) is returned.
    """
    if not isinstance(key, str):
        raise InvalidNameError(f"store key must be a string, got {type(key).__name__}")
    if prefix:
        if key == "":
            return key
        if key.endswith("/") and not key.endswith("//"):
            key = key[:-1]
    if key == "":
        raise InvalidNameError("store key is empty")
    bad = sorted(set(key) & _FORBIDDEN_CHARS)
    if bad:
        raise InvalidNameError(
            f"store key {key!r} contains forbidden characters {bad!r} "
            "(keys are '/'-separated, with no backslash, glob or control characters)"
        )
    if key.startswith("/"):
        raise InvalidNameError(f"store key {key!r} must be relative (no leading '/')")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidNameError(
                f"store key {key!r} has an empty, '.' or '..' segment; "
                "keys are plain paths below the datom root"
            )
        if TEMP_MARKER in segment:
            raise InvalidNameError(f"store key {key!r} uses the reserved marker {TEMP_MARKER!r}")
    return key


def normalise_prefix(prefix: str | None) -> str | None:
    """``None`` for no prefix, else the prefix without outer slashes, validated like a key."""
    if prefix is None:
        return None
    if not isinstance(prefix, str):
        raise InvalidNameError(f"store prefix must be a string, got {type(prefix).__name__}")
    stripped = prefix.strip("/")
    return validate_key(stripped) if stripped else None


def check_source(local_path: str | os.PathLike[str], key: str) -> str:
    """The local file to upload as ``key``; :class:`NotFoundError` if it is not a file."""
    path = os.fspath(local_path)
    if not os.path.isfile(path):
        raise NotFoundError(f"local file {path!r} to upload as {key!r} does not exist")
    return path


def refuse_userinfo(url: str) -> None:
    """Refuse a URL that embeds credentials (``user:password@host``)."""
    # A store URL is recorded in project.yaml and shown in messages; it must not carry
    # credentials, so refuse it rather than silently strip them.
    try:
        parts = urlsplit(url)
        has_userinfo = "@" in parts.netloc and bool(parts.username or parts.password)
    except ValueError as e:
        raise StoreError("store URL is malformed; check it") from e
    if has_userinfo:
        raise StoreError(
            "store URL must not embed credentials (user:password@); pass them as options "
            "or through the environment"
        )


def split_source(data: bytes | str | os.PathLike[str], key: str) -> tuple[str | None, bytes]:
    """``put_if_absent``'s two kinds of input: a local file to copy (its checked path and
    no bytes) or the bytes themselves (no path)."""
    if isinstance(data, str | os.PathLike):
        return check_source(data, key), b""
    return None, bytes(data)


def source_size(data: bytes | str | os.PathLike[str], unknown: int) -> int:
    """The bytes ``split_source`` input stands for (``unknown``: a file it cannot stat)."""
    if isinstance(data, str | os.PathLike):
        try:
            return os.path.getsize(data)
        except OSError:
            return unknown
    return len(data)


def check_encodable(path: str | os.PathLike[str], what: str) -> None:
    """Refuse a path this process cannot name to the operating system: under a locale
    that is not UTF-8 (LANG=C) Python's filesystem encoding is ASCII, and a non-ASCII
    folder name cannot be passed to any system call."""
    try:
        os.fsencode(os.fspath(path))
    except UnicodeEncodeError as e:
        locale_vars = ", ".join(
            f"{k}={os.environ[k]}" for k in ("LC_ALL", "LC_CTYPE", "LANG") if k in os.environ
        )
        raise InvalidNameError(
            f"{what} {os.fspath(path)!a} cannot be named in this process's filesystem "
            f"encoding ({sys.getfilesystemencoding()}; {locale_vars or 'no locale set'}): "
            "run with a UTF-8 locale (LANG=C.UTF-8) or PYTHONUTF8=1, or use an ASCII path"
        ) from e


def check_bucket(bucket: str) -> str:
    if not isinstance(bucket, str) or not bucket or "/" in bucket or ":" in bucket:
        raise InvalidNameError(
            f"S3 bucket name {bucket!r} is malformed; give the bare bucket name "
            "(the prefix goes in prefix=)"
        )
    return bucket


def check_endpoint(endpoint_url: str | None) -> str | None:
    if endpoint_url is None:
        return None
    parts = urlsplit(endpoint_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreError(f"endpoint_url {parts.scheme}://{parts.hostname} is not an http(s) URL")
    if parts.username or parts.password:
        # Refuse rather than strip: a URL is recorded in project.yaml and shown in errors.
        raise StoreError(
            "endpoint_url must not embed credentials; pass key=/secret= or use the environment"
        )
    return endpoint_url.rstrip("/")
