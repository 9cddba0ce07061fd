"""Helpers for project tests: a fresh project, and a fingerprint of everything it holds."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

import datom_core as dc
from datom_core._project import _layout as L


def new_project(
    tmp_path: Path, store: dc.Store | None = None, name: str = "STUDY_001"
) -> dc.Connection:
    store = store or dc.LocalStore(tmp_path / "store")
    return dc.init_repo(tmp_path / "repo", name, store)


def frame(n: int = 5, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "USUBJID": [f"S-{i + seed:03d}" for i in range(n)],
            "AGE": [30 + i + seed for i in range(n)],
            "WEIGHT": [60.5 + i for i in range(n)],
        }
    )


def fingerprint(conn: dc.Connection) -> dict[str, object]:
    """Git head, the remote's head, tracked files and every store object with its hash."""
    store = conn.store
    objects = {key: hashlib.sha256(store.read_bytes(key)).hexdigest() for key in store.list("")}
    repo = conn.repo
    files = {
        str(p.relative_to(repo.path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo.path).parts and L.INBOX not in p.parts
    }
    return {"head": repo.head(), "files": files, "store": objects, "remote": remote_head(conn)}


def remote_head(conn: dc.Connection) -> str | None:
    from dulwich.repo import Repo

    remote = conn.repo.remote_url
    if remote.startswith("http"):
        return None
    with Repo(remote.removeprefix("file://")) as r:
        try:
            return r.refs[b"refs/heads/main"].decode()
        except KeyError:
            return None
