"""The product repo that holds a data cut: one set per repo, configured as a
:class:`~datom_dagster.DatomResource` (project name, home, storage, remote).

On first use the repo is created as a product repo (``mode: product``, ``set: <name>``)
under the resource's own first-use lock; a clone that exists is opened as it is, and a
project the store already holds is joined through its remote, as the resource does.
"""

import re

import datom_core as dc
from datom_dagster._config import DatomResource, _init_lock, _is_clone, datom_home

__all__ = ["default_product", "product_connection"]


def default_product(set_name: str) -> DatomResource:
    """The product repo of a cut when none is configured: project ``<set name>`` (spaces and
    parentheses as ``_``) in the datom home, next to the study's own project."""
    return DatomResource(project_name=re.sub(r"[ ()]", "_", set_name))


def product_connection(project: DatomResource, set_name: str) -> dc.Connection:
    """A developer connection to the product repo of ``set_name`` (created on first use)."""
    clone = project.project_clone_path()
    if not _is_clone(clone):
        with _init_lock(clone):
            if not _is_clone(clone):
                _create(project, set_name)
    return project.connection()


def _create(project: DatomResource, set_name: str) -> None:
    store = project.configured_store()
    if store is None:
        store = dc.LocalStore(datom_home(project.home) / project.project_name / "store")
    try:
        dc.connect(store=store, project_name=project.project_name)
        return  # the store holds it already: the resource clones it from its remote
    except dc.NotFoundError:
        pass
    clone = project.project_clone_path()
    clone.parent.mkdir(parents=True, exist_ok=True)
    dc.init_repo(
        clone,
        project.project_name,
        store,
        project.remote,
        token_env=project.git_token_env,
        mode="product",
        set=set_name,
    )
