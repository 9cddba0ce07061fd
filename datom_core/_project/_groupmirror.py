"""A group's store mirror, written once by its leader (``_group``) for every write it
recorded.

The writes of a group share one push; they also share the store's one ``manifest.json``.
Mirrored each by its own writer, the same document was put once per write, and two
groups' writers, a different ETag in each process, refused each other's conditional PUTs
(a refusal, a look, a PUT again). So the leader mirrors the whole group before its
writers return: each table's history copy and ``metadata.json`` (those of the table's
last write in the chain), then one manifest, the chain's last (it names every version of
the group), then one settling look at the remote. It does so after it let the clone's
lock go (the next group pushes meanwhile), in the group's turn (``_mirrorturn``): nothing
is put before every earlier group of the clone is done putting, and the turn ends once
the manifest is put. The writers are answered before it ends.

The settling look finds the remote moved when a later group pushed during this mirror:
when only the clone's later groups (each still in or before its turn, or done with it)
and writes pushed alone after every turn before them was done moved it, their mirrors
land after this one's, so nothing is settled; any other push (another clone's) is
settled table by table, as a single write's.

Every link of a single write's mirror holds for each table (docs/performance.md, "Round
trips across a WAN"): the snapshots were put by their writers before the push; a table's
history copy is in place before its ``metadata.json``; the manifest is put after every
table's documents, so a leader killed anywhere in the mirror leaves the entries of the
tables it did not finish behind in the store's manifest, which
``_recover.finish_interrupted`` looks for (and its writers, whose turn ended with no
final answer, mirror their own writes, ``_group``). A mirror that fails (the store
refuses, a read fails) is logged and left to each writer, as before grouping.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, GitError, StoreContendedError
from datom_core._git import MetadataRepo
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._mirror import (
    TableDocuments,
    settle,
    store_history,
    superseded,
)
from datom_core._project._mirrorturn import Turn, followed_in_order, load_etags, save_etags
from datom_core._project._upload import store_in_parallel
from datom_core._worker import ProcessWorker

__all__ = ["Recorded", "in_order", "mirror_group", "read_kept"]

_log = logging.getLogger("datom")
_LOCK_WAIT = 30.0  # seconds a settling look waits for a push of the clone to be noted
_WORKERS = ProcessWorker("datom-group-mirror", threads=32)


@dataclass(frozen=True)
class Recorded:
    """One write the group's push recorded: its table, ``metadata.json`` bytes, the files
    its commit holds (git's bytes) and that commit."""

    table: str
    metadata: bytes
    files: Mapping[str, bytes]
    commit: str


def read_kept(ctx: ProjectContext, table: str) -> Future[bytes | None]:
    """The store's history copy of ``table``, read in the background (while the group is
    pushed; a copy replaced meanwhile lacks a commit, which is then derived from git)."""
    return _WORKERS.executor().submit(ctx.store.read_if_present, L.store_history(table))


def mirror_group(
    ctx: ProjectContext,
    writes: Sequence[Recorded],
    kept: Mapping[str, Future[bytes | None]],
    turn: Turn | None = None,
    answer: Callable[[bool], None] = lambda mirrored: None,
) -> bool:
    """Mirror ``writes`` (in chain order) into the store and settle them; ``kept``: each
    table's store history copy, being read; ``turn``: the group's turn to mirror (taken
    under the clone's lock, ``_mirrorturn``; the clone may have moved on since). The
    group's writers are told the outcome (``answer``) before the turn is let go. False
    when the store failed: each writer then mirrors its own write (nothing was lost)."""
    if not writes:
        return False
    told: list[bool] = []

    def tell(mirrored: bool) -> None:  # once: the writers act on the first answer
        if not told:
            told.append(mirrored)
            answer(mirrored)

    try:
        _mirror(ctx, writes, kept, turn, tell)
    except DatomError as e:
        _log.info("the group's store mirror is left to its writers: %s", e)
    finally:
        if not told:  # the store failed (or the mirror was interrupted): none was put whole
            with _suppressed():
                tell(False)
        if turn is not None:  # still held when the mirror failed: marked failed
            turn.end(done=False)
    return told == [True]


def _mirror(
    ctx: ProjectContext,
    writes: Sequence[Recorded],
    kept: Mapping[str, Future[bytes | None]],
    turn: Turn | None,
    answer: Callable[[bool], None],
) -> None:
    last = writes[-1]
    manifest = last.files[L.MANIFEST]
    newest: dict[str, Recorded] = {}  # each table's last write in the chain
    for w in writes:
        newest[w.table] = w
    docs = {
        t: TableDocuments(t, w.metadata, w.files[L.git_history(t)], manifest)
        for t, w in newest.items()
    }
    histories: dict[str, bytes] = {}
    for t, w in newest.items():
        future = kept.get(t)
        copy = future.result() if future is not None else None
        new = (docs[t].version, w.commit)
        # The table's earlier versions in this group (and any other gap) are found among
        # the commits since the copy's newest (the clone holds them; it may be past them).
        histories[t] = store_history(ctx, t, docs[t].history, new, kept=copy)
    if turn is not None:
        # Nothing is put before every earlier group of the clone is done putting: a
        # later group's document never lands under an earlier one's (_mirrorturn).
        turn.wait()
        _note_etags(ctx, load_etags(turn.folder))
    checkpoint("group:mirror:start")
    # Each table's history copy before its metadata.json names the version (on a store
    # across a network they go at once, as a single write's do: _mirror_puts).
    pending = [(L.store_history(t), h) for t, h in histories.items()]
    metadata = [(L.store_metadata(t), d.metadata) for t, d in docs.items()]
    if store_in_parallel(ctx):  # one round trip, not two (R datom writes them unordered)
        _each(ctx, pending + metadata)
        checkpoint("group:mirror:history")
    else:
        _each(ctx, pending)
        checkpoint("group:mirror:history")
        _each(ctx, metadata)
    checkpoint("group:mirror:metadata")
    # The manifest after every table's documents: its entries in step mark a finished
    # mirror (_recover trusts them).
    try:
        ctx.store.write_bytes(L.STORE_MANIFEST, manifest)
    except StoreContendedError as e:
        if not superseded(ctx, e, last.commit):
            raise
    checkpoint("group:mirror:manifest")
    if turn is not None:
        keys = [L.STORE_MANIFEST] + [k for t in docs for k in _keys(t)]
        _save_etags(ctx, turn, keys)
        answer(True)  # before the turn ends: a writer waits for the turn, then reads it
        turn.end(done=True)
    else:
        answer(True)
    repo = ctx.require_repo()
    head = repo.remote_head()  # one look for the group
    if head == last.commit:
        return
    if turn is not None and in_order(repo, turn.folder, last.commit, head):
        return  # the remote moved by the clone's later groups: their mirrors land after
    for t, d in docs.items():  # another writer moved the remote: settle as a single write
        settle(ctx, d, histories[t], last.commit)


def in_order(repo: MetadataRepo, folder: Path, last: str, head: str | None) -> bool:
    """``followed_in_order``, asked again once the clone's lock is free when the chain
    does not know a commit: a write of this clone holds the lock from before its push to
    its place in the chain (a turn, or ``note_lone``), so a push of this clone the look
    found is in the chain by then; what is still not is another clone's."""
    if followed_in_order(folder, last, head):
        return True
    try:
        with repo.lock(timeout=_LOCK_WAIT):
            pass
    except GitError:
        return False
    return followed_in_order(folder, last, head)


def _keys(table: str) -> tuple[str, str]:
    return L.store_history(table), L.store_metadata(table)


def _note_etags(ctx: ProjectContext, etags: Mapping[str, str]) -> None:
    note = getattr(ctx.store, "note_etags", None)
    if note is not None and etags:
        note(etags)


def _save_etags(ctx: ProjectContext, turn: Turn, keys: Sequence[str]) -> None:
    seen = getattr(ctx.store, "seen", None)
    if seen is not None:
        with _suppressed():
            save_etags(turn.folder, {k: seen(k) for k in keys})


_suppressed = partial(contextlib.suppress, OSError)


def _each(ctx: ProjectContext, documents: Sequence[tuple[str, bytes]]) -> None:
    """Put ``documents`` (independent of each other: one per table), at once on a store
    across a network (``store_in_parallel``), else one after the other."""
    write: Callable[[str, bytes], None] = ctx.store.write_bytes
    if len(documents) < 2 or not store_in_parallel(ctx):
        for key, data in documents:
            write(key, data)
        return
    futures = [_WORKERS.executor().submit(write, key, data) for key, data in documents]
    wait(futures)  # every PUT answered before a failure is raised
    for f in futures:
        f.result()
