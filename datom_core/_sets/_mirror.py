"""Step 5 of a set write, and its repair: the store's copy of what git recorded.

The payload object is stored before anything names the version; the snapshot before the
history and metadata that point at it; the manifest last. The store's history adds
``commit_sha`` to each entry (never repointing one already recorded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from datom_core._checkpoint import checkpoint
from datom_core._git import MetadataRepo
from datom_core._sets import _manifest as M
from datom_core._sets._documents import history_with_commits, set_version
from datom_core._sets._json import document_sha
from datom_core._sets._read import read_json
from datom_core._sets._records import SetWriteResult
from datom_core._store import Store

__all__ = [
    "SetPlan",
    "commits_by_version",
    "converge_set",
    "mirror_set",
    "settle_copies",
]

_MAX_ROUNDS = 10  # looks at a moving remote before leaving the rest to the next writer


@dataclass(frozen=True)
class SetPlan:
    """A set write worked out before anything is written: the documents and their bytes."""

    name: str
    change: str
    data_sha: str
    version: str
    document_sha: str
    member_count: int
    payload: bytes
    metadata: bytes
    history: list[dict[str, Any]]
    manifest: bytes
    upload: bool
    message: str
    converted: bool = False  # the clone's manifest moved from format 1 to format 2
    # project.yaml recording the stores of other projects' members (None: unchanged)
    project_yaml: bytes | None = None

    @property
    def files(self) -> dict[str, bytes]:
        files = {
            M.git_payload(self.name): self.payload,
            M.git_metadata(self.name): self.metadata,
            M.git_history(self.name): M.dump_document(self.history),
            M.MANIFEST: self.manifest,
        }
        if self.project_yaml is not None:
            files[M.PROJECT_YAML] = self.project_yaml
        return files

    def result(self, commit: str | None, uploaded: bool) -> SetWriteResult:
        change: Literal["none", "full"] = "none" if self.change == "none" else "full"
        return SetWriteResult(
            self.name, change, self.version, self.data_sha, self.document_sha,
            self.member_count, commit, uploaded,
        )  # fmt: skip


def converge_set(store: Store, repo: MetadataRepo, plan: SetPlan) -> None:
    """An unchanged set: finish a mirror an interrupted write left behind, if any."""
    history = read_json(store, M.store_history(plan.name)) or []
    stale = (
        store.read_if_present(M.store_metadata(plan.name)) != plan.metadata
        or store.read_if_present(M.STORE_MANIFEST) != plan.manifest
        or [h.get("version") for h in history] != [h.get("version") for h in plan.history]
        or not store.exists(M.store_snapshot(plan.name, plan.version))
        or not store.exists(M.store_payload(plan.name, plan.data_sha))
    )
    if stale and plan.payload and document_sha(plan.payload) == plan.document_sha:
        mirror_set(store, repo, plan, None, upload=True)


def commits_by_version(repo: MetadataRepo, name: str) -> dict[str, str]:
    """Version -> the first commit that recorded it, from git (oldest first)."""
    found: dict[str, str] = {}
    path = M.git_metadata(name)
    for commit in reversed(repo.log(path)):
        raw = repo.read_at(commit.id, path)
        try:
            doc = json.loads(raw) if raw is not None else None
        except ValueError:
            continue
        if isinstance(doc, Mapping):
            found.setdefault(set_version(doc), commit.id)
    return found


def mirror_set(
    store: Store, repo: MetadataRepo, plan: SetPlan, commit: str | None, upload: bool | None = None
) -> bool:
    """Copy the write to the store: the payload before anything names the version."""
    name = plan.name
    uploaded = False
    if plan.upload if upload is None else upload:
        key = M.store_payload(name, plan.data_sha)
        uploaded = store.put_if_absent(key, plan.payload)
        if not uploaded and store.sha256(key) != plan.document_sha:
            store.write_bytes(key, plan.payload)  # an object no recorded version pins
            uploaded = True
    checkpoint("set:mirror:payload")
    store.put_if_absent(M.store_snapshot(name, plan.version), plan.metadata)
    checkpoint("set:mirror:snapshot")
    stored = read_json(store, M.store_history(name)) or []
    derived = {plan.version: commit} if commit else {}
    known = {h.get("version") for h in stored if isinstance(h, Mapping) and h.get("commit_sha")}
    if any(h.get("version") not in known and h.get("version") not in derived for h in plan.history):
        derived = {**commits_by_version(repo, name), **derived}
    history = history_with_commits(plan.history, stored, derived)
    store.write_bytes(M.store_history(name), M.dump_document(history))
    checkpoint("set:mirror:history")
    store.write_bytes(M.store_metadata(name), plan.metadata)
    checkpoint("set:mirror:metadata")
    store.write_bytes(M.STORE_MANIFEST, plan.manifest)
    settle_copies(
        store,
        repo,
        {
            M.store_metadata(name): (M.git_metadata(name), plan.metadata),
            M.STORE_MANIFEST: (M.MANIFEST, plan.manifest),
        },
        repo.head(),
    )
    return uploaded


def settle_copies(
    store: Store, repo: MetadataRepo, mine: dict[str, tuple[str, bytes]], head: str | None
) -> None:
    """Make the plain copies this writer put in the store end as the remote's.

    ``mine`` maps a store key to (its git path, the bytes written). Writers of other
    tables and sets finish their mirrors out of order (``_project._mirror`` settles the
    same way): when the remote moved since ``head``, a copy still holding our bytes is
    ours to bring up to the tip; one rewritten since is its writer's to settle.
    """
    for _ in range(_MAX_ROUNDS):
        newest = repo.fetch_and_reset()
        if newest == head:
            return
        head = newest
        mine = {
            k: (path, data) for k, (path, data) in mine.items() if store.read_if_present(k) == data
        }
        changed = {
            k: (path, tip)
            for k, (path, data) in mine.items()
            if (tip := repo.read(path)) is not None and tip != data
        }
        if not changed:
            return
        for key, (_, data) in changed.items():
            store.write_bytes(key, data)
        mine = changed
