"""Step 5 of a write, and its repair: making the store's mirror agree with git.

Git is the source of truth; the store holds a copy of each table's documents, an
immutable snapshot per version, and the manifest. The copies are byte-identical to git's
except the history: the store's entries also carry ``commit_sha``, the first commit that
produced each version (FORMAT2.md §5). A value the store already records is never
repointed; a new version gets the commit just made; gaps are derived from git.

Writers in different clones can finish their mirroring out of order, so after mirroring
a writer looks at the remote again and, while it moved, mirrors the newest state of its
table: a writer's last mirror then happened before a look at a remote that no one had
moved since, so every later push is mirrored after it, and a slower writer that lands an
older state afterwards sees the remote moved and repairs it. The last writer to finish
leaves the newest state behind. A look that finds the store already holding the newest
state ends the chase (nothing this writer wrote can regress it any more). Looking only
once is not enough: a re-mirror of the tip can land after the mirror of a still newer
push whose writer has finished looking.
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
from datom_core._project._history_text import (
    history_text,
    remember_store_copy,
    spliced_store_copy,
)
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

_RECENT_SLACK = 4  # commits looked at beyond the number of gaps before walking the log
_MAX_ROUNDS = 10  # looks at a moving remote before leaving the rest to the next writer
# Versions a history names that no commit of git produced (hand-edited or squashed
# history), per clone and table: a later commit can only re-record them, never produce
# them first, so they are not looked for again on every write.
_ABSENT: dict[tuple[str, str], set[str]] = {}


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
    """The newest commit of ``<table>/metadata.json`` whose document is ``version`` (None:
    no commit): the clone's cached newest commit of the file first, then the log."""
    path = L.git_metadata(table)
    newest = repo.last_commit_touching(path)
    raw = repo.read_at(newest, path) if newest is not None else None
    if newest is not None and raw is not None and _version_of(raw, path) == version:
        return newest
    for commit in repo.log(path):
        raw = repo.read_at(commit.id, path)
        if raw is not None and _version_of(raw, path) == version:
            return commit.id
    return None


def store_history(
    ctx: ProjectContext, table: str, git_history: bytes, new: tuple[str, str] | None = None
) -> bytes:
    """The store's copy of ``git_history``: each entry with its ``commit_sha``.

    ``new`` is ``(version, commit)`` for the version just committed. When the store holds
    the copy of the history this one grew from, the new entry is spliced onto it
    (``_history_text``); otherwise every entry is derived.
    """
    key = L.store_history(table)
    git = history_text(git_history, key=L.git_history(table))
    stored = _stored(ctx, key)
    absent = _ABSENT.get((str(ctx.require_repo().path), table), set())
    spliced = spliced_store_copy(git, stored, new, absent, key=key)
    if spliced is not None:
        return spliced
    entries = [dict(h.raw) for h in git.entries]
    recorded = _recorded_commits(stored, table)
    if new is not None:
        recorded.setdefault(new[0], new[1])
    versions = [e.get("version") for e in entries]
    gaps = {v for v in versions if isinstance(v, str) and v not in recorded}
    if gaps:
        recorded.update(_derive(ctx.require_repo(), table, gaps, versions[0]))
    for entry, version in zip(entries, versions, strict=True):
        sha = recorded.get(version) if isinstance(version, str) else None
        if sha is not None:
            entry["commit_sha"] = sha
    out = dump(entries)
    remember_store_copy(out, git, frozenset(v for v in gaps if v not in recorded), key=key)
    return out


def _derive(repo: MetadataRepo, table: str, gaps: set[str], newest: Any) -> dict[str, str]:
    """The commits of ``gaps`` from git. Gaps are mostly the versions of concurrent
    writers that have not mirrored yet, the newest of the table: the newest version from
    the newest commit of the table's metadata, the others from the table's last few
    commits, and only then a walk of its whole log (once per clone and table for versions
    git never produced)."""
    path = L.git_metadata(table)
    found: dict[str, str] = {}
    if newest in gaps:
        commit = repo.last_commit_touching(path)
        raw = repo.read_at(commit, path) if commit is not None else None
        if commit is not None and raw is not None and _version_of(raw, path) == newest:
            found[newest] = commit
    absent = _ABSENT.setdefault((str(repo.path), table), set())
    wanted = gaps - found.keys() - absent
    if wanted:
        for info in repo.log(path, max_entries=len(wanted) + _RECENT_SLACK):  # newest first
            raw = repo.read_at(info.id, path)
            version = _version_of(raw, path) if raw is not None else None
            if version in wanted:
                found[version] = info.id  # the oldest of these commits wins
        wanted -= found.keys()
    if wanted:
        walked = commits_by_version(repo, table)
        found.update({v: walked[v] for v in wanted if v in walked})
        absent.update(v for v in wanted if v not in walked)
    return found


def _version_of(raw: bytes, path: str) -> str | None:
    try:
        return metadata_sha(load(raw, key=path))
    except (DatomError, AttributeError, TypeError):
        return None


def _recorded_commits(stored: bytes | None, table: str) -> dict[str, str]:
    if stored is None:
        return {}
    try:
        return {
            h.version: h.commit_sha
            for h in parse_history(stored, key=L.store_history(table))
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
    """Copy one table's documents to the store, then mirror the newest state of the table
    while the remote moves (see the module docstring). Each look is one fetch of the
    branch tip; a still remote (one writer) costs one."""
    repo = ctx.require_repo()
    _write_mirror(ctx, docs, store_history(ctx, docs.table, docs.history, new))
    head = repo.head()
    for _ in range(_MAX_ROUNDS):
        newest = repo.fetch_and_reset()
        if newest == head:
            return
        head = newest
        if not converge_mirror(ctx, docs.table).stale:
            return  # the newer writers' mirrors landed after ours


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
