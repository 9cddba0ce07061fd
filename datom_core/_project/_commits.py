"""The store's copy of a history: each entry with the commit that produced its version.

The store's history is git's plus ``commit_sha`` on each entry, the first commit that
produced that version (FORMAT2.md §5). A value the store already records is never
repointed; a new version gets the commit just made; gaps are derived from git: they are
mostly the versions of concurrent writers that have not mirrored yet, found among the few
commits since the one the store's copy names last.
A version's ``metadata_sha`` is computed once per distinct document text: a writer that
looks at the same commits again, or at a document another writer just produced, reads it
back from memory. A writer puts its version's snapshot in the store before it pushes;
a gap a few seconds old whose snapshot is missing was pushed by a writer that does not
(R, an earlier release) and died after its push (or is slow): its snapshot is put in the
store before the copy naming it (:func:`_restore_snapshots`).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import EllipsisType
from typing import Any

from datom_core._errors import DatomError
from datom_core._git import MetadataRepo
from datom_core._identity._canonical import metadata_sha
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import load
from datom_core._project._history_text import (
    history_text,
    mirrored_text,
    printed,
    remember_store_copy,
    spliced_store_copy,
)
from datom_core._project._model import HistoryEntry

__all__ = [
    "commits_by_version",
    "history_agrees",
    "newest_commit_of",
    "parsed_history",
    "store_history",
    "version_of",
    "without_commit_sha",
]

# Seconds after its entry's timestamp within which a gap is left to its writer: a live one
# mirrors within milliseconds of its push. Only a cost, never correctness, rides on it: a
# snapshot written twice has the same bytes; 0 made a fifth of contended writes write one,
# 2 none in bench_concurrency (tmpfs and disk). The stamp has whole seconds, so 2 leaves
# at least one; short enough for a step re-run after its process was killed (5 was not).
LIVE_MIRROR = 2.0
_RECENT_SLACK = 4  # commits looked at beyond the number of gaps before walking the log
_WALK_MAX = 64  # commits since the store copy's newest one read before asking the log
# Versions a history names that no commit of git produced (hand-edited or squashed
# history), per clone and table: a later commit can only re-record them, never produce
# them first, so they are not looked for again on every write.
_ABSENT: dict[tuple[str, str], set[str]] = {}


def parsed_history(raw: bytes, *, key: str) -> tuple[HistoryEntry, ...]:
    """:func:`parse_history` of ``raw``, kept by content (errors raised, never kept): a
    write (and a none write, every Dagster materialization) parses the git and store
    copies of one history several times, a visible cost for a long history. Kept with the
    git texts (:func:`_history_text.history_text`), so a copy grown from a kept one is
    parsed for its new entries only."""
    return history_text(raw, key=key).entries


def without_commit_sha(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """History entries as git records them (the store's ``commit_sha`` removed)."""
    return [{k: v for k, v in e.items() if k != "commit_sha"} for e in entries]


@lru_cache(maxsize=4096)
def version_of(raw: bytes) -> str | None:
    """The ``metadata_sha`` of a ``metadata.json`` text (None: not a metadata document).
    Kept per distinct text: the same blob is met again by every look at the same commits."""
    try:
        return metadata_sha(load(raw, key="metadata.json"))
    except (DatomError, AttributeError, TypeError):
        return None


def commits_by_version(repo: MetadataRepo, table: str) -> dict[str, str]:
    """The first commit that produced each version of ``table``, walking git oldest first."""
    path = L.git_metadata(table)
    found: dict[str, str] = {}
    for commit in reversed(repo.log(path)):
        raw = repo.read_at(commit.id, path)
        version = version_of(raw) if raw is not None else None
        if version is not None:
            found.setdefault(version, commit.id)
    return found


def newest_commit_of(repo: MetadataRepo, table: str, version: str) -> str | None:
    """The newest commit of ``<table>/metadata.json`` whose document is ``version`` (None:
    no commit): the clone's cached newest commit of the file first, then the log."""
    path = L.git_metadata(table)
    newest = repo.last_commit_touching(path)
    raw = repo.read_at(newest, path) if newest is not None else None
    if newest is not None and raw is not None and version_of(raw) == version:
        return newest
    for commit in repo.log(path):
        raw = repo.read_at(commit.id, path)
        if raw is not None and version_of(raw) == version:
            return commit.id
    return None


def store_history(
    ctx: ProjectContext,
    table: str,
    git_history: bytes,
    new: tuple[str, str] | None = None,
    kept: bytes | None | EllipsisType = ...,
) -> bytes:
    """The store's copy of ``git_history``: each entry with its ``commit_sha``.

    ``new`` is ``(version, commit)`` for the version just committed. When the store holds
    the copy of the history this one grew from, the new entry is spliced onto it
    (``_history_text``); otherwise every entry is derived. ``kept``: the store's copy,
    read already.
    """
    out = _store_history(ctx, table, git_history, new, derive=True, kept=kept)
    assert out is not None
    return out


def store_history_without_git(
    ctx: ProjectContext,
    table: str,
    git_history: bytes,
    new: tuple[str, str],
    kept: bytes | None | EllipsisType = ...,
) -> bytes | None:
    """:func:`store_history` when no commit has to be looked up in the clone (which may
    be moving meanwhile); None when one would be. ``kept``: the store's copy, read
    already (a copy older than the store's now lacks a commit: None, as above)."""
    return _store_history(ctx, table, git_history, new, derive=False, kept=kept)


def _store_history(
    ctx: ProjectContext,
    table: str,
    git_history: bytes,
    new: tuple[str, str] | None,
    *,
    derive: bool,
    kept: bytes | None | EllipsisType = ...,
) -> bytes | None:
    key = L.store_history(table)
    git = history_text(git_history, key=L.git_history(table))
    if isinstance(kept, EllipsisType):  # not read yet
        kept = ctx.store.read_if_present(key)
    absent = _ABSENT.get((str(ctx.require_repo().path), table), set())
    spliced = spliced_store_copy(git, kept, new, absent, key=key)
    if spliced is not None:
        return spliced
    entries = [dict(h.raw) for h in git.entries]
    recorded, anchor = _recorded_commits(kept, table)
    if new is not None:
        recorded.setdefault(new[0], new[1])
    versions = [e.get("version") for e in entries]
    gaps = {v for v in versions if isinstance(v, str) and v not in recorded}
    # Versions known to be absent from git are not looked for again: a squashed history's
    # hundreds would make every write of another clone walk that many commits.
    wanted = gaps - absent
    if wanted and not derive:
        return None
    if wanted:
        repo = ctx.require_repo()
        since = _since(repo, table, wanted, anchor)
        found = since if since is not None else _derive(repo, table, wanted, versions[0])
        recorded.update(found)
        _restore_snapshots(ctx, table, entries, found)
    for entry, version in zip(entries, versions, strict=True):
        sha = recorded.get(version) if isinstance(version, str) else None
        if sha is not None:
            entry["commit_sha"] = sha
    out = printed(entries, kept, key=key)  # onto the copy it grew from, if it did
    remember_store_copy(out, git, frozenset(v for v in gaps if v not in recorded), key=key)
    return out


def _restore_snapshots(
    ctx: ProjectContext, table: str, entries: Sequence[Mapping[str, Any]], found: Mapping[str, str]
) -> None:
    """Put in the store the snapshot of each version another writer recorded
    :data:`LIVE_MIRROR` seconds ago or more and has not mirrored (killed after its push,
    and one that does not put the snapshot first: R, an earlier release), before a history
    naming it is.

    Reading that version by id, or a data cut pinning it, resolves its snapshot; the
    next writer of the table is the first to meet it (the store's copy lacks it), and the
    one after finds it recorded. A younger version is its live writer's to mirror (so
    contended writers do not write each other's); ``validate(fix=True)`` restores any one
    missed. The age is the entry's ``timestamp`` (set before the upload, so a big table's
    live writer may see its snapshot written by another: the same bytes).
    """
    cutoff, left = time.time() - LIVE_MIRROR, len(found)
    for entry in entries:  # newest first, as the gaps mostly are
        if not left:
            return
        version = entry.get("version")
        if not isinstance(version, str) or version not in found:
            continue
        commit, left = found[version], left - 1
        if _entry_time(entry) > cutoff:
            continue
        key = L.store_snapshot(table, version)
        if ctx.store.exists(key):
            continue
        raw = ctx.require_repo().read_at(commit, L.git_metadata(table))
        if raw is not None and version_of(raw) == version:  # it certifies itself
            ctx.store.put_content_named(key, raw)


def _entry_time(entry: Mapping[str, Any]) -> float:
    """An entry's ``timestamp`` in seconds (0, the distant past, when it has none)."""
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return 0.0
    try:
        when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def _since(
    repo: MetadataRepo, table: str, gaps: set[str], anchor: str | None
) -> dict[str, str] | None:
    """The commits of ``gaps`` from the commits since ``anchor``, the commit of the newest
    version the store's copy records: a version that copy lacks was first produced after
    it (the copy mirrors a history that would list it otherwise), so the oldest commit
    since ``anchor`` holding it is the one that produced it. With no store copy
    (``anchor`` None: a new table, whose first writers have not mirrored yet) the walk
    ends where the table does not exist yet. The few commits concurrent writers added are
    read, not the table's whole log (which a fresh process would index whole, one tree
    diff per commit of the project). None when the walk's end is not among the last
    ``_WALK_MAX`` commits or a gap is not found before it."""
    path = L.git_metadata(table)
    for limit in (len(gaps) + _RECENT_SLACK, _WALK_MAX):  # mostly one commit per gap
        found: dict[str, str] = {}
        commits = repo.log(max_entries=limit)  # newest first
        for info in commits:
            if info.id == anchor:
                return found if gaps <= found.keys() else None
            raw = repo.read_at(info.id, path)
            if raw is None and anchor is None:  # before the table: nothing older holds it
                return found if gaps <= found.keys() else None
            version = version_of(raw) if raw is not None else None
            if version in gaps:
                found[version] = info.id  # the oldest of these commits wins
        if len(commits) < limit:  # the whole history
            return found if anchor is None and gaps <= found.keys() else None
    return None


def _derive(repo: MetadataRepo, table: str, gaps: set[str], newest: Any) -> dict[str, str]:
    """The commits of ``gaps`` from git: the newest version from the newest commit of the
    table's metadata, the others from the table's last few commits, and only then a walk
    of its whole log (once per clone and table for versions git never produced)."""
    path = L.git_metadata(table)
    found: dict[str, str] = {}
    if newest in gaps:
        commit = repo.last_commit_touching(path)
        raw = repo.read_at(commit, path) if commit is not None else None
        if commit is not None and raw is not None and version_of(raw) == newest:
            found[newest] = commit
    absent = _ABSENT.setdefault((str(repo.path), table), set())
    wanted = gaps - found.keys() - absent
    if wanted:
        for info in repo.log(path, max_entries=len(wanted) + _RECENT_SLACK):  # newest first
            raw = repo.read_at(info.id, path)
            version = version_of(raw) if raw is not None else None
            if version in wanted:
                found[version] = info.id  # the oldest of these commits wins
        wanted -= found.keys()
    if wanted:
        walked = commits_by_version(repo, table)
        found.update({v: walked[v] for v in wanted if v in walked})
        absent.update(v for v in wanted if v not in walked)
    return found


def _recorded_commits(raw: bytes | None, table: str) -> tuple[dict[str, str], str | None]:
    """The commits a store copy records by version, and that of its newest entry."""
    if raw is None:
        return {}, None
    try:
        entries = parsed_history(raw, key=L.store_history(table))
    except DatomError:
        return {}, None  # damaged: rebuilt from git
    recorded = {h.version: h.commit_sha for h in entries if h.commit_sha}
    return recorded, entries[0].commit_sha if entries else None


def history_agrees(raw: bytes | None, git_history: bytes, table: str) -> bool:
    """Whether the store's history is git's, modulo ``commit_sha`` (only the store has it;
    a previous release's store copy has none, and is not stale for that). Known without
    comparing the entries when this process printed the copy from that text (what every
    ``none`` write of a Dagster re-run asks)."""
    if raw is None:
        return False
    if mirrored_text(raw) == git_history:
        return True
    try:
        store_entries = [h.raw for h in parsed_history(raw, key=L.store_history(table))]
        git_entries = [h.raw for h in parsed_history(git_history, key=L.git_history(table))]
    except DatomError:
        return False
    return without_commit_sha(store_entries) == without_commit_sha(git_entries)
