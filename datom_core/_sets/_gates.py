"""The checks a set write makes before anything changes: the product-repo gates of
``.datom/project.yaml``, and that every pinned version resolves and agrees with the
parents its outputs record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from datom_core._errors import (
    InconsistentParentsError,
    NotProductRepoError,
    SetNameMismatchError,
)
from datom_core._git import MetadataRepo
from datom_core._names import validate_table_name
from datom_core._sets import _manifest as M
from datom_core._sets._read import snapshot_of
from datom_core._sets._records import SetMember
from datom_core._store import Store

__all__ = ["check_parents", "declared_set", "member_stores"]

_READERS = 16


def declared_set(repo: MetadataRepo, project_name: str, name: str | None) -> str:
    """The set this product repo declares, after the product-mode and name gates."""
    raw = repo.read(M.PROJECT_YAML)
    if raw is None:
        raise NotProductRepoError(f"{repo.path} holds no {M.PROJECT_YAML}: not a datom project")
    # Its format first: the gates below read fields out of it (parsed once, by the door).
    M.check_project_config(raw)
    config = M.load_project_config(raw).raw
    mode = config.get("mode")
    if mode != "product":
        said = "declares no mode" if mode is None else f"declares mode {mode!r}"
        raise NotProductRepoError(
            f"writing a set needs a product repo, and {M.PROJECT_YAML} {said}. Create one with "
            'init_repo(path, project, store, mode="product", set="<name>"): one repo holds one set.'
        )
    declared = config.get("set")
    if not isinstance(declared, str) or not declared:
        raise NotProductRepoError(
            f"this repo declares mode: product but names no set; add set: <name> to {M.PROJECT_YAML}"
        )
    if name is not None and name != declared:
        raise SetNameMismatchError(
            f"this repo's set is {declared!r}, not {name!r}: one repo holds one set. Write "
            f"{declared!r} here, or write {name!r} from its own repo."
        )
    if config.get("project_name") != project_name:
        raise SetNameMismatchError(
            f"{M.PROJECT_YAML} declares project {config.get('project_name')!r}, and this "
            f"connection is for {project_name!r}"
        )
    return validate_table_name(declared)


def member_stores(project_name: str, store: Store, members: Sequence[Any]) -> dict[str, Store]:
    """This project's store, and the store each typed member of another project came from."""
    stores: dict[str, Store] = {}
    for m in members:
        if isinstance(m, SetMember) and isinstance(m.store, Store):
            stores.setdefault(m.project, m.store)
    stores[project_name] = store
    return stores


def check_parents(
    stores: Mapping[str, Store], name: str, members: Sequence[Mapping[str, Any]]
) -> None:
    """Every member whose project's store is known (always this project's) must resolve to
    a snapshot, and the parents it records must agree with the versions the set pins."""
    ids = [m["id"] for m in members]
    known = [i for i in ids if i["project"] in stores]  # other stores: only via their connection

    def snapshot(ident: Mapping[str, str]) -> Mapping[str, Any]:
        store = stores[ident["project"]]
        return snapshot_of(store, ident["project"], ident["name"], ident["version"])

    # One small document per member; a study cut can pin thousands, so read them in parallel.
    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        snapshots = list(pool.map(snapshot, known))
    pins: dict[tuple[str, str], list[str]] = {}
    for i in ids:
        pins.setdefault((i["project"], i["name"]), []).append(i["version"])
    problems = []
    for ident, snap in zip(known, snapshots, strict=True):
        parents = snap.get("parents") or []
        for p in [parents] if isinstance(parents, Mapping) else parents:
            fields = [
                p.get(k) if isinstance(p, Mapping) else None for k in ("source", "table", "version")
            ]
            if not all(isinstance(f, str) and f for f in fields):
                continue
            source, table, used = fields
            pinned = pins.get((str(source), str(table)), [])
            if pinned and used not in pinned:
                problems.append(
                    f"{ident['name']} was built from {table} {str(used)[:8]}; the set pins {table} "
                    f"at {', '.join(v[:8] for v in pinned)}"
                )
    if problems:
        raise InconsistentParentsError(
            f"set {name!r} pins inputs at versions its outputs were not built from: "
            + "; ".join(problems)
            + ". Re-derive the output from the pinned versions, or move the input to the "
            "version the output used (update_members). Nothing has been written."
        )
