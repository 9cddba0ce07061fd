"""Creating, opening and cloning a project: what ``init_repo``, ``connect`` and ``clone``
do below the connection facade. Each returns the :class:`ProjectContext` of the project.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from datom_core._errors import (
    DatomError,
    FormatError,
    InvalidArgumentError,
    NotFoundError,
    ProjectConfigError,
    ProjectExistsError,
)
from datom_core._git import MetadataRepo
from datom_core._names import validate_project_name, validate_table_name
from datom_core._project import _layout as L
from datom_core._project._config import r_project_yaml
from datom_core._project._context import ProjectContext
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._parse import parse_project_config
from datom_core._project._read import read_manifest
from datom_core._store import Store, store_from_description

__all__ = ["clone_project", "init_project", "open_developer", "open_reader", "product_fields"]


def init_project(
    path: str | os.PathLike[str],
    project_name: str,
    store: Store,
    remote: str | os.PathLike[str] | None,
    *,
    token_env: str,
    mode: str | None = None,
    set_name: str | None = None,
) -> ProjectContext:
    """A new project: a clone at ``path`` pushed to ``remote``, and its store mirror.

    ``mode="product"`` with ``set_name`` makes a product repo, which holds that one set.
    """
    validate_project_name(project_name)
    product = product_fields(mode, set_name)
    if not isinstance(store, Store):
        raise InvalidArgumentError(
            f"store= must be a datom Store (LocalStore, S3Store...), not {store!r}"
        )
    store.check_access()
    if store.exists(L.STORE_MANIFEST):
        try:
            existing = read_manifest(ProjectContext(project_name, store)).project_name
        except DatomError:
            existing = "(unreadable)"
        raise ProjectExistsError(
            f"{store.url} already holds project {existing!r}; use a different store or prefix, "
            "or clone that project (clone() / datom clone)"
        )
    repo = MetadataRepo.init(path, remote, token_env=token_env)
    if repo.fetch_and_reset() is not None:
        repo.close()  # an error's traceback keeps no pack open
        raise ProjectExistsError(
            f"remote {repo.remote_url} already holds commits; clone it to join that project "
            "(clone() / datom clone)"
        )
    manifest = dump(assemble_manifest(project_name, {}))
    files = {
        L.PROJECT_YAML: r_project_yaml(
            project_name, store.describe(), repo.remote_url, extra=product
        ),
        L.MANIFEST: manifest,
        ".gitignore": L.GITIGNORE.encode(),
    }
    repo.commit(files, f"Initialise datom project {project_name}")
    repo.push()
    (repo.path / L.INBOX).mkdir(exist_ok=True)
    store.write_bytes(L.STORE_MANIFEST, manifest)
    return ProjectContext(project_name, store, repo)


def product_fields(mode: str | None, set_name: str | None) -> dict[str, str]:
    """The ``mode``/``set`` keys of a new project.yaml (written last, as R does), checked
    together as R's ``datom_init_repo`` does: each means nothing without the other."""
    if mode is None:
        if set_name is not None:
            raise InvalidArgumentError(
                f'set={set_name!r} was given without mode="product": only a product repo owns '
                "a set. Pass both, or neither."
            )
        return {}
    if mode != "product":
        raise InvalidArgumentError(
            f'mode= must be "product", or None for an ordinary data repo; got {mode!r}'
        )
    if not isinstance(set_name, str) or not set_name:
        raise InvalidArgumentError(
            'a mode="product" repo must name the set it owns: pass set="<name>" '
            "(one repo holds one set)"
        )
    return {"mode": mode, "set": validate_table_name(set_name)}


def open_reader(store: Store, project_name: str) -> ProjectContext:
    """A reader's context, from the store alone (the manifest must name the project)."""
    ctx = ProjectContext(validate_project_name(project_name), store)
    found = read_manifest(ctx).project_name
    if found != project_name:
        raise NotFoundError(f"{store.url} holds project {found!r}, not {project_name!r}")
    return ctx


def open_developer(
    repo: MetadataRepo, store: Store | None, credentials: Mapping[str, Any]
) -> ProjectContext:
    """A developer's context over an opened clone (the store from project.yaml by default);
    refusing it closes the clone: an error's traceback keeps no pack open."""
    try:
        return _developer(repo, store, credentials)
    except BaseException:
        repo.close()
        raise


def _developer(
    repo: MetadataRepo, store: Store | None, credentials: Mapping[str, Any]
) -> ProjectContext:
    raw = repo.read(L.PROJECT_YAML)
    if raw is None:
        raise NotFoundError(
            f"{repo.path} is a git repository but not a datom project (no {L.PROJECT_YAML})"
        )
    config = parse_project_config(raw, key=L.PROJECT_YAML)
    if config.schema_version is not None and config.schema_version > 1:
        raise FormatError(
            f"{L.PROJECT_YAML} declares schema_version {config.schema_version}, newer than this "
            "datom opens (1); upgrade datom (pip install -U datom)",
            field="schema_version",
            file=L.PROJECT_YAML,
        )
    if store is None:
        if config.storage is None:
            raise ProjectConfigError(
                f"{L.PROJECT_YAML} records no storage; pass store= to connect()"
            )
        store = store_from_description(dict(config.storage), **credentials)
    (repo.path / L.INBOX).mkdir(exist_ok=True)
    return ProjectContext(validate_project_name(config.project_name), store, repo)


def clone_project(
    remote: str | os.PathLike[str],
    path: str | os.PathLike[str],
    store: Store | None,
    *,
    token_env: str,
    credentials: Mapping[str, Any],
    shallow: bool = False,
) -> ProjectContext:
    """Join a project: clone its metadata remote into ``path`` (``shallow``: the tip only).

    A ``store`` given gets ready (:meth:`Store.prepare`) while the clone downloads: a
    fresh worker's first write would otherwise wait for the store's client to be built and
    connected after the clone (~2 round trips and the client's import, measured by
    ``benchmarks/bench_coldstart.py --store s3``).
    """
    ready = threading.Thread(target=store.prepare, daemon=True) if store is not None else None
    if ready is not None:
        ready.start()
    try:
        repo = MetadataRepo.clone(remote, path, token_env=token_env, shallow=shallow)
    finally:
        if ready is not None:
            ready.join()
    return open_developer(repo, store, credentials)
