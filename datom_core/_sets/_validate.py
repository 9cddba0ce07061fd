"""``validate`` for the sets of a product repo: each set's store copy against git.

The table checks (``_project._validate``) pass over set folders; this looks at them. For
each set the clone records, the store must hold what its current version needs: the
payload object (``<name>/<data_sha>.json``, matching the recorded ``document_sha``), the
snapshot of that version (the metadata git recorded, byte for byte), and mirrors of the
metadata and history (the history's versions in git's order; the store adds
``commit_sha``). With ``fix=True`` a damaged copy is written again from git, as an
interrupted set write's own repair does (``_mirror.mirror_set``), unless git's own
documents are damaged: those are reported and left, as for tables. The members' data is
not looked at here (``verify_set`` does that, project by project).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from datom_core._errors import DatomError
from datom_core._git import MetadataRepo
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._records import Problem
from datom_core._sets import _manifest as M
from datom_core._sets._documents import set_version
from datom_core._sets._json import document_sha
from datom_core._sets._mirror import SetPlan, mirror_set
from datom_core._sets._read import read_json
from datom_core._store import Store

__all__ = ["validate_sets"]


def validate_sets(ctx: ProjectContext, *, fix: bool) -> list[Problem]:
    """The problems of every set the clone records (each marked fixed once repaired)."""
    repo = ctx.require_repo()
    problems: list[Problem] = []
    writable = fix or os.access(repo.path / ".git", os.W_OK)  # a check of a read-only mount
    with repo.lock() if writable else nullcontext():
        for name in _set_names(repo):
            plan = _plan_from_git(repo, name, problems)
            if plan is not None:
                problems += _check_copies(ctx.store, repo, plan, fix)
    return problems


def _set_names(repo: MetadataRepo) -> list[str]:
    head = repo.tree()  # git's, whatever the working tree holds (sparse)
    return sorted(
        name
        for name in head.directories()
        if not name.startswith(".")
        and head.entry(f"{name}/{L.SET_PAYLOAD}") is not None
        and head.entry(f"{name}/metadata.json") is not None
    )


def _plan_from_git(repo: MetadataRepo, name: str, problems: list[Problem]) -> SetPlan | None:
    """What git records for the set's current version, as a mirror of it would write it;
    None (and a problem) when git's own documents are damaged."""
    meta_key, hist_key, payload_key = M.git_metadata(name), M.git_history(name), M.git_payload(name)
    raw_meta, payload = repo.read(meta_key) or b"", repo.read(payload_key) or b""
    try:
        metadata = M.parsed_document(raw_meta, meta_key)
        history = M.parsed_document(repo.read(hist_key), hist_key)
    except DatomError as e:
        problems.append(_git_damage(name, meta_key, str(e)))
        return None
    if not isinstance(metadata, Mapping) or not isinstance(history, list):
        problems.append(
            _git_damage(name, meta_key, "metadata or version history of the wrong shape")
        )
        return None
    recorded = str(metadata.get("document_sha", ""))
    if document_sha(payload) != recorded:
        detail = f"set.json does not match the document_sha its metadata records ({recorded[:12]})"
        problems.append(_git_damage(name, payload_key, detail))
        return None
    return SetPlan(
        name, "none", str(metadata.get("data_sha", "")), set_version(metadata), recorded, 0,
        payload, raw_meta, history, repo.read(M.MANIFEST) or b"", True, "",
    )  # fmt: skip


def _git_damage(name: str, key: str, detail: str) -> Problem:
    return Problem(
        "corrupt_git_document", name, key,
        f"set {name!r}: {detail}; restore it from git history (git checkout / git revert)",
        fixable=False,
    )  # fmt: skip


def _check_copies(store: Store, repo: MetadataRepo, plan: SetPlan, fix: bool) -> list[Problem]:
    found = _findings(store, plan)
    if not found or not fix:
        return found
    hist = M.store_history(plan.name)
    if _stored_history(store, hist) is None and store.exists(hist):
        store.delete(hist)  # not JSON: the mirror would refuse to merge its commit_sha
    mirror_set(store, repo, plan, None, upload=True)
    snapshot = M.store_snapshot(plan.name, plan.version)
    if store.read_if_present(snapshot) != plan.metadata:  # put_if_absent kept an altered one
        store.write_bytes(snapshot, plan.metadata)
    left = {(p.kind, p.key) for p in _findings(store, plan)}
    return [
        Problem(p.kind, p.table, p.key, p.detail, p.fixable, fixed=(p.kind, p.key) not in left)
        for p in found
    ]


def _findings(store: Store, plan: SetPlan) -> list[Problem]:
    name, out = plan.name, []
    payload = M.store_payload(name, plan.data_sha)
    if not store.exists(payload):
        out.append(_problem("missing_payload", name, payload, "is missing"))
    elif store.sha256(payload) != plan.document_sha:
        out.append(_problem("payload_mismatch", name, payload, "does not match its document_sha"))
    snapshot = M.store_snapshot(name, plan.version)
    stored = store.read_if_present(snapshot)
    if stored is None:
        out.append(_problem("missing_snapshot", name, snapshot, "is missing"))
    elif stored != plan.metadata:
        out.append(_problem("altered_snapshot", name, snapshot, "differs from git's metadata"))
    meta = M.store_metadata(name)
    if store.read_if_present(meta) != plan.metadata:
        out.append(_problem("stale_mirror", name, meta, "differs from git's metadata.json"))
    hist = M.store_history(name)
    if _versions(_stored_history(store, hist)) != _versions(plan.history):
        out.append(_problem("stale_mirror", name, hist, "lists other versions than git's history"))
    return out


def _problem(kind: str, name: str, key: str, what: str) -> Problem:
    return Problem(kind, name, key, f"set {name!r}: {key} {what}", fixable=True)


def _stored_history(store: Store, key: str) -> Any:
    """The store's history document; None when it is absent or not JSON."""
    try:
        return read_json(store, key)
    except DatomError:
        return None


def _versions(history: Any) -> list[Any]:
    if not isinstance(history, list):
        return []
    return [h.get("version") for h in history if isinstance(h, Mapping)]
