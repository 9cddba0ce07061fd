"""The projects the cross-language tests share, written by R or by Python, and the
helpers that read their documents exactly as stored (bytes and key order)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datom_core as dc
from tests.rdatom.frames import CSV, frame
from tests.rdatom.rsession import RSession

# FORMAT2.md section 2: metadata.json keys in R's order (optional ones omitted).
METADATA_ORDER = (
    "schema_version",
    "kind",
    "data_sha",
    "hash_algo",
    "parquet_sha",
    "table_type",
    "nrow",
    "ncol",
    "colnames",
    "created_at",
    "datom_version",
    "project",
    "original_file_sha",
    "original_format",
    "parents",
    "source_lineage",
    "size_bytes",
    "custom",
)
# FORMAT2.md section 4: manifest top level and entries.
MANIFEST_ORDER = ("schema_version", "project_name", "artifacts", "summary", "updated_at")
ENTRY_ORDER = (
    "kind",
    "current_version",
    "current_data_sha",
    "last_updated",
    "size_bytes",
    "version_count",
    "original_file_sha",
    "original_format",
)
SUMMARY_ORDER = ("total_tables", "total_size_bytes", "total_versions", "total_sets")
# FORMAT2.md section 5: history entries (git copy); the store copy adds commit_sha.
HISTORY_ORDER = (
    "version",
    "data_sha",
    "timestamp",
    "author",
    "commit_message",
    "parquet_sha",
    "original_file_sha",
)
NOTE = {"note": "reviewed"}


@dataclass
class Project:
    """Where a project lives on disk: its first clone, its store root and its bare remote."""

    name: str
    clone: Path
    store: Path
    remote: Path
    # What the writer reported, step by step: (table, change, version).
    steps: list[tuple[str, str, str]] = field(default_factory=list)

    def r_conn(self, clone: Path | None = None) -> dict[str, str]:
        return {
            "path": str(clone or self.clone),
            "store": str(self.store),
            "remote": str(self.remote),
        }

    def r_reader(self) -> dict[str, str]:
        return {"store": str(self.store), "project": self.name}

    @property
    def datom_root(self) -> Path:
        return self.store / "datom"

    def store_doc(self, key: str) -> Any:
        return load_json(self.datom_root / key)

    def py_store(self) -> dc.LocalStore:
        return dc.LocalStore(self.store)

    def py_reader(self) -> dc.Connection:
        return dc.connect(store=self.py_store(), project_name=self.name)


def load_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def keys(doc: dict[str, Any]) -> list[str]:
    return list(doc.keys())


def in_order(present: list[str], order: tuple[str, ...]) -> list[str]:
    """``order`` restricted to the keys in ``present`` (what R would write for them)."""
    return [k for k in order if k in present]


def remote_head(remote: Path) -> tuple[str, str | None]:
    """The branch the bare remote's HEAD names, and the commit it points at (if any)."""
    ref = subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tip = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "--verify", "-q", ref],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return ref, tip or None


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to prove that nothing changed)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- the standard project: derived tables with parents, an onboarded csv, a metadata-only
#    change, new data, a revert ------------------------------------------------------------


def r_standard_project(r: RSession, base: Path, name: str = "RSTUDY") -> Project:
    """Written by R (0.2.0 or 0.1.1) from start to end."""
    p = Project(name, base / "r-clone", base / "store", base / "remote.git")
    r.call("r_init", path=p.clone, project=name, store=p.store, remote=p.remote)
    conn = p.r_conn()

    def write(table: str, data: str, **kw: Any) -> str:
        res = r.call("r_write", conn=conn, name=table, data=data, **kw)
        p.steps.append((table, res["action"], res["version"]))
        return res["version"]

    def onboard_ae() -> str:
        r.call("r_write_csv", name="ae", path=p.clone / "input_files" / "ae.csv")
        r.call("r_sync", conn=conn)
        return str(r.call("r_current", conn=conn, name="ae"))

    _standard_steps(p, write, onboard_ae)
    return p


def _standard_steps(p: Project, write: Callable[..., str], onboard_ae: Callable[[], str]) -> None:
    """The standard project's steps, whichever language writes them."""
    dm1 = write("dm", "dm_v1")
    write("lb", "lb")
    ae = onboard_ae()
    p.steps.append(("ae", "full", ae))
    adsl = write("adsl", "adsl", parents=[{"table": "dm", "version": dm1}])
    write(
        "adae",
        "adae",
        parents=[{"table": "ae", "version": ae}, {"table": "adsl", "version": adsl}],
    )
    write("dm", "dm_v1", metadata=NOTE)  # metadata only
    write("dm", "dm_v2", metadata=NOTE)  # new data
    write("dm", "dm_v1", metadata=NOTE)  # revert to the metadata-only version
    write("lb", "lb_v2")


def py_standard_project(base: Path, name: str = "PYSTUDY") -> Project:
    """The same steps, written by this package."""
    clone = base / "py-clone"
    p = Project(name, clone, base / "store", Path(f"{clone}.remote.git"))
    conn = dc.init_repo(clone, name, p.py_store())

    def write(table: str, data: str, **kw: Any) -> str:
        res = conn.write(table, frame(data), **kw)
        p.steps.append((table, res.change, res.version))
        return res.version

    def onboard_ae() -> str:
        (clone / "input_files" / "ae.csv").write_bytes(CSV["ae"])
        synced = conn.sync()
        assert [(row.name, row.status) for row in synced] == [("ae", "synced")], synced
        return conn.resolve("ae")

    _standard_steps(p, write, onboard_ae)
    return p


STANDARD_TABLES = ("adae", "adsl", "ae", "dm", "lb")
EXPECTED_CHANGES = [
    ("dm", "full"),
    ("lb", "full"),
    ("ae", "full"),
    ("adsl", "full"),
    ("adae", "full"),
    ("dm", "metadata_only"),
    ("dm", "full"),
    ("dm", "full"),  # the revert: new current version, its recorded parquet reused
    ("lb", "full"),
]


def py_rewrite_current(conn: dc.Connection, p: Project, name: str) -> dc.WriteResult:
    """Write back the current version of ``name`` exactly: its data, custom and parents."""
    doc = p.store_doc(f"{name}/.metadata/metadata.json")
    parents = [{"table": x["table"], "version": x["version"]} for x in doc.get("parents", [])]
    return conn.write(
        name, conn.read(name, as_="arrow"), parents=parents or None, metadata=doc.get("custom")
    )
