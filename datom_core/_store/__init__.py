"""Data stores: where a project's parquet bytes and metadata mirror live.

One abstraction (:class:`Store`) over fsspec, three front doors: :class:`LocalStore`
(a directory), :class:`S3Store` (AWS or S3-compatible) and :class:`FsspecStore` (any
other fsspec URL). :func:`store_from_url` picks one from a URL; :func:`store_from_description`
rebuilds one from what :meth:`Store.describe` recorded in ``project.yaml``.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from datom_core._errors import StoreError
from datom_core._store._base import Store, validate_key
from datom_core._store._local import LocalStore
from datom_core._store._s3 import S3Store

__all__ = [
    "FsspecStore",
    "LocalStore",
    "S3Store",
    "Store",
    "store_from_description",
    "store_from_url",
    "validate_key",
]

# Storage options whose values are credentials: scrubbed from every error message.
_SECRET_OPTION = re.compile(r"key|secret|token|pass|cred|auth|sas|sig", re.IGNORECASE)


class FsspecStore(Store):
    """A datom root at ``<url>/datom/`` on any filesystem fsspec can reach.

    ``url`` is the project's storage location (``memory://proj``, ``gcs://bucket/pfx``...);
    ``storage_options`` go to the fsspec filesystem and may hold credentials, so they are
    never recorded by :meth:`describe` nor shown in messages. :meth:`put_if_absent` is
    only as atomic as the filesystem's ``mode="create"``.
    """

    def __init__(self, url: str, **storage_options: Any) -> None:
        _refuse_userinfo(url)
        self.location = url.rstrip("/")
        self._options = storage_options
        fs, path = self._connect()
        super().__init__(url=f"{self.location}/datom", root=f"{path.rstrip('/')}/datom")
        self._fs_cache = fs
        self._fs_pid = os.getpid()

    def _connect(self) -> tuple[Any, str]:
        from fsspec.core import url_to_fs

        try:
            return url_to_fs(self.location, skip_instance_cache=True, **self._options)
        except (ImportError, ValueError, TypeError) as e:
            raise StoreError(
                f"cannot open store {self.location}/datom ({type(e).__name__}: "
                f"{self._redact(str(e))}); check the URL, its storage options and that the "
                "fsspec backend for this protocol is installed"
            ) from e

    def _make_fs(self) -> Any:
        return self._connect()[0]

    def describe(self) -> dict[str, Any]:
        """``{"type": "fsspec", "url": <location>}``; storage options are not recorded."""
        return {"type": "fsspec", "url": self.location}

    def _secrets(self) -> tuple[str, ...]:
        return tuple(
            value
            for name, value in getattr(self, "_options", {}).items()
            if isinstance(value, str) and value and _SECRET_OPTION.search(name)
        )

    def _backend_errors(self) -> tuple[type[BaseException], ...]:
        # Backends raise their own types (google.api_core, azure.core, ...); anything that
        # is not already a datom error is a store failure here.
        return (Exception,)


def store_from_url(url: str, **options: Any) -> Store:
    """The store for a project storage location.

    ``url`` names the location *above* ``datom/``: a plain path or ``file:///path``
    gives a :class:`LocalStore`, ``s3://bucket/prefix`` an :class:`S3Store`, anything else
    an :class:`FsspecStore`. ``options`` go to the chosen constructor (``endpoint_url``,
    ``region``, credentials...).
    """
    if not isinstance(url, str) or not url:
        raise StoreError(f"store URL must be a non-empty string, got {url!r}")
    if "://" not in url:
        return LocalStore(url, **options)
    _refuse_userinfo(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise StoreError(f"file URL {url!r} names a remote host; use file:///path")
        return LocalStore(unquote(parts.path), **options)
    if scheme in ("s3", "s3a"):
        if not parts.netloc:
            raise StoreError(f"S3 URL {url!r} has no bucket; use s3://bucket/prefix")
        return S3Store(parts.netloc, parts.path.strip("/") or None, **options)
    return FsspecStore(url, **options)


def store_from_description(description: dict[str, Any], **credentials: Any) -> Store:
    """Rebuild the store that :meth:`Store.describe` described (as read from project.yaml).

    ``credentials`` (``key``, ``secret``, ``token``, ``profile``, ``anon`` for S3; storage
    options for fsspec) are supplied at run time because descriptions never hold them.
    A local store needs none and ignores them.
    """
    if not isinstance(description, dict):
        raise StoreError(f"store description must be a mapping, got {type(description).__name__}")
    kind = description.get("type")
    try:
        if kind == "local":
            return LocalStore(description["root"], description.get("prefix"))
        if kind == "s3":
            return S3Store(
                description["bucket"],
                description.get("prefix"),
                endpoint_url=description.get("endpoint_url"),
                region=description.get("region"),
                **credentials,
            )
        if kind == "fsspec":
            return FsspecStore(description["url"], **credentials)
    except KeyError as e:
        raise StoreError(
            f"store description of type {kind!r} lacks {e.args[0]!r}; fix the storage "
            "section of .datom/project.yaml"
        ) from e
    raise StoreError(
        f"unknown store type {kind!r} in store description; expected 'local', 's3' or 'fsspec'"
    )


def _refuse_userinfo(url: str) -> None:
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
