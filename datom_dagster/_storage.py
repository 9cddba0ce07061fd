"""Where a project's parquet bytes and mirrored metadata live: one typed choice.

:class:`~datom_dagster.DatomResource` takes exactly one of these as ``storage`` (Dagster
config picks the variant by its ``kind``, so two locations can never both be set):

* :class:`DefaultStorage` (``kind: default``): the store the clone records, or a local
  store under the datom home for a project created here;
* :class:`LocalStorage` (``kind: local``): a directory;
* :class:`S3Storage` (``kind: s3``): a bucket and prefix, with credentials as
  :class:`dagster.EnvVar` values (the run configuration holds the variable's name only;
  unset, the usual AWS chain applies);
* :class:`UrlStorage` (``kind: url``): any fsspec URL (``s3://``, ``gcs://``, ``memory://``,
  ``file:///``...), with options for its filesystem.

In YAML (a run config or a component)::

    storage:
      s3:
        bucket: my-bucket
        prefix: studies/s001
        aws_access_key_id: {env: AWS_ACCESS_KEY_ID}
"""

from typing import Any, Literal

from pydantic import Field

import datom_core as dc
from dagster import Config, EnvVar

__all__ = ["DefaultStorage", "LocalStorage", "S3Storage", "Storage", "UrlStorage"]


class DefaultStorage(Config):
    """The clone's recorded store; ``<home>/<project_name>/store`` for a new project."""

    kind: Literal["default"] = "default"

    def store(self) -> dc.Store | None:
        """None: the caller uses the clone's store (or creates the default one)."""
        return None


class LocalStorage(Config):
    """A local directory (the folder above ``datom/``)."""

    kind: Literal["local"] = "local"
    path: str = Field(description="Directory holding the store (created if missing).")

    def store(self) -> dc.Store:
        """The :class:`datom_core.LocalStore` at ``path``."""
        return dc.LocalStore(self.path)


class S3Storage(Config):
    """An S3 (or S3-compatible) bucket and key prefix."""

    kind: Literal["s3"] = "s3"
    bucket: str = Field(description="S3 bucket.")
    prefix: str | None = Field(default=None, description="Key prefix inside the bucket.")
    endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint (MinIO, moto...); default AWS."
    )
    region: str | None = Field(default=None, description="S3 region.")
    aws_access_key_id: str | None = Field(
        default=None, repr=False, description="Key id; pass EnvVar('...'). Default: AWS chain."
    )
    aws_secret_access_key: str | None = Field(
        default=None, repr=False, description="Secret; pass EnvVar('...'). Default: AWS chain."
    )
    aws_session_token: str | None = Field(
        default=None, repr=False, description="Session token; pass EnvVar('...')."
    )

    def store(self) -> dc.Store:
        """The :class:`datom_core.S3Store`; credentials stay in memory."""
        return dc.S3Store(
            self.bucket,
            self.prefix,
            endpoint_url=self.endpoint_url,
            region=self.region,
            key=_resolved(self.aws_access_key_id),
            secret=_resolved(self.aws_secret_access_key),
            token=_resolved(self.aws_session_token),
        )


class UrlStorage(Config):
    """Any location fsspec reaches, as a URL (see :func:`datom_core.store_from_url`)."""

    kind: Literal["url"] = "url"
    url: str = Field(description="Storage URL above datom/ (path, file://, s3://, gcs://...).")
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        repr=False,
        description="Options for the URL's filesystem (endpoint, credentials as EnvVar...).",
    )

    def store(self) -> dc.Store:
        """The store :func:`datom_core.store_from_url` builds for ``url``."""
        options = {k: _resolved(v) for k, v in self.storage_options.items()}
        return dc.store_from_url(self.url, **options)


def _resolved(value: Any) -> Any:
    """An :class:`dagster.EnvVar`'s value (a resource used outside a run keeps the EnvVar)."""
    return value.get_value() if isinstance(value, EnvVar) else value


Storage = DefaultStorage | LocalStorage | S3Storage | UrlStorage
"""The storage choices, discriminated by ``kind``."""
