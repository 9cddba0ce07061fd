"""Several writes recorded as a chain of commits in one push (private to the git layer).

A push costs the same few round trips for one commit or sixteen, so the writes waiting on
one clone (``_project._group``) go out together: each its own commit on the one before
(the first on the remote's tip), with its own message and author; the branch moves once,
by compare-and-swap, to the last. A lost push rebuilds the chain on the new tip after a
single write's backoff. A write whose build raises is left out and given its error; one
whose files the chain already holds makes no commit (its answer is None).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from dulwich.object_store import MemoryObjectStore, OverlayObjectStore
from dulwich.objects import ShaFile

from .._checkpoint import checkpoint
from .._errors import GitError, PushRejectedError, mark_push_sent
from . import _internals as gi
from ._backoff import Backoff
from ._objects import NewCommit, TreeReader, build_commit
from ._repo import Build, RepoCore, _now, gave_up

__all__ = ["ChainItem", "commit_chain_and_push"]

Answer = str | None | Exception  # the commit, no commit needed, or the build's error


@dataclass(frozen=True)
class ChainItem:
    """One write of a chain: ``build(tree)`` (``commit_and_push``'s), message, identity."""

    build: Build
    message: str
    identity: str


def commit_chain_and_push(
    core: RepoCore, items: Sequence[ChainItem], deadline: float
) -> tuple[list[Answer], bytes | None, bytes | None]:
    """Commit ``items`` in order on ``origin``'s tip, pushed at once: one answer per item, the
    tip built on and the last commit pushed (None: none needed), where the clone ends. The
    push's errors are ``commit_and_push``'s; the caller compacts the remote (``maintain``)."""
    if any(not item.message.strip() for item in items):
        raise GitError("A commit needs a non-empty message.")
    with core.lock():
        return _chain_under_lock(core, items, deadline)


def _chain_under_lock(
    core: RepoCore, items: Sequence[ChainItem], deadline: float
) -> tuple[list[Answer], bytes | None, bytes | None]:
    r = core._open()
    core._ready(r)
    remote = core._remote()
    branch = core._target_branch(r, remote)
    end, backoff, attempts = time.monotonic() + deadline, Backoff(), 0
    while True:
        attempts += 1
        try:
            turn = remote.turn(max(end - time.monotonic(), 0.0))
            with turn, remote.view(r, branch) as (tip, store):
                if attempts == 1:
                    core._keep_local_work(r, branch, tip, "write")
                answers, made = _build_chain(store, tip, items)
                if made is not None:
                    checkpoint("git:chain:built")
                    try:
                        remote.push(r, branch, tip, made.id, made.objects)
                    except BaseException as e:
                        if not isinstance(e, PushRejectedError):
                            mark_push_sent(e)  # the remote may have applied it
                        raise
        except PushRejectedError:
            delay = backoff.next()
            if time.monotonic() + delay > end:
                raise gave_up(remote.url, attempts, deadline) from None
            time.sleep(delay)
            continue
        if made is None:
            if remote.forget():  # a kept look: recording nothing needs a new one
                continue
            core._stay_on(r, remote, branch, tip)
            return answers, tip, None
        checkpoint("git:push:swapped")
        checkpoint("git:chain:swapped")
        core._follow(r, remote, branch, tip, made)
        return answers, tip, made.id


def _build_chain(
    store: object, tip: bytes | None, items: Sequence[ChainItem]
) -> tuple[list[Answer], NewCommit | None]:
    """Each item's commit on the one before, and the chain as one ``NewCommit`` or None."""
    # Later commits are built on earlier ones held in memory, over the tip's store.
    memory = MemoryObjectStore()
    overlay = OverlayObjectStore([memory, store])  # type: ignore[list-item]
    answers: list[Answer] = []
    objects: dict[bytes, ShaFile] = {}
    changes: dict[bytes, bytes | None] = {}
    parent, last = tip, None
    for item in items:
        base = store if parent == tip else overlay
        try:
            files = dict(item.build(TreeReader(base, parent)))  # type: ignore[arg-type]
            for relpath in files:
                gi.check_relpath(relpath)
        except Exception as e:  # this write alone fails; the others go on
            answers.append(e)
            continue
        new = build_commit(base, parent, files, item.message, item.identity.encode(), _now())  # type: ignore[arg-type]
        if new is None:
            answers.append(None)
            continue
        for obj in new.objects:
            objects.setdefault(obj.id, obj)
            memory.add_object(obj)
        changes.update(new.changes)
        answers.append(new.id.decode())
        parent, last = new.id, new
    return answers, NewCommit(last.commit, list(objects.values()), changes) if last else None
