"""Finishing what an interrupted write left behind, before anything is called "unchanged".

A writer killed after its commit leaves a version that only this clone knows (unpushed),
or a pushed version the store does not mirror yet. Classifying an inbox file against the
clone would then call it unchanged and skip it for good, leaving store readers on the old
data. So :func:`finish_interrupted` pushes what is unpushed and re-mirrors every table the
store's manifest disagrees on, and :func:`converge_tables` re-mirrors the named tables
whose store documents lag git's; both on the freshly fetched remote state, chasing the
remote afterwards as a write's mirroring does (``_mirror``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from datom_core._errors import DatomError, PushRejectedError
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import load
from datom_core._project._mirror import converge_mirror

__all__ = ["converge_tables", "finish_interrupted"]

_MAX_ROUNDS = 10


def finish_interrupted(ctx: ProjectContext) -> tuple[str, ...]:
    """Push unpushed commits, fetch, and re-mirror the tables the store lags on (no
    network at all when nothing is unpushed and the store's manifest is in step).

    A push the remote rejects (it moved on meanwhile) drops the local commit with the
    reset: what it recorded is done again by the caller (an inbox file is still there).
    Returns the tables whose store documents were rewritten.
    """
    repo = ctx.require_repo()
    with repo.lock():
        # The working tree is what is judged below (and what the inbox is classified
        # against): a writer killed while rewriting it left a journal of its paths.
        repo.recover()
        unpushed = repo.has_unpushed_commits()
        if unpushed:
            try:
                repo.push()
            except PushRejectedError:
                pass  # the reset below drops it
        # Nothing unpushed and the store's manifest in step: no network needed. A commit
        # killed half-way (files written, branch not moved) shows as a lagging manifest.
        if not unpushed and not _manifest_lags(ctx):
            return ()
        repo.fetch_and_reset()
        return _converge(ctx, _manifest_lags(ctx))


def converge_tables(ctx: ProjectContext, tables: Iterable[str]) -> tuple[str, ...]:
    """Re-mirror those of ``tables`` whose store ``metadata.json`` differs from git's.

    One store read per table when nothing lags (the common case); the lock, a fetch and
    the full comparison of ``converge_mirror`` only for a table that does.
    """
    repo = ctx.require_repo()
    lagging = [t for t in dict.fromkeys(tables) if _metadata_lags(ctx, t)]
    if not lagging and not _manifest_lags(ctx):
        return ()
    with repo.lock():
        repo.fetch_and_reset()
        return _converge(ctx, [*lagging, *_manifest_lags(ctx)])


def _converge(ctx: ProjectContext, tables: Iterable[str]) -> tuple[str, ...]:
    repo = ctx.require_repo()
    todo = list(dict.fromkeys(tables))
    rewritten: dict[str, None] = {}
    head = repo.head()
    for _ in range(_MAX_ROUNDS):
        for table in todo:
            if converge_mirror(ctx, table).stale:
                rewritten[table] = None
        if not todo and ctx.store.read_if_present(L.STORE_MANIFEST) != repo.read(L.MANIFEST):
            _mirror_manifest(ctx)
        # Another clone may have pushed meanwhile: the last one to finish leaves the newest.
        newest = repo.fetch_and_reset()
        if newest == head:
            break
        head = newest
    return tuple(rewritten)


def _mirror_manifest(ctx: ProjectContext) -> None:
    raw = ctx.require_repo().read(L.MANIFEST)
    if raw is not None:
        ctx.store.write_bytes(L.STORE_MANIFEST, raw)


def _metadata_lags(ctx: ProjectContext, table: str) -> bool:
    git = ctx.require_repo().read(L.git_metadata(table))
    return git is not None and ctx.store.read_if_present(L.store_metadata(table)) != git


def _manifest_lags(ctx: ProjectContext) -> list[str]:
    """The tables whose entries differ between git's manifest and the store's.

    The manifest is mirrored last, so a write killed anywhere in its mirroring leaves its
    table's entry behind in the store's copy.
    """
    git = _entries(ctx.require_repo().read(L.MANIFEST))
    stored = _entries(ctx.store.read_if_present(L.STORE_MANIFEST))
    return sorted(
        name
        for name, entry in git.items()
        if stored.get(name) != entry
        and isinstance(entry, Mapping)
        and entry.get("kind", "table") == "table"
    )


def _entries(raw: bytes | None) -> Mapping[str, Any]:
    if raw is None:
        return {}
    try:
        doc = load(raw, key=L.MANIFEST)
    except DatomError:
        return {}  # damaged: validate reports it
    if not isinstance(doc, Mapping):
        return {}
    entries = doc.get("artifacts", doc.get("tables"))
    return entries if isinstance(entries, Mapping) else {}
