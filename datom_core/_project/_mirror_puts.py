"""Writing one table's documents into the store's mirror (``_mirror`` settles them):
in the order readers rely on, or each PUT conditional on the copy this store wrote last.

On a store across a network (``parallel_puts``) the history and ``metadata.json`` go at
once, the manifest after both; ``DATOM_PLAIN=1`` or a local store writes one after the
other.
"""

from __future__ import annotations

from concurrent.futures import Future, wait
from dataclasses import dataclass

from datom_core._checkpoint import checkpoint
from datom_core._errors import DatomError
from datom_core._project import _layout as L
from datom_core._project._commits import parsed_history
from datom_core._project._context import ProjectContext
from datom_core._project._history_text import first_entry
from datom_core._project._mirrorturn import load_etags
from datom_core._project._parse import parse_metadata
from datom_core._project._queue import Queue
from datom_core._project._upload import store_in_parallel
from datom_core._store import Document
from datom_core._worker import ProcessWorker

__all__ = [
    "TableDocuments",
    "learn_copies",
    "listed_before",
    "replaced_in_step",
    "seen_copies",
    "write_mirror",
]

_MIRROR_STEPS = ("mirror:snapshot", "mirror:history", "mirror:metadata")  # then the manifest
_WORKER = ProcessWorker("datom-mirror-puts")
_LOOKS = ProcessWorker("datom-mirror-looks", threads=3)  # a table's three documents at once


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


def write_mirror(
    ctx: ProjectContext, docs: TableDocuments, history: bytes, snapshot: bool = True
) -> None:
    """Write the documents in the order readers rely on (:func:`_documents`); without the
    snapshot when the write put it before its push (a second conditional PUT would be
    refused, then asked whose object it is: two requests in the chain for nothing)."""
    documents = _documents(docs, history)
    if not store_in_parallel(ctx):
        if snapshot:
            ctx.store.write_in_order(documents, after=_checkpoint_mirror)
        else:
            _checkpoint_mirror(0)
            ctx.store.write_in_order(documents[1:], after=lambda i: _checkpoint_mirror(i + 1))
        return
    # A store across a network: the history and metadata.json at once (one round trip,
    # not two; R datom writes them without an order either, and its reader takes
    # metadata.json's version as unrecorded until the history lists it), the manifest
    # after both, still last.
    if snapshot:
        ctx.store.put_if_absent(*documents[0][:2])
    _checkpoint_mirror(0)
    _write_together(ctx, documents[1:3])
    _checkpoint_mirror(1)
    _checkpoint_mirror(2)
    ctx.store.write_bytes(*documents[3][:2])


def learn_copies(ctx: ProjectContext, table: str) -> list[Future[None]]:
    """Look (at once, one HEAD each) at those of ``table``'s documents whose copy this
    store has not seen, while the write uploads; :func:`seen_copies` is read once they are
    answered, before the push. A first write of a process then puts its mirror as every
    later one does, each PUT conditional on the copy seen (:func:`replaced_in_step`),
    where it would look at each document before its PUT, then settle. A copy found before
    the push is of a commit the remote had then (mirrors are put after their push), as
    one this store wrote is. None where the store has no conditional replacement or it is
    not used, or where the clone's groups of writes carry the copies' ETags (their leader
    mirrors, ``_groupmirror``); a look that fails leaves its document unseen (the mirror
    then looks, writes and settles)."""
    look, seen = getattr(ctx.store, "look_unseen", None), getattr(ctx.store, "seen", None)
    if look is None or seen is None or not store_in_parallel(ctx):
        return []
    unseen = [key for key in _keys(table) if seen(key) is None]  # a warm write: none
    if not unseen or (ctx.repo is not None and load_etags(Queue(ctx.repo.controldir).folder)):
        return []
    return [_LOOKS.executor().submit(look, key) for key in unseen]


def seen_copies(ctx: ProjectContext, table: str) -> dict[str, str | None] | None:
    """The ETags of the copies of ``table``'s documents this store wrote last (taken
    before a push: copies of commits the remote had then), for :func:`replaced_in_step`;
    None where the store has no conditional replacement or it is not used."""
    seen = getattr(ctx.store, "seen", None)
    if seen is None or not store_in_parallel(ctx):
        return None
    return {key: seen(key) for key in _keys(table)}


def _keys(table: str) -> tuple[str, str, str]:
    """The store keys of the documents a write of ``table`` replaces."""
    return L.store_history(table), L.store_metadata(table), L.STORE_MANIFEST


def replaced_in_step(
    ctx: ProjectContext, docs: TableDocuments, history: bytes, seen: dict[str, str | None]
) -> bool:
    """The documents (the history and ``metadata.json`` at once, then the manifest), each
    PUT conditional on the copy ``seen`` names being still in place (S3 ``If-Match``);
    False at the first refusal, or where no copy was seen.

    All succeeding replaces the settling look: each copy ``seen`` names is of a commit at
    or before the parent of ours (a store's copies move forward only, or are put right by
    a writer that looks after writing: ``_mirror._settle``), so none of a newer commit's
    mirror had landed over it. A newer mirror landing later is conditioned on ours, or
    settles; an older one landing later is refused. Not for a revert: its
    ``metadata.json`` is an earlier version's bytes, which an older writer's late PUT,
    conditional on those bytes, would still find (``_mirror._settle(verify=True)``)."""
    replace = ctx.store.replace_seen  # type: ignore[attr-defined]
    _checkpoint_mirror(0)
    (h_key, h_data, _), (m_key, m_data, _), (manifest, data, _) = _documents(docs, history)[1:]
    pending = _WORKER.executor().submit(replace, h_key, h_data, seen[h_key])
    try:
        replaced = replace(m_key, m_data, seen[m_key])
    finally:
        wait([pending])
    if not (pending.result() and replaced):
        return False
    _checkpoint_mirror(1)
    _checkpoint_mirror(2)
    return bool(replace(manifest, data, seen[manifest]))


def listed_before(docs: TableDocuments, version: str) -> bool:
    """Whether git's history listed ``version`` before this write (a revert: nothing is
    prepended, the first entry is another version's)."""
    key = L.git_history(docs.table)
    first = first_entry(docs.history, key=key)
    if first is None:
        try:
            first = next(iter(parsed_history(docs.history, key=key)), None)
        except DatomError:
            return True
    return first is None or first.version != version


def _write_together(ctx: ProjectContext, documents: list[Document]) -> None:
    """Each document replacing its key, the PUTs in flight at once; the first failure
    is raised once every PUT is answered."""
    (key, data, _), *rest = documents
    others = [_WORKER.executor().submit(ctx.store.write_bytes, k, d) for k, d, _ in rest]
    try:
        ctx.store.write_bytes(key, data)
    finally:
        wait(others)
    for other in others:
        other.result()


def _documents(docs: TableDocuments, history: bytes) -> list[Document]:
    """The store documents of one table's write, in the order readers rely on: the
    snapshot before anything names its version; the history before the manifest (R
    datom resolves the versions the manifest names through the history; on a store
    across a network ``metadata.json`` goes with the history, :func:`_write_mirror`);
    the manifest last (its entry in step marks a finished mirror, which
    ``_recover`` trusts)."""
    table = docs.table
    return [
        (L.store_snapshot(table, docs.version), docs.metadata, True),
        (L.store_history(table), history, False),
        (L.store_metadata(table), docs.metadata, False),
        (L.STORE_MANIFEST, docs.manifest, False),
    ]


def _checkpoint_mirror(i: int) -> None:
    if i < len(_MIRROR_STEPS):
        checkpoint(_MIRROR_STEPS[i])
