"""Helpers for the set tests: a product repo, a source project, a fingerprint of both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import datom_core as dc
from datom_core._sets._read import declare_member, read_set
from datom_core._sets._records import SetMember
from tests.core.projects import fingerprint, frame, remote_head

__all__ = [
    "fingerprint", "frame", "member_of", "new_product", "opener", "read", "reader", "remote_head",
]  # fmt: skip


def opener(store: dc.Store, project: str) -> dc.Connection:
    return dc.connect(store=store, project_name=project)


def new_product(
    tmp_path: Path,
    project: str = "STUDY_001",
    set_name: str = "adam",
    mode: str | None = "product",
    store: dc.Store | None = None,
) -> dc.Connection:
    """A project whose project.yaml declares ``mode: product`` and ``set: <set_name>``
    (``mode=None``: an ordinary data repo; another mode is edited into the file, since
    ``init_repo`` refuses to write one)."""
    product = mode == "product"
    conn = dc.init_repo(
        tmp_path / "repo",
        project,
        store or dc.LocalStore(tmp_path / "store"),
        mode="product" if product else None,
        set=set_name if product else None,
    )
    if mode is not None and not product:
        config = yaml.safe_load(conn.repo.read(".datom/project.yaml") or b"")
        config.update({"mode": mode, "set": set_name})
        conn.repo.commit(
            {".datom/project.yaml": yaml.safe_dump(config, sort_keys=False).encode()},
            "Declare another mode",
        )
        conn.repo.push()
    return conn


def member_of(
    conn: dc.Connection, table: str, version: str | None = None, **tags: Any
) -> SetMember:
    return declare_member(
        conn.store, conn.project_name, table, version, tags or None, opener=opener
    )


def read(conn: dc.Connection, name: str = "adam", version: str | None = None) -> Any:
    return read_set(conn.store, conn.project_name, name, version, opener=opener)


def reader(conn: dc.Connection) -> dc.Connection:
    return dc.connect(store=conn.store, project_name=conn.project_name)
