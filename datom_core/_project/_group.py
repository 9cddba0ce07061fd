"""Group commit: the writes waiting on one clone go out in one push.

The processes of one machine that share a clone (a Dagster multi-process run, a CLI
beside a notebook) and the threads of one process (each with its own connection) take
the clone's lock to record their writes one at a time, and a push costs a few round
trips to the remote whether it carries one commit or many. So a writer that finds the
lock held does not wait for its own turn at the remote: it puts its prepared write in
the clone's queue (``_queue``) and waits for the lock. The next holder of the lock (the
*leader*) claims every waiting write and records its own and theirs as a chain of
commits in one push (``MetadataRepo.commit_chain_and_push``): each write is still its
own commit, with its own message, author and history entry, on the one before it. The
leader answers each waiting writer before it lets the lock go. A waiting writer looks
for the lock and for its answer in turn (``_turn``): an answer is final once written, so
a write its group recorded finishes (its result) without the lock, instead of queueing
for it behind the next group's leader; a writer that gets the lock and finds its write
still waiting takes it back and leads in turn.

A writer does not take the clone's lock to read the remote's tip either: over HTTP(S) it
classifies its write on the clone's newest look, the tip the last group pushed, which the
git layer notes for the processes sharing the clone (``MetadataRepo.remote_tip`` with
``recent``: a kept look, checked by the push's compare-and-swap). So the writers waiting
behind a group's push prepare theirs meanwhile, and the next group's leader reads the tip
once for all of them.

The leader then takes the group's turn to mirror (``_mirrorturn``), answers each writer
"recorded, mirror under way" and lets the lock go: the next group's push overlaps this
group's store mirror (every table's documents and one manifest naming all of the group's
versions, then one settling look, ``_groupmirror``). The mirrors of a clone's groups run
in push order, each after the one before is done putting, so an earlier group's
documents never land over a later one's. Before it lets the lock go, a leader waits a
little for the group before it to be done mirroring (``Turn.pace``): one group pushes
while one mirrors, each as large as the writers waiting meanwhile make it. A writer
answered "under way" waits for the turn to end and reads its final answer: ``mirrored``
returns at once; otherwise (the mirror failed, or its leader died in it) it mirrors its
own write, as a single write does, with the manifest of the group's last commit (git's
bytes there, the same from each of them, so their conditional writes of that shared
document do not refuse each other). A writer that finds nothing waiting while a group's
turn is under way records its write as a group of one, in turn; one that finds no turn
under way pushes alone (``commit_and_push``) and is noted in the clone's chain of groups.

Every invariant of a single write holds for each grouped one. What a write puts in the
store (parquet, snapshot) is put before it waits, as before a push; a write whose build
fails on the tip (its table refused there) is left out of the chain and redoes its write
alone, meeting the error itself; a leader killed, or failing, at any point lets the lock
go unanswered: each of its claimed writers asks the remote whether its version is
recorded (then it completes as a push whose answer was lost, ``_outcome``) and
otherwise leads its own write again. A writer killed while waiting is dropped, never
recorded for no one (its request's ``flock``, ``_queue``).

``DATOM_GROUP_COMMIT=0`` turns grouping off (every write pushes alone, as before), as
does ``DATOM_PLAIN=group``: grouping is for speed only, and that is its plain path (the
shared look at the tip is the git layer's accelerator ``_git/_fast/_tipnote``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, cast

from datom_core._checkpoint import checkpoint
from datom_core._errors import GitError, mark_push_sent
from datom_core._git import Author, ChainItem, MetadataRepo
from datom_core._git import TreeReader as GitTree
from datom_core._plain import plain
from datom_core._project import _layout as L
from datom_core._project._build import TableUpdate
from datom_core._project._groupmirror import Recorded, mirror_group, read_kept
from datom_core._project._mirror import PushedMirror
from datom_core._project._mirrorturn import mirroring, note_lone, take
from datom_core._project._outcome import entries_on
from datom_core._project._queue import Answer, Claimed, Queue, Waiting, encode_update
from datom_core._project._tip import TreeReader

__all__ = ["grouping_enabled", "record"]

_LOCK_TIMEOUT = 600.0  # seconds a writer waits for the clone's lock (``MetadataRepo.lock``'s)
_POLL = 0.02  # seconds between a waiting writer's looks at the lock and its answer
_PACE = 5.0  # seconds a leader waits, holding the lock, for the group before to mirror


def grouping_enabled() -> bool:
    """Whether writes sharing a clone are grouped (``DATOM_GROUP_COMMIT``, default on;
    off under ``DATOM_PLAIN=group``)."""
    if plain("group"):
        return False
    return os.environ.get("DATOM_GROUP_COMMIT", "1").strip().lower() not in {"0", "off", "no"}


def record(
    repo: MetadataRepo, update: TableUpdate, message: str, author: Author, mirror: PushedMirror
) -> str | None:
    """Commit and push ``update`` as ``MetadataRepo.commit_and_push(update.build, ...)``
    does (same answer, same errors; ``mirror.start(update.files, commit)`` once the remote
    holds it), grouped with the other writes waiting on this clone (see the module
    docstring); ``mirror.by_group()`` when its group's leader mirrored it."""

    def pushed(commit: str) -> None:
        mirror.start(update.files, commit)

    if not grouping_enabled():
        return repo.commit_and_push(update.build, message, author, pushed=pushed)
    held = _try_lock(repo)
    if held is not None:
        try:  # entered already: left once (a ``with`` would enter it again)
            led = _lead(repo, update, message, author, mirror)
        finally:
            held.__exit__(None, None, None)
        return led.complete()
    try:
        waiting = Queue(repo.controldir).wait(encode_update(update, message, author.identity))
    except (OSError, TypeError, ValueError):  # no queue here, or an entry JSON cannot hold
        return repo.commit_and_push(update.build, message, author, pushed=pushed)
    try:
        return _as_follower(repo, waiting, update, message, author, mirror)
    finally:
        waiting.close()


def _try_lock(repo: MetadataRepo) -> AbstractContextManager[Any] | None:
    """The clone's lock, entered, when it is free now (or held by this thread)."""
    lock = repo.lock(timeout=0)
    try:
        lock.__enter__()
    except GitError:
        return None
    return lock


def _as_follower(
    repo: MetadataRepo,
    waiting: Waiting,
    update: TableUpdate,
    message: str,
    author: Author,
    mirror: PushedMirror,
) -> str | None:
    try:
        turn = _turn(repo, waiting)
        if isinstance(turn, Answer) and _needs_lock(turn):
            turn = repo.lock()
            turn.__enter__()
    except BaseException as e:  # a timeout or an interrupt while waiting
        if waiting.withdraw():
            raise  # never claimed: nothing of it was pushed
        if isinstance(e, GitError):  # timed out while its leader pushes it, or not
            mark_push_sent(e)
            raise
        with repo.lock():  # claimed: the leader decides, and is done once the lock is free
            pass
        raise
    if isinstance(turn, Answer):  # recorded by its group, or nothing to record
        return _finish(repo, waiting, update, turn, mirror) if turn.state == "recorded" else None
    lock, led, recorded = turn, None, None
    try:
        answer = waiting.state()
        if answer is None:  # still waiting: taken back, this writer leads
            waiting.withdraw()
            led = _lead(repo, update, message, author, mirror)
        elif answer.state == "recorded" and answer.commit is not None:
            recorded = answer  # finished without the lock (its group's mirror may run)
        elif answer.state == "none":
            return None
        else:  # its build failed at the leader, or the leader failed or died
            _refuse_if_recorded(repo, update)
            led = _lead(repo, update, message, author, mirror)
    finally:
        lock.__exit__(None, None, None)
    if recorded is not None:
        return _finish(repo, waiting, update, recorded, mirror)
    assert led is not None
    return led.complete()


def _turn(repo: MetadataRepo, waiting: Waiting) -> AbstractContextManager[Any] | Answer:
    """The clone's lock, entered, or this write's answer if its leader wrote it first. An
    answer is final once written, so a writer its group recorded returns as soon as it
    is written, without queueing for the lock behind the group's other writers (each
    of them reading its answer in turn) and the next group's leader."""
    deadline = time.monotonic() + _LOCK_TIMEOUT
    while True:
        held = _try_lock(repo)
        if held is not None:
            return held
        answer = waiting.answered()
        if answer is not None:
            return answer
        if time.monotonic() > deadline:
            raise GitError(
                f"Timed out after {_LOCK_TIMEOUT:g}s waiting for the lock of clone {repo.path}: "
                "another datom process is writing to this clone. Wait for it to finish, "
                "or raise the timeout."
            )
        time.sleep(_POLL)


def _needs_lock(answer: Answer) -> bool:
    """Whether the writer answered so goes on under the clone's lock (it redoes its write,
    or asks the remote whether its leader's push landed)."""
    return not (answer.state == "none" or (answer.state == "recorded" and answer.commit))


class _Led:
    """What a leader does once it lets the clone's lock go: its group's store mirror
    (its turn taken under the lock, ``_mirrorturn``), then its own write's outcome."""

    def __init__(self, repo: MetadataRepo, own: str | Exception | None, last: str | None) -> None:
        self.repo, self.own, self.last = repo, own, last
        self.mirror: Callable[[], bool] | None = None
        self.done: Callable[[bool], None] = lambda mirrored: None

    def complete(self) -> str | None:
        """Mirror the group (its writers answered), then the leader's own commit."""
        try:
            mirrored = self.mirror() if self.mirror is not None else False
        finally:
            _maintain(self.repo, self.last)
        own = self.own
        if isinstance(own, Exception):
            raise own
        self.done(mirrored)
        return own


def _lead(
    repo: MetadataRepo, update: TableUpdate, message: str, author: Author, mirror: PushedMirror
) -> _Led:
    """Under the clone's lock: record ``update`` with every waiting write, answer them
    (their group's mirror to follow) and take the group's turn to mirror; what is left
    to do once the lock is let go (compacting the remote after a group's push too, which
    ``commit_and_push`` does itself when nothing waits)."""
    queue = Queue(repo.controldir)
    claimed = queue.claim()
    if not claimed and not mirroring(queue.folder):  # alone, no group mirror under way
        bases: list[str | None] = []  # the tip each build was on: the last one's is pushed

        def build(tree: GitTree) -> Mapping[str, bytes]:
            bases.append(tree.commit)
            return update.build(tree)

        commit = repo.commit_and_push(
            build, message, author, pushed=lambda c: mirror.start(update.files, c)
        )
        if commit is not None and bases and bases[-1] is not None:
            _note_lone(queue, bases[-1], commit)
        return _Led(repo, commit, None)
    good: list[Claimed] = []
    for c in claimed:
        if c.update is None:
            queue.answer(c.rid, Answer("redo"))
        else:
            good.append(c)
    updates = [update] + [cast(TableUpdate, c.update) for c in good]
    kept = {update.table: mirror.kept}
    for u in updates:  # read while the group is pushed
        if u.table not in kept:
            kept[u.table] = read_kept(mirror.context, u.table)
    items = [ChainItem(update.build, message, author.identity)]
    items += [
        ChainItem(u.build, c.message, c.identity) for u, c in zip(updates[1:], good, strict=True)
    ]
    try:
        answers, tip, last = repo.commit_chain_and_push(items)
    except BaseException:
        for c in good:
            _answer(queue, c.rid, Answer("unknown"))
        raise
    parent, parents = tip, []
    for a in answers:
        parents.append(parent)
        parent = a if isinstance(a, str) else parent
    recorded = [
        Recorded(u.table, u.metadata_bytes, dict(u.files), a)
        for u, a in zip(updates, answers, strict=True)
        if isinstance(a, str)
    ]
    led = _Led(repo, answers[0], last)
    turn = None
    if recorded and last is not None:
        try:
            turn = take(queue.folder, tip, last)
        except OSError:  # no turn: the group mirrors while it holds the lock, as before
            turn = None
    ours = [
        (c, a, p)
        for c, a, p in zip(good, answers[1:], parents[1:], strict=True)
        if isinstance(a, str)
    ]

    def tell(mirrored: bool, pending: str | None = None) -> None:
        for c, a, p in ours:
            _answer(queue, c.rid, Answer("recorded", a, p, last, mirrored, pending))

    for c, a in zip(good, answers[1:], strict=True):
        if not isinstance(a, str):
            _answer(queue, c.rid, Answer("none" if a is None else "redo"))
    if turn is not None:
        tell(False, turn.gid)  # recorded: each finishes once the group's turn is over
        checkpoint("group:turn")
        turn.pace(_PACE)
        led.mirror = lambda: mirror_group(mirror.context, recorded, kept, turn, tell)
    elif recorded:
        tell(mirror_group(mirror.context, recorded, kept))
    own = answers[0]

    def done(mirrored: bool) -> None:  # the leader's own write, once mirrored
        if own is not None and not isinstance(own, Exception):
            _group_manifest(repo, update, last)
            if mirrored:
                mirror.by_group()
            mirror.start(update.files, own)

    led.done = done
    return led


def _finish(
    repo: MetadataRepo, waiting: Waiting, update: TableUpdate, answer: Answer, mirror: PushedMirror
) -> str:
    """A write the leader recorded as ``answer.commit`` on ``answer.parent``: ``update``
    learns what it replaced there, its files are git's bytes at that commit (what the
    store mirrors; the manifest the group's last commit's), unless the leader mirrored
    it (known once its group's turn to mirror is over: ``Waiting.settled``)."""
    commit, parent = cast(str, answer.commit), answer.parent
    update.build(repo.tree(parent) if parent is not None else cast(TreeReader, _Empty()))
    for path in update.files:
        raw = repo.read_at(commit, path)
        if raw is not None:
            update.files[path] = raw
    _group_manifest(repo, update, answer.last)
    if waiting.settled(answer).mirrored:
        mirror.by_group()  # before start(): no PUT of this write's own documents
    mirror.start(update.files, commit)
    return commit


def _group_manifest(repo: MetadataRepo, update: TableUpdate, last: str | None) -> None:
    """The manifest this grouped write mirrors: the group's last commit's (see the
    module docstring)."""
    raw = repo.read_at(last, L.MANIFEST) if last is not None else None
    if raw is not None and L.MANIFEST in update.files:
        update.files[L.MANIFEST] = raw


def _refuse_if_recorded(repo: MetadataRepo, update: TableUpdate) -> None:
    """A claimed write its leader never answered may have been pushed: when the remote
    records its version, that is said as a push whose answer was lost (the write then
    completes from the remote's tip, ``_outcome``), never recorded again."""
    entries = entries_on(repo.remote_tip(), update.table)
    if entries and any(h.version == update.metadata.version for h in entries):
        lost = GitError(
            f"table {update.table!r}: the write grouped with others on clone {repo.path} "
            "lost its answer; the remote records its version"
        )
        mark_push_sent(lost)
        raise lost


def _note_lone(queue: Queue, base: str, commit: str) -> None:
    """Put a write pushed alone from ``base`` in the clone's chain of groups
    (``_mirrorturn``). ``base`` is the tip its build was on, not a walk of the log: a
    shallow clone would fetch the history for it."""
    try:
        note_lone(queue.folder, base, commit)
    except OSError:
        pass  # not in the chain: a group whose look finds it settles as a single write


def _answer(queue: Queue, rid: str, answer: Answer) -> None:
    try:
        queue.answer(rid, answer)
    except OSError:
        pass  # unanswered: the writer asks the remote (see the module docstring)


def _maintain(repo: MetadataRepo, last: str | None) -> None:
    if last is not None:
        repo.maintain_remote(last)


class _Empty:
    """The tree before the first commit."""

    commit = None

    def read(self, path: str) -> None:
        return None

    def entry(self, path: str | bytes) -> None:
        return None
