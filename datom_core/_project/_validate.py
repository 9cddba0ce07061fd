"""``validate``: compare the git repository (the source of truth) with the store.

Finds missing or altered parquet objects, missing or stale mirrors and snapshots, and
manifest drift. With ``fix=True`` it repairs what git can restore: mirrors, snapshots
(from the git history of each ``metadata.json``) and the manifest. Data that is gone or
altered cannot be recreated from git; those problems stay unfixed and are reported.
"""

from __future__ import annotations

from typing import Any

from datom_core._errors import DatomError, NotFoundError
from datom_core._identity._canonical import metadata_sha
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import assemble_manifest, dump, load, manifest_entry
from datom_core._project._records import Problem, ValidationReport

__all__ = ["validate"]


def validate(ctx: ProjectContext, *, fix: bool, verify_data: bool) -> ValidationReport:
    repo = ctx.require_repo()
    with repo.lock():
        if fix:
            repo.fetch_and_reset()
        problems: list[Problem] = []
        docs = _table_docs(ctx, problems)
        for table, (_metadata, history) in docs.items():
            problems += _check_data(ctx, table, history, verify_data)
            problems += _check_mirror(ctx, table, fix)
            problems += _check_snapshots(ctx, table, history, fix)
        problems += _check_manifest(ctx, docs, fix)
    return ValidationReport(tuple(problems))


def _table_docs(
    ctx: ProjectContext, problems: list[Problem]
) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    docs = {}
    for child in sorted(ctx.require_repo().path.iterdir()):
        meta_path, hist_path = L.git_metadata(child.name), L.git_history(child.name)
        if (
            not child.is_dir()
            or child.name.startswith(".")
            or not (child / "metadata.json").exists()
        ):
            continue
        try:
            metadata = load(ctx.require_repo().read(meta_path) or b"", key=meta_path)
            history = load(ctx.require_repo().read(hist_path) or b"[]", key=hist_path)
        except DatomError as e:
            problems.append(
                Problem("corrupt_git_document", child.name, meta_path, str(e), fixable=False)
            )
            continue
        docs[child.name] = (metadata, list(history))
    return docs


def _check_data(
    ctx: ProjectContext, table: str, history: list[dict[str, Any]], verify: bool
) -> list[Problem]:
    problems, checked = [], set()
    for entry in history:
        key = L.store_parquet(table, entry["data_sha"])
        if key in checked:
            continue
        checked.add(key)
        if not ctx.store.exists(key):
            problems.append(
                Problem(
                    "missing_parquet",
                    table,
                    key,
                    f"version {entry['version']} pins it",
                    fixable=False,
                )
            )
        elif verify and entry.get("parquet_sha"):
            actual = ctx.store.sha256(key)
            if actual != entry["parquet_sha"]:
                detail = f"expected {entry['parquet_sha']}, actual {actual}"
                problems.append(Problem("parquet_mismatch", table, key, detail, fixable=False))
    return problems


def _check_mirror(ctx: ProjectContext, table: str, fix: bool) -> list[Problem]:
    problems = []
    for git_path, key in (
        (L.git_metadata(table), L.store_metadata(table)),
        (L.git_history(table), L.store_history(table)),
    ):
        wanted = ctx.require_repo().read(git_path)
        stored = _stored(ctx, key)
        if stored != wanted:
            kind = "missing_mirror" if stored is None else "stale_mirror"
            if fix:
                ctx.store.write_bytes(key, wanted)
            problems.append(
                Problem(kind, table, key, f"differs from git's {git_path}", fixable=True, fixed=fix)
            )
    return problems


def _check_snapshots(
    ctx: ProjectContext, table: str, history: list[dict[str, Any]], fix: bool
) -> list[Problem]:
    problems, from_git = [], None
    for entry in history:
        version = entry["version"]
        key = L.store_snapshot(table, version)
        stored = _stored(ctx, key)
        if stored is not None and _certifies(stored, version):
            continue
        kind = "missing_snapshot" if stored is None else "altered_snapshot"
        fixed = False
        if fix:
            from_git = from_git if from_git is not None else _snapshots_from_git(ctx, table)
            if version in from_git:
                ctx.store.write_bytes(key, from_git[version])
                fixed = True
        problems.append(
            Problem(kind, table, key, f"snapshot of version {version}", fixable=True, fixed=fixed)
        )
    return problems


def _certifies(raw: bytes, version: str) -> bool:
    try:
        return metadata_sha(load(raw, key="snapshot")) == version
    except (DatomError, TypeError, KeyError, AttributeError):
        return False


def _snapshots_from_git(ctx: ProjectContext, table: str) -> dict[str, bytes]:
    """Every version's metadata bytes, recovered from the git history of ``metadata.json``."""
    found: dict[str, bytes] = {}
    path = L.git_metadata(table)
    for commit in ctx.require_repo().log(path):
        raw = ctx.require_repo().read_at(commit.id, path)
        if raw is None:
            continue
        try:
            found.setdefault(metadata_sha(load(raw, key=path)), raw)
        except DatomError:
            continue
    return found


def _check_manifest(ctx: ProjectContext, docs: dict[str, Any], fix: bool) -> list[Problem]:
    problems = []
    raw = ctx.require_repo().read(L.MANIFEST)
    rebuilt = {name: manifest_entry(meta, hist) for name, (meta, hist) in docs.items()}
    try:
        recorded = load(raw, key=L.MANIFEST) if raw is not None else None
    except DatomError:
        recorded = None
    if (
        recorded is None
        or recorded.get("tables") != rebuilt
        or recorded.get("summary") != _summary(rebuilt)
    ):
        if fix:
            raw = dump(assemble_manifest(ctx.project_name, rebuilt))
            ctx.require_repo().commit({L.MANIFEST: raw}, "Rebuild manifest (datom validate --fix)")
            ctx.require_repo().push()
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
        if fix:
            ctx.store.write_bytes(L.STORE_MANIFEST, raw)
        kind = "missing_mirror" if stored is None else "stale_mirror"
        problems.append(
            Problem(
                kind, None, L.STORE_MANIFEST, "differs from git's manifest", fixable=True, fixed=fix
            )
        )
    return problems


def _summary(entries: dict[str, Any]) -> dict[str, int]:
    return assemble_manifest("", entries)["summary"]


def _stored(ctx: ProjectContext, key: str) -> bytes | None:
    try:
        return ctx.store.read_bytes(key)
    except NotFoundError:
        return None
