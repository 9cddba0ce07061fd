"""``validate``: compare the git repository (the source of truth) with the store.

Finds missing or altered parquet objects, missing or stale mirrors and snapshots, and
manifest drift. The store's history is compared with git's modulo ``commit_sha`` (only
the store records it). With ``fix=True`` it repairs what git can restore: mirrors,
snapshots (from the git history of each ``metadata.json``) and the manifest, keeping
every ``commit_sha`` the store recorded. Data that is gone or altered cannot be
recreated from git; those problems stay unfixed and are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datom_core._errors import DatomError, NotFoundError
from datom_core._project import _layout as L
from datom_core._project._build import updated_manifest
from datom_core._project._context import ProjectContext
from datom_core._project._documents import manifest_entry
from datom_core._project._door import check_write_door
from datom_core._project._mirror import history_agrees, store_history
from datom_core._project._model import HistoryEntry, TableMetadata
from datom_core._project._parse import convert_manifest_v1, load_json, parse_history, parse_metadata
from datom_core._project._records import Problem, ValidationReport

__all__ = ["validate"]

_Docs = dict[str, tuple[TableMetadata, tuple[HistoryEntry, ...]]]


def validate(ctx: ProjectContext, *, fix: bool, verify_data: bool) -> ValidationReport:
    repo = ctx.require_repo()
    with repo.lock():
        if fix:
            repo.fetch_and_reset()
            check_write_door(repo, None)
        problems: list[Problem] = []
        docs = _table_docs(ctx, problems)
        for table, (_metadata, history) in docs.items():
            problems += _check_data(ctx, table, history, verify_data)
            problems += _check_mirror(ctx, table, fix)
            problems += _check_snapshots(ctx, table, history, fix)
        damaged = {p.table for p in problems if p.kind == "corrupt_git_document" and p.table}
        problems += _check_manifest(ctx, docs, fix, damaged)
    return ValidationReport(tuple(problems))


def _table_docs(ctx: ProjectContext, problems: list[Problem]) -> _Docs:
    repo = ctx.require_repo()
    docs = {}
    for child in sorted(repo.path.iterdir()):
        meta_path, hist_path = L.git_metadata(child.name), L.git_history(child.name)
        if (
            not child.is_dir()
            or child.name.startswith(".")
            or not (child / "metadata.json").exists()
        ):
            continue
        try:
            metadata = parse_metadata(repo.read(meta_path) or b"", key=meta_path)
            history = parse_history(repo.read(hist_path) or b"[]", key=hist_path)
        except DatomError as e:
            problems.append(
                Problem("corrupt_git_document", child.name, meta_path, str(e), fixable=False)
            )
            continue
        docs[child.name] = (metadata, history)
    return docs


def _check_data(
    ctx: ProjectContext, table: str, history: tuple[HistoryEntry, ...], verify: bool
) -> list[Problem]:
    problems, checked = [], set()
    for entry in history:
        key = L.store_parquet(table, entry.data_sha)
        if key in checked:
            continue
        checked.add(key)
        if not ctx.store.exists(key):
            detail = f"version {entry.version} pins it"
            problems.append(Problem("missing_parquet", table, key, detail, fixable=False))
        elif verify and entry.parquet_sha:
            actual = ctx.store.sha256(key)
            if actual != entry.parquet_sha:
                detail = f"expected {entry.parquet_sha}, actual {actual}"
                problems.append(Problem("parquet_mismatch", table, key, detail, fixable=False))
    return problems


def _check_mirror(ctx: ProjectContext, table: str, fix: bool) -> list[Problem]:
    repo = ctx.require_repo()
    problems = []
    git_meta = repo.read(L.git_metadata(table)) or b""
    stored_meta = _stored(ctx, L.store_metadata(table))
    if stored_meta != git_meta:
        if fix:
            ctx.store.write_bytes(L.store_metadata(table), git_meta)
        problems.append(_mirror_problem(table, L.store_metadata(table), stored_meta, fix))
    git_hist = repo.read(L.git_history(table)) or b"[]"
    stored_hist = _stored(ctx, L.store_history(table))
    if not history_agrees(stored_hist, git_hist, table):
        if fix:
            ctx.store.write_bytes(L.store_history(table), store_history(ctx, table, git_hist))
        problems.append(_mirror_problem(table, L.store_history(table), stored_hist, fix))
    return problems


def _mirror_problem(table: str | None, key: str, stored: bytes | None, fix: bool) -> Problem:
    kind = "missing_mirror" if stored is None else "stale_mirror"
    return Problem(kind, table, key, "differs from git's copy", fixable=True, fixed=fix)


def _check_snapshots(
    ctx: ProjectContext, table: str, history: tuple[HistoryEntry, ...], fix: bool
) -> list[Problem]:
    problems: list[Problem] = []
    from_git: dict[str, bytes] | None = None
    for entry in history:
        key = L.store_snapshot(table, entry.version)
        stored = _stored(ctx, key)
        if stored is not None and _certifies(stored, entry.version):
            continue
        kind = "missing_snapshot" if stored is None else "altered_snapshot"
        fixed = False
        if fix:
            from_git = from_git if from_git is not None else _snapshots_from_git(ctx, table)
            if entry.version in from_git:
                ctx.store.write_bytes(key, from_git[entry.version])
                fixed = True
        detail = f"snapshot of version {entry.version}"
        problems.append(Problem(kind, table, key, detail, fixable=True, fixed=fixed))
    return problems


def _certifies(raw: bytes, version: str) -> bool:
    try:
        return parse_metadata(raw, key="snapshot").version == version
    except DatomError:
        return False


def _snapshots_from_git(ctx: ProjectContext, table: str) -> dict[str, bytes]:
    """Every version's metadata bytes, recovered from the git history of ``metadata.json``."""
    repo = ctx.require_repo()
    found: dict[str, bytes] = {}
    path = L.git_metadata(table)
    for commit in repo.log(path):
        raw = repo.read_at(commit.id, path)
        if raw is None:
            continue
        try:
            found.setdefault(parse_metadata(raw, key=path).version, raw)
        except DatomError:
            continue
    return found


def _recorded_manifest(raw: bytes | None) -> Mapping[str, Any] | None:
    if raw is None:
        return None
    try:
        doc = load_json(raw, key=L.MANIFEST)
    except DatomError:
        return None
    return convert_manifest_v1(doc) if isinstance(doc, Mapping) else None


def _entries_agree(recorded: Any, rebuilt: dict[str, dict[str, Any]]) -> bool:
    if not isinstance(recorded, Mapping):
        return False
    tables = {
        n: e for n, e in recorded.items() if not (isinstance(e, Mapping) and e.get("kind") == "set")
    }
    if set(tables) != set(rebuilt):
        return False
    for name, entry in tables.items():
        if not isinstance(entry, Mapping):
            return False
        wanted = dict(rebuilt[name])
        wanted["last_updated"] = entry.get("last_updated")  # a clock, recorded nowhere else
        if "original_format" in entry and "original_format" not in wanted:
            wanted["original_format"] = entry["original_format"]  # R 0.1.x records it: not drift
        if dict(entry) != wanted:
            return False
    return True


def _summary_agrees(recorded: Any, rebuilt: Mapping[str, Any]) -> bool:
    if not isinstance(recorded, Mapping):
        return False
    return all(recorded.get(k, v) == v for k, v in rebuilt.items()) and all(
        k in recorded for k in ("total_tables", "total_size_bytes", "total_versions")
    )


def _check_manifest(
    ctx: ProjectContext, docs: _Docs, fix: bool, damaged: set[str]
) -> list[Problem]:
    repo = ctx.require_repo()
    problems = []
    raw = repo.read(L.MANIFEST)
    rebuilt = {name: manifest_entry(meta, hist) for name, (meta, hist) in docs.items()}
    recorded = _recorded_manifest(raw)
    artifacts = recorded.get("artifacts") if recorded else None
    for name in damaged:  # a table git cannot describe keeps its entry: nothing is dropped
        if isinstance(artifacts, Mapping) and isinstance(artifacts.get(name), Mapping):
            rebuilt[name] = dict(artifacts[name])
    for name, entry in rebuilt.items():  # keep what only the manifest records
        old = artifacts.get(name) if isinstance(artifacts, Mapping) else None
        if isinstance(old, Mapping):
            if old.get("last_updated"):
                entry["last_updated"] = old["last_updated"]
            if "original_format" in old and "original_format" not in entry:
                entry["original_format"] = old["original_format"]
    expected = load_json(
        updated_manifest(raw, ctx.project_name, rebuilt, all_tables=True), key=L.MANIFEST
    )
    if (
        recorded is None
        or not _entries_agree(recorded.get("artifacts"), rebuilt)
        or not _summary_agrees(recorded.get("summary"), expected["summary"])
    ):
        if fix:
            raw = updated_manifest(raw, ctx.project_name, rebuilt, all_tables=True)
            repo.commit({L.MANIFEST: raw}, "Rebuild manifest (datom validate --fix)")
            repo.push()
        problems.append(
            Problem(
                "manifest_drift",
                None,
                L.MANIFEST,
                "git manifest differs from the table documents",
                fixable=True,
                fixed=fix,
            )
        )
    stored = _stored(ctx, L.STORE_MANIFEST)
    if stored != raw:
        if fix and raw is not None:
            ctx.store.write_bytes(L.STORE_MANIFEST, raw)
        problems.append(_mirror_problem(None, L.STORE_MANIFEST, stored, fix))
    return problems


def _stored(ctx: ProjectContext, key: str) -> bytes | None:
    try:
        return ctx.store.read_bytes(key)
    except NotFoundError:
        return None
