"""``validate``: compare the git repository (the source of truth) with the store.

The clone first catches up with its remote (a fix resets to it; a plain check only
fast-forwards) and the report says whether it could. Finds damaged git documents,
missing or altered parquet objects (``_audit``: by bytes, or by content), missing or stale
mirrors, snapshots that differ from the document git recorded for their version (even
one that still certifies itself), manifest drift, and temp objects of killed writers.
The store's history is compared with git's modulo ``commit_sha`` (only the store records
it). With ``fix=True`` it repairs what git can restore: mirrors, snapshots, the manifest,
a ``version_history.json`` removed from git, keeping every ``commit_sha`` the store
recorded, and removes old temp objects. Data that is gone or altered cannot be recreated
from git; those problems stay unfixed and are reported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from datom_core._errors import DatomError, GitError
from datom_core._project import _layout as L
from datom_core._project._audit import (
    RecordedDocuments,
    check_data,
    check_snapshots,
    check_temp_objects,
    restore_document,
)
from datom_core._project._build import updated_manifest
from datom_core._project._context import ProjectContext
from datom_core._project._documents import manifest_entry
from datom_core._project._door import check_write_door
from datom_core._project._mirror import history_agrees, store_history
from datom_core._project._model import HistoryEntry, TableMetadata
from datom_core._project._orphans import check_orphans
from datom_core._project._parse import convert_manifest_v1, load_json, parse_history, parse_metadata
from datom_core._project._records import Problem, ValidationReport
from datom_core._project._verify import Verify, check_verify

__all__ = ["validate"]

_Docs = dict[str, tuple[TableMetadata, tuple[HistoryEntry, ...]]]


def validate(
    ctx: ProjectContext, *, fix: bool, verify_data: bool | Verify, grace_s: float = 3600
) -> ValidationReport:
    repo = ctx.require_repo("validate (it checks the store against what git recorded)")
    verify: Verify | None = (
        check_verify(verify_data)
        if isinstance(verify_data, str)
        else "bytes"
        if verify_data
        else None
    )
    # A check needs nothing written: a read-only clone (an auditor's mount) is checked
    # as it is, without the clone's lock or a fetch (neither can be written there).
    writable = fix or os.access(repo.path / ".git", os.W_OK)
    with repo.lock() if writable else nullcontext():
        fetched, remote = _catch_up(ctx, fix) if writable else _READ_ONLY
        if fix:
            check_write_door(repo, None)
        problems: list[Problem] = []
        docs = _table_docs(ctx, problems, fix)
        for table, (_metadata, history) in docs.items():
            recorded = RecordedDocuments(ctx, table)
            problems += check_data(ctx, table, history, recorded, verify)
            problems += _check_mirror(ctx, table, fix)
            problems += check_snapshots(ctx, table, history, recorded, fix)
        damaged = {
            p.table
            for p in problems
            if p.kind == "corrupt_git_document" and p.table and not p.fixed
        }
        problems += _check_manifest(ctx, docs, fix, damaged)
        problems += check_temp_objects(ctx, grace_s, fix)
        histories = {table: history for table, (_m, history) in docs.items()}
        problems += check_orphans(ctx, histories, _unjudged(ctx, docs), grace_s, fix)
    return ValidationReport(tuple(problems), fetched, remote)


_READ_ONLY = (False, "compared with the clone as it is: it is read-only, so it was not fetched")


def _unjudged(ctx: ProjectContext, docs: _Docs) -> set[str]:
    """Names git holds whose store objects the orphan check must not judge: sets, and
    tables whose documents are damaged."""
    names = ctx.require_repo().tree().directories()
    return {name for name in names if not name.startswith(".") and name not in docs}


def _catch_up(ctx: ProjectContext, fix: bool) -> tuple[bool, str]:
    """Bring the clone up to its remote first, so that the store is judged against the
    newest history: a fix resets to it; a plain check only fast-forwards (it never drops
    local work). Returns what was done, for the report."""
    repo = ctx.require_repo()
    try:
        if fix:
            repo.fetch_and_reset()
        else:
            repo.pull()
    except GitError as e:
        return False, f"compared with the clone as last fetched: could not catch up ({e})"
    return True, f"fetched {repo.remote_url} first"


def _table_docs(ctx: ProjectContext, problems: list[Problem], fix: bool) -> _Docs:
    head = ctx.require_repo().tree()  # git's, whatever the working tree holds (sparse)
    docs = {}
    for name in sorted(head.directories()):
        if (
            name.startswith(".")
            or head.entry(L.git_metadata(name)) is None
            or head.entry(f"{name}/{L.SET_PAYLOAD}") is not None  # a set: _sets._validate
        ):
            continue
        found = _documents(ctx, name, problems, fix)
        if found is not None:
            docs[name] = found
    return docs


def _documents(
    ctx: ProjectContext, table: str, problems: list[Problem], fix: bool
) -> tuple[TableMetadata, tuple[HistoryEntry, ...]] | None:
    """The table's two git documents, each restored from git's last good copy (with the
    fix) when it is missing or of the wrong shape; None while either stays damaged."""
    repo = ctx.require_repo()
    meta_path, hist_path = L.git_metadata(table), L.git_history(table)
    metadata, history = (
        _parsed(repo.read(meta_path), meta_path),
        _parsed(repo.read(hist_path), hist_path),
    )
    if metadata is None and isinstance(history, tuple):
        versions = {h.version for h in history}
        problem, raw = restore_document(
            ctx, table, meta_path, lambda d: _version_of(d, meta_path) in versions, fix
        )
        problems.append(problem)
        metadata = _parsed(raw, meta_path) if raw is not None else None
    elif isinstance(metadata, TableMetadata) and history is None:
        current = metadata.version
        problem, raw = restore_document(
            ctx, table, hist_path, lambda d: current in _versions_in(d, hist_path), fix
        )
        problems.append(problem)
        history = _parsed(raw, hist_path) if raw is not None else None
    elif metadata is None or history is None:
        detail = "neither metadata.json nor version_history.json is readable in git"
        problems.append(Problem("corrupt_git_document", table, meta_path, detail, fixable=False))
    if isinstance(metadata, TableMetadata) and isinstance(history, tuple):
        return metadata, history
    return None


def _parsed(raw: bytes | None, key: str) -> Any:
    """The parsed document, or None if it is missing or does not parse."""
    if raw is None:
        return None
    try:
        return (
            parse_history(raw, key=key)
            if key.endswith("version_history.json")
            else parse_metadata(raw, key=key)
        )
    except DatomError:
        return None


def _version_of(raw: bytes, key: str) -> str | None:
    metadata = _parsed(raw, key)
    return metadata.version if isinstance(metadata, TableMetadata) else None


def _versions_in(raw: bytes, key: str) -> set[str]:
    history = _parsed(raw, key)
    return {h.version for h in history} if isinstance(history, tuple) else set()


def _check_mirror(ctx: ProjectContext, table: str, fix: bool) -> list[Problem]:
    repo = ctx.require_repo()
    problems = []
    git_meta = repo.read(L.git_metadata(table)) or b""
    stored_meta = ctx.store.read_if_present(L.store_metadata(table))
    if stored_meta != git_meta:
        if fix:
            ctx.store.write_bytes(L.store_metadata(table), git_meta)
        problems.append(_mirror_problem(table, L.store_metadata(table), stored_meta, fix))
    git_hist = repo.read(L.git_history(table)) or b"[]"
    stored_hist = ctx.store.read_if_present(L.store_history(table))
    if not history_agrees(stored_hist, git_hist, table):
        if fix:
            ctx.store.write_bytes(L.store_history(table), store_history(ctx, table, git_hist))
        problems.append(_mirror_problem(table, L.store_history(table), stored_hist, fix))
    return problems


def _mirror_problem(table: str | None, key: str, stored: bytes | None, fix: bool) -> Problem:
    kind = "missing_mirror" if stored is None else "stale_mirror"
    return Problem(kind, table, key, "differs from git's copy", fixable=True, fixed=fix)


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
    stored = ctx.store.read_if_present(L.STORE_MANIFEST)
    if stored != raw:
        if fix and raw is not None:
            ctx.store.write_bytes(L.STORE_MANIFEST, raw)
        problems.append(_mirror_problem(None, L.STORE_MANIFEST, stored, fix))
    return problems
