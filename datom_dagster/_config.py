"""Which datom project a Dagster deployment writes to: :class:`DatomResource`.

Configure the project once, as a resource, and hand it to
:class:`~datom_dagster.DatomIOManager` (``DatomIOManager(datom=resource)``), to checks
and to the inbox assets: one object describes the project for all of them.

**Zero configuration.** With no field set, the project ``dagster`` lives under the datom
home, ``$DATOM_HOME`` or :data:`DEFAULT_HOME` (``~/.datom``) when that is unset:

* the git clone at ``<home>/<project_name>/repo``,
* its embedded bare remote next to it, ``<home>/<project_name>/repo.remote.git``,
* the local store at ``<home>/<project_name>/store``.

The project is created on first use, once, even when several processes start at the same
moment (they serialise on a lock file next to the clone). A clone that already exists is
opened as it is; a missing clone of a project the store already holds is cloned from the
remote.

**Storage** is one typed choice (:mod:`datom_dagster._storage`): the default, a local
directory, S3, or any fsspec URL. S3 credentials take :class:`dagster.EnvVar` values, so
that the run configuration holds the variable's name and never its value; they only ever
reach the store client, in memory. The git token is read by datom from the environment
variable named by ``git_token_env``.
"""

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import Field, PrivateAttr

import datom_core as dc
from dagster import ConfigurableResource
from datom_dagster._storage import DefaultStorage, Storage

__all__ = ["DEFAULT_HOME", "DEFAULT_PROJECT", "DatomProject", "DatomResource", "datom_home"]

DEFAULT_HOME = "~/.datom"
"""The datom home when ``$DATOM_HOME`` is unset."""

DEFAULT_PROJECT = "dagster"
"""The project name when none is configured."""

_CONNECT_ATTEMPTS = 6


@runtime_checkable
class DatomProject(Protocol):
    """Anything that opens a connection to a datom project (the resource, the IO manager)."""

    def connection(self) -> dc.Connection:
        """A developer connection to the project."""
        ...


def datom_home(home: str | None = None) -> Path:
    """``home``, else ``$DATOM_HOME``, else :data:`DEFAULT_HOME`; absolute, user expanded."""
    chosen = home or os.environ.get("DATOM_HOME") or DEFAULT_HOME
    try:
        return Path(chosen).expanduser().absolute()
    except RuntimeError as e:  # no HOME and no password entry (containers, daemons)
        raise dc.ProjectConfigError(
            f"cannot place the datom home {chosen!r}: this process has no home directory "
            "(HOME is unset and the user has no entry in the password database). Set "
            "DATOM_HOME (or the resource's home=) to a writable folder"
        ) from e


class DatomResource(ConfigurableResource):
    """A datom project as a Dagster resource: ``connection()`` gives a developer connection.

    Use it in asset bodies, ops and checks that need datom directly, and give it to the IO
    manager so that both describe the same project::

        datom = DatomResource(project_name="STUDY_001", storage=S3Storage(bucket="b"))
        resources = {"datom": datom, "io_manager": DatomIOManager(datom=datom)}

        @asset
        def report(datom: DatomResource) -> None:
            print(datom.connection().tables())
    """

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
    storage: Storage = Field(
        default_factory=DefaultStorage,
        discriminator="kind",
        description="Where the parquet bytes live: default, local, s3 or url.",
    )
    remote: str | None = Field(
        default=None,
        description="Git remote of the metadata (URL or path); default an embedded bare "
        "repository next to the clone.",
    )
    git_token_env: str = Field(
        default="DATOM_GIT_TOKEN",
        description="Name of the environment variable holding the git HTTPS token.",
    )
    ephemeral: bool = Field(
        default=False,
        description="Workers that start with an empty home (a container per step): a "
        "missing clone of an HTTPS remote is cloned shallow (the tip commit only), so "
        "the first write costs the same whatever the length of the history.",
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

    def configured_store(self) -> dc.Store | None:
        """The store ``storage`` names, or None for the default (use the clone's)."""
        return self.storage.store()

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
            try:
                return self._connect(clone)
            except dc.DatomError:
                pass  # maybe still being created by another process: wait for its lock
        with _init_lock(clone):
            if _is_clone(clone):  # another process created it while we waited
                return self._connect(clone)
            return self._create_or_clone(clone)

    def _connect(self, clone: Path) -> dc.Connection:
        conn = None
        for attempt in range(_CONNECT_ATTEMPTS):
            try:
                conn = dc.connect(
                    clone, store=self.configured_store(), token_env=self.git_token_env
                )
                break
            except dc.NotFoundError:
                # A write in another process may be resetting this shared clone's working
                # tree (its .datom/project.yaml is briefly absent): try again shortly.
                if attempt == _CONNECT_ATTEMPTS - 1:
                    raise
                time.sleep(0.1 * (attempt + 1))
        assert conn is not None
        if conn.project_name != self.project_name:
            raise dc.ProjectConfigError(
                f"the clone at {clone} holds project {conn.project_name!r}, but this resource "
                f"is configured for {self.project_name!r}; fix project_name or clone_path"
            )
        return conn

    def _create_or_clone(self, clone: Path) -> dc.Connection:
        if clone.exists() and any(clone.iterdir()):
            raise dc.ProjectConfigError(
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
        return dc.clone(
            remote, clone, store=store, token_env=self.git_token_env, shallow=self.ephemeral
        )


def _is_clone(path: Path) -> bool:
    # Not .datom/project.yaml: another process's write may be resetting the working tree
    # of a shared clone at this very moment. Clones are only created under the init lock,
    # and a git directory appears early in their creation: a connect that fails on one is
    # tried again under the lock, once the creator has finished (or failed).
    return (path / ".git").is_dir()


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
