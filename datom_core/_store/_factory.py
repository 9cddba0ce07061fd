"""Building a store from a URL, or from the description recorded in ``project.yaml``."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from datom_core._errors import StoreError
from datom_core._store._base import Store
from datom_core._store._fsspec import FsspecStore
from datom_core._store._local import LocalStore
from datom_core._store._paths import refuse_userinfo
from datom_core._store._s3 import S3Store

__all__ = ["store_from_description", "store_from_url"]


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
    refuse_userinfo(url)
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
