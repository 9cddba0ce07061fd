"""Which datom project a Dagster deployment writes to: :class:`DatomProjectConfig`.

The same fields configure :class:`DatomResource` (a connection for asset bodies, ops and
checks) and :class:`~datom_dagster.DatomIOManager` (which inherits them, so one object
describes the project and stores into it).

**Zero configuration.** With no field set, the project ``dagster`` lives under the datom
home, ``$DATOM_HOME`` or :data:`DEFAULT_HOME` (``~/.datom``) when that is unset:

* the git clone at ``<home>/<project_name>/repo``,
* its embedded bare remote next to it, ``<home>/<project_name>/repo.remote.git``,
* the local store at ``<home>/<project_name>/store``.

The project is created on first use, once, even when several processes start at the same
moment (they serialise on a lock file next to the clone). A clone that already exists is
opened as it is; a missing clone of a project the store already holds is cloned from the
remote.

**Credentials.** ``aws_access_key_id``, ``aws_secret_access_key`` and ``aws_session_token``
take :class:`dagster.EnvVar` values, so that the run configuration holds the variable's
name and never its value; they only ever reach the store client, in memory. The git token
is read by datom from the environment variable named by ``git_token_env``.
"""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

import datom_core as dc
from dagster import Config, ConfigurableResource

__all__ = ["DEFAULT_HOME", "DEFAULT_PROJECT", "DatomProjectConfig", "DatomResource", "datom_home"]

DEFAULT_HOME = "~/.datom"
"""The datom home when ``$DATOM_HOME`` is unset."""

DEFAULT_PROJECT = "dagster"
"""The project name when none is configured."""


def datom_home(home: str | None = None) -> Path:
    """``home``, else ``$DATOM_HOME``, else :data:`DEFAULT_HOME`; absolute, user expanded."""
    chosen = home or os.environ.get("DATOM_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser().absolute()


class DatomProjectConfig(Config):
    """Where a datom project lives and how to reach it (see the module docstring)."""

    project_name: str = Field(
        default=DEFAULT_PROJECT, description="The datom project (recorded in every version)."
    )
    home: str | None = Field(
        default=None,
        description="Folder for zero-configuration projects; default $DATOM_HOME, else ~/.datom.",
    )
    clone_path: str | None = Field(
        default=None,
        description="The project's git clone; default <home>/<project_name>/repo.",
    )
    store_url: str | None = Field(
        default=None,
        description=(
            "Storage location above datom/: a local path, file:///path, s3://bucket/prefix or "
            "any fsspec URL. Default: the store recorded in the clone, or "
            "<home>/<project_name>/store for a new project."
        ),
    )
    bucket: str | None = Field(default=None, description="S3 bucket (instead of store_url).")
    prefix: str | None = Field(default=None, description="Key prefix inside the S3 bucket.")
    endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint (MinIO, moto...); default AWS."
    )
    region: str | None = Field(default=None, description="S3 region.")
    remote: str | None = Field(
        default=None,
        description="Git remote of the metadata (URL or path); default an embedded bare "
        "repository next to the clone.",
    )
    aws_access_key_id: str | None = Field(
        default=None,
        repr=False,
        description="S3 key id; pass EnvVar('...'). Default: the AWS chain.",
    )
    aws_secret_access_key: str | None = Field(
        default=None,
        repr=False,
        description="S3 secret; pass EnvVar('...'). Default: the AWS chain.",
    )
    aws_session_token: str | None = Field(
        default=None, repr=False, description="S3 session token; pass EnvVar('...')."
    )
    git_token_env: str = Field(
        default="DATOM_GIT_TOKEN",
        description="Name of the environment variable holding the git HTTPS token.",
    )

    _connection: dc.Connection | None = PrivateAttr(default=None)
    _connection_pid: int | None = PrivateAttr(default=None)

    # -- where things are -------------------------------------------------------------------

    def project_clone_path(self) -> Path:
        """The clone this configuration writes through."""
        if self.clone_path:
            return Path(self.clone_path).expanduser().absolute()
        return datom_home(self.home) / self.project_name / "repo"

    def _default_store_root(self) -> Path:
        return datom_home(self.home) / self.project_name / "store"

    def _credentials(self) -> dict[str, str]:
        pairs = {
            "key": self.aws_access_key_id,
            "secret": self.aws_secret_access_key,
            "token": self.aws_session_token,
        }
        return {k: v for k, v in pairs.items() if v}

    def configured_store(self) -> dc.Store | None:
        """The store the fields name, or None when they name none (use the clone's)."""
        if self.store_url and self.bucket:
            raise dc.StoreError(
                f"project {self.project_name!r}: set either store_url or bucket, not both"
            )
        s3_options: dict[str, Any] = {"endpoint_url": self.endpoint_url, "region": self.region}
        s3_options = {k: v for k, v in s3_options.items() if v}
        if self.bucket:
            return dc.S3Store(self.bucket, self.prefix, **s3_options, **self._credentials())
        if self.store_url:
            if self.store_url.lower().startswith(("s3://", "s3a://")):
                return dc.store_from_url(self.store_url, **s3_options, **self._credentials())
            return dc.store_from_url(self.store_url)
        return None

    # -- connecting -------------------------------------------------------------------------

    def connection(self) -> dc.Connection:
        """A developer connection to the project, creating the project on first use.

        Opened once per process and reused (a forked or spawned worker opens its own).
        """
        if self._connection is None or self._connection_pid != os.getpid():
            self._connection = self._open()
            self._connection_pid = os.getpid()
        return self._connection

    def _open(self) -> dc.Connection:
        clone = self.project_clone_path()
        if _is_clone(clone):
            return self._connect(clone)
        with _init_lock(clone):
            if _is_clone(clone):  # another process created it while we waited
                return self._connect(clone)
            return self._create_or_clone(clone)

    def _connect(self, clone: Path) -> dc.Connection:
        conn = dc.connect(
            clone,
            store=self.configured_store(),
            token_env=self.git_token_env,
            **self._credentials(),
        )
        if conn.project_name != self.project_name:
            raise dc.DatomError(
                f"the clone at {clone} holds project {conn.project_name!r}, but this resource "
                f"is configured for {self.project_name!r}; fix project_name or clone_path"
            )
        return conn

    def _create_or_clone(self, clone: Path) -> dc.Connection:
        if clone.exists() and any(clone.iterdir()):
            raise dc.DatomError(
                f"{clone} exists but is not a datom clone (an interrupted first use?); "
                "remove it, or point clone_path at an empty or absent directory"
            )
        store = self.configured_store()
        if store is None:
            store = dc.LocalStore(self._default_store_root())
        # init_repo's documented embedded remote: a bare repository next to the clone.
        remote = self.remote or str(clone.parent / f"{clone.name}.remote.git")
        try:
            dc.connect(store=store, project_name=self.project_name)
        except dc.NotFoundError:
            clone.parent.mkdir(parents=True, exist_ok=True)
            return dc.init_repo(
                clone, self.project_name, store, self.remote, token_env=self.git_token_env
            )
        # The store already holds the project: join it through its remote.
        return dc.clone(remote, clone, store=store, token_env=self.git_token_env)


class DatomResource(ConfigurableResource, DatomProjectConfig):
    """A datom project as a Dagster resource: ``connection()`` gives a developer connection.

    Use it in asset bodies, ops and checks that need datom directly::

        @asset
        def report(datom: DatomResource) -> None:
            print(datom.connection().tables())
    """


def _is_clone(path: Path) -> bool:
    return (path / ".datom" / "project.yaml").is_file()


@contextmanager
def _init_lock(clone: Path) -> Iterator[None]:
    """Serialise first-use creation of one clone across processes (flock; released on exit)."""
    clone.parent.mkdir(parents=True, exist_ok=True)
    lock_path = clone.parent / f".{clone.name}.init.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
