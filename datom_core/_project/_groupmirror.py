"""A group's store mirror, written once by its leader (``_group``) for every write it
recorded.

The writes of a group share one push; they also share the store's one ``manifest.json``.
Mirrored each by its own writer, the same document was put once per write, and two
groups' writers, a different ETag in each process, refused each other's conditional PUTs
(a refusal, a look, a PUT again). So the leader, still holding the clone's lock, mirrors
the whole group before it answers: each table's history copy and ``metadata.json`` (those
of the table's last write in the chain), then one manifest, the chain's last (it names
every version of the group), then one settling look at the remote. The writers it
answers ``mirrored`` return at once.

Every link of a single write's mirror holds for each table (docs/performance.md, "Round
trips across a WAN"): the snapshots were put by their writers before the push; a table's
history copy is in place before its ``metadata.json``; the manifest is put after every
table's documents, so a leader killed anywhere in the mirror leaves the entries of the
tables it did not finish behind in the store's manifest, which
``_recover.finish_interrupted`` looks for (and its claimed writers, never answered, ask
the remote and bring their table in step themselves, ``_group``). A mirror that fails
(the store refuses, a read fails) is logged and left to each writer, as before grouping.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError, StoreContendedError
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._mirror import (
    TableDocuments,
    settle,
    store_history,
    superseded,
)
from datom_core._project._upload import store_in_parallel
from datom_core._worker import ProcessWorker

__all__ = ["Recorded", "mirror_group", "read_kept"]

_log = logging.getLogger("datom")
_WORKERS = ProcessWorker("datom-group-mirror", threads=8)


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
    ctx: ProjectContext, writes: Sequence[Recorded], kept: Mapping[str, Future[bytes | None]]
) -> bool:
    """Mirror ``writes`` (in chain order, the clone on the last one's commit) into the
    store and settle them; ``kept``: each table's store history copy, being read. False
    when the store failed: each writer then mirrors its own write (nothing was lost)."""
    if not writes:
        return False
    try:
        _mirror(ctx, writes, kept)
    except DatomError as e:
        _log.info("the group's store mirror is left to its writers: %s", e)
        return False
    return True


def _mirror(
    ctx: ProjectContext, writes: Sequence[Recorded], kept: Mapping[str, Future[bytes | None]]
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
        # The clone is on the chain's last commit: the table's earlier versions in this
        # group (and any other gap) are found among the commits since the copy's newest.
        histories[t] = store_history(ctx, t, docs[t].history, new, kept=copy)
    checkpoint("group:mirror:start")
    _each(ctx, [(L.store_history(t), h) for t, h in histories.items()])
    checkpoint("group:mirror:history")
    _each(ctx, [(L.store_metadata(t), d.metadata) for t, d in docs.items()])
    checkpoint("group:mirror:metadata")
    try:
        ctx.store.write_bytes(L.STORE_MANIFEST, manifest)
    except StoreContendedError as e:
        if not superseded(ctx, e, last.commit):
            raise
    repo = ctx.require_repo()
    if repo.remote_head() == last.commit:  # one look for the group
        return
    for t, d in docs.items():  # the remote moved: each table settles as a single write's
        settle(ctx, d, histories[t], last.commit)


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
