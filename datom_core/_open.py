"""Opening a project: ``init_repo`` (create), ``connect`` (open a clone, or a store as a
reader) and ``clone`` (join), each returning a :class:`Connection`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from datom_core._connection import Connection
from datom_core._errors import DatomError, GitError, InvalidArgumentError
from datom_core._git import MetadataRepo
from datom_core._project._setup import clone_project, init_project, open_developer, open_reader
from datom_core._store import Store
from datom_core._store._paths import check_encodable

__all__ = ["clone", "connect", "init_repo"]


def init_repo(
    path: str | os.PathLike[str],
    project_name: str,
    store: Store,
    remote: str | os.PathLike[str] | None = None,
    *,
    token_env: str = "DATOM_GIT_TOKEN",
    mode: str | None = None,
    set: str | None = None,  # noqa: A002  (R's argument name)
) -> Connection:
    """Create a project: a git clone at ``path`` pushed to ``remote``, and its store mirror.

    ``remote=None`` is the embedded default: a bare repository next to ``path``
    (``<path>.remote.git``), no server and no account needed. ``mode="product"`` with
    ``set="<name>"`` makes a product repo: it holds that one set
    (:meth:`Connection.write_set`) and refuses file onboarding.
    """
    check_encodable(path, "clone folder")
    made = _Made(path, remote)
    try:
        ctx = init_project(
            path, project_name, store, remote, token_env=token_env, mode=mode, set_name=set
        )
    except BaseException as e:
        made.undo()  # atomic: a failed init leaves no half-made clone behind
        if isinstance(e, OSError) and not isinstance(e, DatomError):
            raise GitError(
                f"could not create the project's clone at {os.fspath(path)!r}: "
                f"{e.strerror or e} ({getattr(e, 'filename', None) or 'no file named'}); "
                "nothing was left behind. Fix the cause (permissions, space), then run "
                "init_repo again"
            ) from e
        raise
    return Connection._of(ctx)


class _Made:
    """The folders ``init_repo`` is about to create (the clone, the embedded remote), as
    they were before: what a failed init removes (never anything that was there)."""

    def __init__(self, path: str | os.PathLike[str], remote: object) -> None:
        clone = Path(os.fspath(path)).expanduser().absolute()
        folders = [clone]
        if remote is None:
            folders.append(clone.with_name(clone.name + ".remote.git"))
        # (folder, whether it was there, whether it was empty)
        self._before = [(f, f.exists(), f.is_dir() and not any(f.iterdir())) for f in folders]

    def undo(self) -> None:
        for folder, existed, empty in self._before:
            try:
                if not existed:
                    shutil.rmtree(folder, ignore_errors=True)
                elif empty:  # everything in it now is this init's
                    for child in folder.iterdir():
                        if child.is_dir() and not child.is_symlink():
                            shutil.rmtree(child, ignore_errors=True)
                        else:
                            child.unlink(missing_ok=True)
            except OSError:
                pass  # the original error says what went wrong


def connect(
    path: str | os.PathLike[str] | None = None,
    *,
    store: Store | None = None,
    project_name: str | None = None,
    token_env: str = "DATOM_GIT_TOKEN",
    **credentials: Any,
) -> Connection:
    """Open a project.

    * ``connect(path)``: a developer connection from an existing clone; the store comes from
      ``.datom/project.yaml`` (credentials from the environment or ``credentials``), or
      ``store=`` overrides it.
    * ``connect(store=..., project_name=...)``: a reader connection, from the store alone.
    """
    if path is None:
        if store is None or project_name is None:
            raise InvalidArgumentError(
                "a reader connection needs store= and project_name=; a developer one needs a clone path"
            )
        return Connection._of(open_reader(store, project_name))
    check_encodable(path, "clone folder")
    repo = MetadataRepo.open(path, token_env=token_env)
    return Connection._of(open_developer(repo, store, credentials))


def clone(
    remote: str | os.PathLike[str],
    path: str | os.PathLike[str],
    store: Store | None = None,
    *,
    token_env: str = "DATOM_GIT_TOKEN",
    shallow: bool = False,
    **credentials: Any,
) -> Connection:
    """Join a project as a second developer: clone its metadata remote into ``path``.

    ``shallow=True``: for an ephemeral worker (a fresh container per step) that writes
    and reads but does not walk the history: over HTTP(S) only the tip commit is fetched,
    so the first write costs the same whatever the history's length. What needs older
    commits (``log``, ``diff`` of old versions, repairs that derive a store history from
    git) deepens the clone first, fetching the rest once.
    """
    check_encodable(path, "clone folder")
    ctx = clone_project(
        remote, path, store, token_env=token_env, credentials=credentials, shallow=shallow
    )
    return Connection._of(ctx)
