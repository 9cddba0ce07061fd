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


def as_previous_release(conn: dc.Connection) -> None:
    """Rewrite a project's documents as the previous release of this package wrote them.

    Format 1: ``metadata.json`` without ``schema_version``/``kind``/``project`` and with
    ``column_hashes``; history ``author`` as a string; the manifest's ``tables``;
    project.yaml's ``storage``/``repo``; store copies byte-identical to git's.
    """
    import json

    import yaml

    repo, store = conn.repo, conn.store
    files: dict[str, bytes] = {}
    entries = {}
    for info in conn.tables():
        name = info.name
        md = json.loads(repo.read(L.git_metadata(name)) or b"{}")
        data = conn.read(name, as_="arrow")
        old = {k: md[k] for k in ("data_sha", "hash_algo", "parquet_sha", "table_type") if k in md}
        old.update({k: md[k] for k in ("nrow", "ncol", "colnames")})
        old["column_hashes"] = [
            {"name": c.name, "sha": c.sha} for c in dc.hash_table(data).column_hashes
        ]
        old.update({"created_at": md["created_at"], "datom_version": "0.1.0"})
        for key in ("original_file_sha", "parents", "source_lineage", "size_bytes", "custom"):
            if key in md and not (key == "source_lineage" and md[key] == []):
                old[key] = md[key]
        version = dc.metadata_sha(old)
        entry = {
            "version": version,
            "data_sha": old["data_sha"],
            "parquet_sha": old.get("parquet_sha"),
            "timestamp": old["created_at"],
            "author": "Old Writer <old@example.org>",
            "commit_message": f"Update {name}",
        }
        if "original_file_sha" in old:
            entry["original_file_sha"] = old["original_file_sha"]
            entry["original_format"] = md.get("original_format", "csv")
        meta_bytes = (json.dumps(old, indent=2) + "\n").encode()
        hist_bytes = (json.dumps([entry], indent=2) + "\n").encode()
        files[L.git_metadata(name)] = meta_bytes
        files[L.git_history(name)] = hist_bytes
        manifest_entry = {"current_version": version, "current_data_sha": old["data_sha"]}
        if "original_file_sha" in old:
            manifest_entry["original_file_sha"] = old["original_file_sha"]
            manifest_entry["original_format"] = entry["original_format"]
        manifest_entry.update(
            {"last_updated": old["created_at"], "size_bytes": old.get("size_bytes", 0)}
        )
        manifest_entry["version_count"] = 1
        entries[name] = manifest_entry
        store.write_bytes(L.store_metadata(name), meta_bytes)
        store.write_bytes(L.store_history(name), hist_bytes)
        store.write_bytes(L.store_snapshot(name, version), meta_bytes)
    manifest = {
        "project_name": conn.project_name,
        "updated_at": "2026-01-01T00:00:00Z",
        "tables": entries,
        "summary": {
            "total_tables": len(entries),
            "total_size_bytes": sum(e["size_bytes"] for e in entries.values()),
            "total_versions": len(entries),
        },
    }
    files[L.MANIFEST] = (json.dumps(manifest, indent=2) + "\n").encode()
    config = {
        "project_name": conn.project_name,
        "datom_version": "0.1.0",
        "storage": store.describe(),
        "repo": {"remote": repo.remote_url},
    }
    files[L.PROJECT_YAML] = yaml.safe_dump(config, sort_keys=False).encode()
    repo.commit(files, "previous release")
    repo.push()
    store.write_bytes(L.STORE_MANIFEST, files[L.MANIFEST])


def init_write_clone_write(url: str, tmp_path: Path) -> tuple[dc.Connection, dc.Connection]:
    """A project on the remote ``url`` (a store under ``tmp_path``): made at ``c`` with a
    write of ``dm``, then cloned at ``c2`` which writes ``ae``; both connections."""
    store = dc.LocalStore(tmp_path / "s")
    conn = dc.init_repo(tmp_path / "c", "P1", store, url)
    conn.write("dm", frame(3))
    other = dc.clone(url, tmp_path / "c2", store)
    other.write("ae", frame(2))
    return conn, other
