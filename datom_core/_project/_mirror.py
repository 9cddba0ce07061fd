"""Step 5 of a write, and its repair: making the store's mirror agree with git.

Git is the source of truth; the store holds a copy of each table's documents, an
immutable snapshot per version, and the manifest. The copies are byte-identical to git's
except the history, whose entries also carry ``commit_sha`` (``_commits``).

Writers in different clones finish their mirroring out of order, so a writer that has
put its documents in the store *settles* them: it looks at the remote (when it did not
move, the documents are the remote's) and reads back each document it wrote: a copy that
is no longer what it wrote was rewritten by another writer after it, and is that writer's
to settle. When the remote's tip holds the same document as the one still in the store,
it is done with it; otherwise it writes the tip's and settles that in turn.

Why this converges: take the last write of a document to the store. Its writer, looking after it, found the
remote's tip holding those bytes (else it would have written again); and any push after
that look changes the document only together with a mirror, written after it. So after
the last writer finishes, each document is the remote's. A writer therefore looks at the
remote about once (it stops at the first copy it finds rewritten, instead of chasing a
remote that keeps moving; when the remote moved it reads back a few milliseconds after
its look, so that the newer writers' mirrors, already on their way, land first), and only the documents that changed between its state and the
tip are derived again: a writer of another table moves only the manifest.

Every route that writes these documents settles them (a write, a ``none`` write that
repairs the mirror, recovery), but a write whose PUTs were each conditional on the copy
its store wrote last, before its push, and all held (``_mirror_puts.replaced_in_step``):
no newer mirror had landed over those, so the last write argument above holds for it
without a look. A writer killed before it settles leaves a state that the next write of
the table, a ``none`` write, or ``validate(fix=True)`` repairs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any

from datom_core._errors import DatomError, StoreContendedError
from datom_core._git import TipView
from datom_core._project import _layout as L
from datom_core._project._commits import (
    commits_by_version,
    history_agrees,
    newest_commit_of,
    parsed_history,
    store_history,
    store_history_without_git,
    version_of,
    without_commit_sha,
)
from datom_core._project._context import ProjectContext
from datom_core._project._history_text import first_entry
from datom_core._project._mirror_puts import (
    TableDocuments,
    listed_before,
    replaced_in_step,
    seen_copies,
    write_mirror,
)
from datom_core._worker import ProcessWorker

__all__ = [
    "Converged",
    "PushedMirror",
    "TableDocuments",
    "commits_by_version",
    "converge_mirror",
    "history_agrees",
    "newest_commit_of",
    "settle",
    "store_history",
    "superseded",
    "without_commit_sha",
]

_log = logging.getLogger("datom")
_MAX_ROUNDS = 10  # looks at a moving remote before leaving the rest to the next writer
_SETTLE_PAUSE = 0.01  # seconds, times the round, before reading back under contention


class PushedMirror:
    """A write's mirror.

    The git layer's ``pushed`` hook records the commit (:meth:`start`) and, on a store
    with conditional replacement (S3), starts the PUTs conditional on the copies this
    store wrote last (``_mirror_puts.replaced_in_step``) while the clone moves onto the
    commit (a crash then leaves a store ahead of the clone, as another clone's write
    would: a next write of the table or ``finish_interrupted`` sees the lag and fetches).
    :meth:`finish` waits for them; when one was refused (or none went), it writes the
    documents in the order readers rely on, the clone on the pushed commit now, then
    settles them (a look at the remote). The version's snapshot is there already (the
    write puts it before its push; a ``validate`` finds it if it went missing since).
    """

    def __init__(
        self,
        ctx: ProjectContext,
        table: str,
        metadata: bytes,
        version: str,
        looks: Sequence[Future[None]] = (),
    ) -> None:
        self._ctx, self._table, self._metadata, self._version = ctx, table, metadata, version
        self._job: tuple[TableDocuments, str] | None = None
        # The copies this store wrote or looked at last (``looks``: learn_copies), as they
        # were before the push (of commits the remote had then): a write of this store
        # meanwhile (another thread's mirror, maybe of a newer commit) makes them
        # another's, and a PUT on them is refused.
        wait(looks)  # a look that failed leaves its copy unseen
        self._seen = seen_copies(ctx, table)
        self._early: tuple[bytes, Future[bool]] | None = None
        self._by_group = False  # written and settled by its group's leader (_groupmirror)
        # The store's history copy, read while the commit is pushed (no ordering holds
        # this read back: a copy another writer replaced meanwhile lacks its commit, and
        # the history is then derived from the clone's log, in finish()).
        self._kept = _WORKER.executor().submit(ctx.store.read_if_present, L.store_history(table))

    @property
    def started(self) -> bool:
        """Whether the push landed (the git layer's ``pushed`` hook started this mirror)."""
        return self._job is not None

    @property
    def context(self) -> ProjectContext:
        return self._ctx

    @property
    def kept(self) -> Future[bytes | None]:
        """The store's history copy, being read (the group's leader's mirror uses it)."""
        return self._kept

    def by_group(self) -> None:
        """The group's leader mirrored and settled this write: :meth:`start` puts nothing
        and :meth:`finish` has nothing left to do (called before :meth:`start`)."""
        self._by_group = True

    def start(self, files: Mapping[str, bytes], commit: str) -> None:
        """Record the pushed ``commit`` and its ``files`` (git paths to bytes)."""
        table = self._table
        docs = TableDocuments(table, self._metadata, files[L.git_history(table)], files[L.MANIFEST])
        self._job = (docs, commit)
        kept = self._kept
        if self._by_group or self._seen is None or not kept.done() or kept.exception():
            return
        if listed_before(docs, self._version):
            return
        new = (self._version, commit)
        history = store_history_without_git(self._ctx, table, docs.history, new, kept.result())
        if history is not None:  # the conditional PUTs go while the clone moves
            run = _WORKER.executor().submit
            self._early = (history, run(replaced_in_step, self._ctx, docs, history, self._seen))

    def finish(self) -> None:
        """Write the documents in order (the clone is on the pushed commit now, as a
        crash-time repair from the clone expects), then settle them."""
        if self._job is not None and not self._by_group:
            docs, commit = self._job
            revert = listed_before(docs, self._version)
            if self._early is not None:
                history, early = self._early
                if early.result():
                    return  # each PUT replaced a copy seen before the push: none newer came
            else:
                new = (self._version, commit)
                kept = self._kept.result()
                spliced = store_history_without_git(
                    self._ctx, docs.table, docs.history, new, kept
                )  # else the clone's log has the other writers' commits now
                history = spliced or store_history(self._ctx, docs.table, docs.history, new)
                seen = self._seen
                if seen and not revert and replaced_in_step(self._ctx, docs, history, seen):
                    return
            try:
                write_mirror(self._ctx, docs, history, snapshot=False)  # put before the push
            except StoreContendedError as e:
                if not _superseded(self._ctx, e, commit):
                    raise
            _settle(self._ctx, docs, history, commit, verify=revert)

    def abandon(self) -> None:
        """Leave a started mirror unwritten (the write failed after its push; the next
        write of the table, or ``validate(fix=True)``, mirrors it). Nothing is written
        before :meth:`finish`, so there is nothing to drop."""
        pending: list[Future[Any]] = [self._kept]
        if self._early is not None:
            pending.append(self._early[1])
        wait(pending)  # the worker's read and PUTs, whatever they met


def _superseded(ctx: ProjectContext, error: StoreContendedError, commit: str) -> bool:
    """Whether the manifest other writers kept replacing is theirs to write: the remote
    moved past ``commit``, so the manifest of its tip names this version or a newer one,
    and the writer of that tip settles it (the one at the tip never gives up this way)."""
    if error.key != L.STORE_MANIFEST:
        return False
    tip = ctx.require_repo().remote_tip(recent=False).commit
    if tip is None or tip == commit:
        return False
    _log.info(
        "the store's manifest is newer writers' to write (the remote moved past %s)", commit[:12]
    )
    return True


_WORKER = ProcessWorker("datom-mirror")


def _settle(
    ctx: ProjectContext,
    docs: TableDocuments,
    history: bytes,
    head: str | None,
    verify: bool = False,
) -> None:
    """Make sure the documents this writer put in the store end as the remote's tip's.

    ``verify`` (a revert: its documents are an earlier version's bytes, which an older
    writer's late PUT conditional on those bytes can still replace,
    ``_mirror_puts.replaced_in_step``): read them back even when the remote did not move,
    and replace any copy that is not the tip's, whoever wrote it."""
    repo, table = ctx.require_repo(), docs.table
    mine = {
        L.store_history(table): history,
        L.store_metadata(table): docs.metadata,
        L.STORE_MANIFEST: docs.manifest,
    }
    git_history, chase = docs.history, verify
    for rounds in range(1, _MAX_ROUNDS + 1):
        if repo.remote_head() == head and not verify:  # a look without the clone's lock
            return  # the remote did not move: its documents are the ones written
        view = repo.remote_tip(recent=True)  # remote_head's look: it moves nothing
        if view.commit == head and not verify:
            return
        if view.commit != head:
            # The remote moved: the newer writers' mirrors are on their way. Reading back
            # a moment later lets them land instead of deriving and writing a tip that
            # they are about to write anyway.
            time.sleep(random.uniform(0.5, 1.0) * _SETTLE_PAUSE * rounds)
        head, verify = view.commit, False
        # A copy rewritten after ours is that writer's to settle: a newer writer's, an
        # older one's that settles, or one conditioned on a copy its store wrote, which
        # was ours or older. A revert's (``chase``) is not: an older writer's late PUT
        # conditioned on the bytes it put back does not look back, so any copy that is
        # not the tip's is replaced by the tip's here.
        current = {key: ctx.store.read_if_present(key) for key in mine}
        if not chase:
            mine = {key: data for key, data in mine.items() if current[key] == data}
            if not mine:
                return
        tip = _tip_documents(ctx, table, mine, git_history, view)
        if tip is None:
            return  # the table left the tip: validate reports what is left
        git_history, metadata, wanted = tip
        changed = {key: data for key, data in wanted.items() if current[key] != data}
        if not changed:
            return
        version = version_of(metadata)
        if version is not None and changed.keys() - {L.STORE_MANIFEST}:
            # Readers meet the snapshot before anything names its version.
            ctx.store.put_content_named(L.store_snapshot(table, version), metadata)
        _write_changed(ctx, table, changed)
        mine = changed


def _tip_documents(
    ctx: ProjectContext, table: str, mine: dict[str, bytes], git_history: bytes, tip: TipView
) -> tuple[bytes, bytes, dict[str, bytes]] | None:
    """``(git history, metadata.json, the store documents of the remote's tip)``, for
    the keys in ``mine``; the history's store copy is derived only when git's differs
    from the one ``mine`` mirrors (from the clone's log: only then does the clone move)."""
    raw_history, raw_metadata, raw_manifest = (
        tip.read(p) for p in (L.git_history(table), L.git_metadata(table), L.MANIFEST)
    )
    if raw_history is None or raw_metadata is None or raw_manifest is None:
        return None
    wanted: dict[str, bytes] = {}
    key = L.store_history(table)
    if key in mine:
        if raw_history == git_history:
            wanted[key] = mine[key]
        else:
            ctx.require_repo().catch_up(tip.commit)
            wanted[key] = store_history(ctx, table, raw_history)
    for key, data in ((L.store_metadata(table), raw_metadata), (L.STORE_MANIFEST, raw_manifest)):
        if key in mine:
            wanted[key] = data
    return raw_history, raw_metadata, wanted


def _write_changed(ctx: ProjectContext, table: str, changed: dict[str, bytes]) -> None:
    for key in (L.store_history(table), L.store_metadata(table), L.STORE_MANIFEST):
        if key in changed:
            ctx.store.write_bytes(key, changed[key])


@dataclass(frozen=True)
class Converged:
    """What :func:`converge_mirror` rewrote, and the commit the store records for the
    current version (so that a ``none`` write reports it without walking git)."""

    stale: tuple[str, ...]
    commit: str | None


def converge_mirror(ctx: ProjectContext, table: str) -> Converged:
    """Rewrite whatever the store holds differently from git for ``table``, and settle it.

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
        if ctx.store.read_if_present(key) != data
    ]
    stored_history = ctx.store.read_if_present(L.store_history(table))
    commit = _commit_of(stored_history, table, docs.version)
    if commit is None or not history_agrees(stored_history, history, table):
        stale.insert(0, L.store_history(table))
    snapshot = L.store_snapshot(table, docs.version)
    if not ctx.store.exists(snapshot):
        stale.insert(0, snapshot)
    if stale:
        written = store_history(ctx, table, history)
        write_mirror(ctx, docs, written)
        commit = _commit_of(written, table, docs.version)
        _settle(ctx, docs, written, repo.head())
    return Converged(tuple(stale), commit)


def _commit_of(history: bytes | None, table: str, version: str) -> str | None:
    if history is None:
        return None
    first = first_entry(history, key=L.store_history(table))  # the current version, mostly
    if first is not None and first.version == version:
        return first.commit_sha
    try:
        entries = parsed_history(history, key=L.store_history(table))
    except DatomError:
        return None
    return next((h.commit_sha for h in entries if h.version == version), None)


# A group's mirror (``_groupmirror``) settles and gives way as a single write's does.
settle, superseded = _settle, _superseded
