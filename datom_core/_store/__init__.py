"""Data stores: where a project's parquet bytes and metadata mirror live.

One abstraction (:class:`Store`) over fsspec, three front doors: :class:`LocalStore`
(a directory), :class:`S3Store` (AWS or S3-compatible) and :class:`FsspecStore` (any
other fsspec URL). :func:`store_from_url` picks one from a URL; :func:`store_from_description`
rebuilds one from what :meth:`Store.describe` recorded in ``project.yaml``.
"""

from __future__ import annotations

from datom_core._store._base import Document, Staged, Store
from datom_core._store._factory import store_from_description, store_from_url
from datom_core._store._fsspec import FsspecStore
from datom_core._store._local import LocalStore
from datom_core._store._paths import validate_key
from datom_core._store._s3 import S3Store

__all__ = [
    "Document",
    "FsspecStore",
    "LocalStore",
    "S3Store",
    "Staged",
    "Store",
    "store_from_description",
    "store_from_url",
    "validate_key",
]
