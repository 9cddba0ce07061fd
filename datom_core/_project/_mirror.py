"""Step 5 of a write, and its repair: making the store's mirror agree with git.

Git is the source of truth; the store holds a copy of each table's documents, an
immutable snapshot per version, and the manifest. The copies are byte-identical to git's
except the history: the store's entries also carry ``commit_sha``, the first commit that
produced each version (FORMAT2.md §5). A value the store already records is never
repointed; a new version gets the commit just made; gaps are derived from git.

Writers in different clones can finish their mirroring out of order, so after mirroring
a writer looks at the remote again and re-mirrors the newest state if it moved: the last
writer to finish always leaves the newest state behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, NotFoundError
from datom_core._git import MetadataRepo
from datom_core._identity._canonical import metadata_sha
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import dump, load
from datom_core._project._parse import parse_history, parse_metadata

__all__ = [
    "Converged",
    "TableDocuments",
    "commits_by_version",
    "converge_mirror",
    "mirror_table",
    "newest_commit_of",
    "history_agrees",
    "store_history",
    "without_commit_sha",
]

_MAX_ROUNDS = 10


@dataclass(frozen=True)
class TableDocuments:
    """One table's documents as git holds them: the bytes the store must mirror."""

    table: str
    metadata: bytes
    history: bytes
    manifest: bytes

    @property
    def version(self) -> str:
        return parse_metadata(self.metadata, key=L.git_metadata(self.table)).version


def without_commit_sha(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """History entries as git records them (the store's ``commit_sha`` removed)."""
    return [{k: v for k, v in e.items() if k != "commit_sha"} for e in entries]


def commits_by_version(repo: MetadataRepo, table: str) -> dict[str, str]:
    """The first commit that produced each version of ``table``, walking git oldest first."""
    path = L.git_metadata(table)
    found: dict[str, str] = {}
    for commit in reversed(repo.log(path)):
        raw = repo.read_at(commit.id, path)
        if raw is None:
            continue
        try:
            found.setdefault(metadata_sha(load(raw, key=path)), commit.id)
        except (DatomError, AttributeError, TypeError):
            continue
    return found


def newest_commit_of(repo: MetadataRepo, table: str, version: str) -> str | None:
    """The newest commit of ``<table>/metadata.json`` whose document is ``version``."""
    path = L.git_metadata(table)
    for commit in repo.log(path):
        raw = repo.read_at(commit.id, path)
        if raw is not None and parse_metadata(raw, key=path).version == version:
            return commit.id
    return None


def store_history(
    ctx: ProjectContext, table: str, git_history: bytes, new: tuple[str, str] | None = None
) -> bytes:
    """The store's copy of ``git_history``: each entry with its ``commit_sha``.

    ``new`` is ``(version, commit)`` for the version just committed.
    """
    entries = [dict(h.raw) for h in parse_history(git_history, key=L.git_history(table))]
    recorded = _recorded_commits(ctx, table)
    derived: dict[str, str] | None = None
    for entry in entries:
        version = entry.get("version")
        sha = recorded.get(version) if isinstance(version, str) else None
        if sha is None and new is not None and version == new[0]:
            sha = new[1]
        if sha is None and isinstance(version, str):
            if derived is None:
                derived = commits_by_version(ctx.require_repo(), table)
            sha = derived.get(version)
        if sha is not None:
            entry["commit_sha"] = sha
    return dump(entries)


def _recorded_commits(ctx: ProjectContext, table: str) -> dict[str, str]:
    raw = _stored(ctx, L.store_history(table))
    if raw is None:
        return {}
    try:
        return {
            h.version: h.commit_sha
            for h in parse_history(raw, key=L.store_history(table))
            if h.commit_sha
        }
    except DatomError:
        return {}  # damaged: rebuilt from git


def history_agrees(stored: bytes | None, git_history: bytes, table: str) -> bool:
    """Whether the store's history is git's, modulo ``commit_sha`` (only the store has it;
    a previous release's store copy has none, and is not stale for that)."""
    if stored is None:
        return False
    try:
        store_entries = [h.raw for h in parse_history(stored, key=L.store_history(table))]
        git_entries = [h.raw for h in parse_history(git_history, key=L.git_history(table))]
    except DatomError:
        return False
    return without_commit_sha(store_entries) == without_commit_sha(git_entries)


def mirror_table(
    ctx: ProjectContext, docs: TableDocuments, new: tuple[str, str] | None = None
) -> None:
    """Copy one table's documents to the store, then chase the remote until it is still."""
    repo = ctx.require_repo()
    _write_mirror(ctx, docs, store_history(ctx, docs.table, docs.history, new))
    head = repo.head()
    for _ in range(_MAX_ROUNDS):
        newest = repo.fetch_and_reset()
        if newest == head:
            return
        head = newest
        converge_mirror(ctx, docs.table)


@dataclass(frozen=True)
class Converged:
    """What :func:`converge_mirror` rewrote, and the commit the store records for the
    current version (so that a ``none`` write reports it without walking git)."""

    stale: tuple[str, ...]
    commit: str | None


def converge_mirror(ctx: ProjectContext, table: str) -> Converged:
    """Rewrite whatever the store holds differently from git for ``table``.

    A store history whose current version lacks its ``commit_sha`` (a previous release's
    copy) is rewritten too: the gap is derived from git once, then recorded.
    """
    repo = ctx.require_repo()
    metadata, history, manifest = (
        repo.read(p) for p in (L.git_metadata(table), L.git_history(table), L.MANIFEST)
    )
    if metadata is None or history is None or manifest is None:
        return Converged((), None)
    docs = TableDocuments(table, metadata, history, manifest)
    stale = [
        key
        for key, data in ((L.store_metadata(table), metadata), (L.STORE_MANIFEST, manifest))
        if _stored(ctx, key) != data
    ]
    stored_history = _stored(ctx, L.store_history(table))
    commit = _commit_of(stored_history, table, docs.version)
    if commit is None or not history_agrees(stored_history, history, table):
        stale.insert(0, L.store_history(table))
    snapshot = L.store_snapshot(table, docs.version)
    if not ctx.store.exists(snapshot):
        stale.insert(0, snapshot)
    if stale:
        written = store_history(ctx, table, history)
        _write_mirror(ctx, docs, written)
        commit = _commit_of(written, table, docs.version)
    return Converged(tuple(stale), commit)


def _commit_of(history: bytes | None, table: str, version: str) -> str | None:
    if history is None:
        return None
    try:
        entries = parse_history(history, key=L.store_history(table))
    except DatomError:
        return None
    return next((h.commit_sha for h in entries if h.version == version), None)


def _write_mirror(ctx: ProjectContext, docs: TableDocuments, history: bytes) -> None:
    # Order matters for readers: the snapshot exists before anything names the version.
    store, table = ctx.store, docs.table
    store.put_if_absent(L.store_snapshot(table, docs.version), docs.metadata)
    checkpoint("mirror:snapshot")
    store.write_bytes(L.store_history(table), history)
    checkpoint("mirror:history")
    store.write_bytes(L.store_metadata(table), docs.metadata)
    checkpoint("mirror:metadata")
    store.write_bytes(L.STORE_MANIFEST, docs.manifest)


def _stored(ctx: ProjectContext, key: str) -> bytes | None:
    try:
        return ctx.store.read_bytes(key)
    except NotFoundError:
        return None
