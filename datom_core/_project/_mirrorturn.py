"""The order of a clone's group mirrors: each group's store mirror after the one before.

A group's leader pushes under the clone's lock, then lets it go and mirrors the group
into the store (``_groupmirror``), so the next group's push overlaps this mirror. The
mirrors of the clone's groups are kept in push order by *turns*, files in the clone's
queue folder (``.git/datom-queue/``):

- Under the clone's lock, right after its push, a leader takes a turn (:func:`take`):
  it creates ``<gid>.turn`` holding an exclusive ``flock`` (released by the kernel if the
  leader dies), and appends ``<gid> <base> <last>`` (the commit its chain grew from and
  its last commit) to the clone's ``chain`` of groups. The group before it in ``chain``
  is its predecessor: pushes, and so turns, are taken one at a time under the lock.
- Before it puts anything in the store, the leader waits for the predecessor's turn to
  be over (:meth:`Turn.wait`: a shared ``flock`` on its file). A predecessor whose turn
  ended without ``done`` (it died, or its mirror failed: it may never have waited for
  its own predecessor) is passed over for the one before it, so a turn always begins
  after every earlier group's turn that could still be writing.
- The leader marks its turn ``done`` once its manifest is put, and lets it go.
- A turn held past :data:`TURN_WAIT` is taken for a leader that stopped without dying
  (a frozen process, a store that never answers): the group waiting on it gives up its
  group mirror (a :class:`StoreError` saying so) and each of its writers mirrors its own
  write, as after a leader that failed; nothing waits for ever on another process.

So within a clone a later group's documents never land before an earlier group's, and
a later group's manifest is never overwritten by an earlier group's (the S3 ``If-Match``
rules of ``_mirror_puts`` still hold each PUT against other clones' writers).

The turns also carry the ETags of what the clone's groups last put (``etags.json``,
read and written inside a turn only): the next leader's conditional PUTs name the copies
they replace without a HEAD first (a stale one is refused and looked up again).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from datom_core._errors import StoreError

__all__ = [
    "TURN_WAIT",
    "Turn",
    "followed_in_order",
    "load_etags",
    "mirroring",
    "note_lone",
    "save_etags",
    "take",
    "wait_released",
]

CHAIN = "chain"
LONE = "-"  # a write pushed alone, with no group mirror to wait for (note_lone)
ETAGS = "etags.json"
_KEEP = 64  # groups the chain remembers (a group's look at the remote passes a few)
_WAIT_POLL = 0.005  # seconds at most between looks at a turn waited for (wait_released)
TURN_WAIT = 600.0
"""Seconds a group waits for the turn before it (the clone's lock waits as long)."""


class Turn:
    """A group's turn to mirror (see the module docstring), held until :meth:`end`."""

    def __init__(self, folder: Path, gid: str, pred: str | None, fd: int) -> None:
        self.folder, self.gid, self.pred = folder, gid, pred
        self._fd: int | None = fd

    def wait(self) -> None:
        """Block until every earlier group of the clone that could still write is done
        (:class:`StoreError` past :data:`TURN_WAIT` in all)."""
        pred, deadline = self.pred, time.monotonic() + TURN_WAIT
        while pred is not None:
            state = wait_released(self.folder, pred, max(deadline - time.monotonic(), 0.0))
            if state is None or state.get("state") == "done":
                return  # its turn began after the one before it ended, and so on
            pred = state.get("pred")  # it died or failed, maybe before waiting itself

    def pace(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, for the group before to be done mirroring
        (called under the clone's lock: the next push waits with it, so that the clone
        pushes and mirrors one group each at a time, the groups as large as the writers
        waiting meanwhile make them; bounded, as the mirror before may need the lock)."""
        if self.pred is not None:
            with suppress(StoreError):  # not over yet: the push goes on without it
                wait_released(self.folder, self.pred, timeout)

    def end(self, done: bool) -> None:
        """Let the turn go: ``done`` once the group's manifest is put (its file is then
        removed), else marked failed for the groups after it (they wait further back)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _write_state(fd, {"pred": self.pred, "state": "done" if done else "failed"})
        finally:
            os.close(fd)
        if done:
            _unlink(self.folder / f"{self.gid}.turn")


def take(folder: Path, base: str | None, last: str) -> Turn:
    """Under the clone's lock, after a group's push from ``base`` to ``last``: its turn."""
    folder.mkdir(exist_ok=True)
    chain = _chain(folder)
    pred = chain[-1][0] if chain else None
    gid = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    fd = os.open(folder / f"{gid}.turn", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held while the group mirrors
        _write_state(fd, {"pred": pred})
        line = f"{gid} {base or '-'} {last}\n"
        if len(chain) >= 2 * _KEEP:  # rewritten whole now and then (only under the lock)
            kept = "".join(f"{g} {b} {la}\n" for g, b, la in chain[-_KEEP:])
            _replace(folder / CHAIN, (kept + line).encode())
        else:
            with open(folder / CHAIN, "a", encoding="ascii") as f:
                f.write(line)
    except BaseException:
        os.close(fd)
        raise
    return Turn(folder, gid, pred, fd)


def mirroring(folder: Path) -> bool:
    """Under the clone's lock: whether the last group's turn is not done (it may still
    put documents: a write pushed now joins the turns, as a group of one)."""
    for gid, _, _ in reversed(_chain(folder)):
        if gid != LONE:
            return not _done(folder, gid)
    return False


def note_lone(folder: Path, base: str, last: str) -> None:
    """Under the clone's lock, after a write pushed alone from ``base`` to ``last`` while
    no turn was under way (:func:`mirroring`): its mirror begins after every group's
    before it is done, so the groups before see it as in order. Only in a clone whose
    groups keep a chain."""
    if (folder / CHAIN).exists():
        with open(folder / CHAIN, "a", encoding="ascii") as f:
            f.write(f"{LONE} {base} {last}\n")


def wait_released(folder: Path, gid: str, timeout: float | None = None) -> dict[str, Any] | None:
    """Block until the turn ``gid`` is over; its state, None when it ended ``done`` and
    was removed. :class:`StoreError` after ``timeout`` seconds (default
    :data:`TURN_WAIT`): its leader stopped without dying."""
    try:
        fd = os.open(folder / f"{gid}.turn", os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        # Looked at, not slept on (a blocking flock has no timeout), every few ms: the
        # next group's mirror starts at most that much after this one's turn ends.
        limit = TURN_WAIT if timeout is None else timeout
        deadline, pause = time.monotonic() + limit, 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return _state(fd)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"A write group's store mirror held its turn ({folder / gid}) for "
                        f"over {limit:g}s: its process stopped without ending. The writes "
                        "waiting on it mirror their own documents; stop the stuck process "
                        "(a datom write of this clone)."
                    ) from None
            time.sleep(pause)
            pause = min(pause * 2, _WAIT_POLL)
    finally:
        os.close(fd)


def followed_in_order(folder: Path, last: str, head: str | None) -> bool:
    """Whether the remote moved from ``last`` to ``head`` by this clone's later groups
    only, each still in or before its turn, or done with it: their mirrors land after
    this one (or, for one that fails later, its writers' do), so a copy this group put
    is the remote's unless one of them replaces it."""
    after = {base: (gid, made) for gid, base, made in _chain(folder)}
    current = last
    for _ in range(len(after)):
        if current == head:
            return True
        step = after.get(current)
        if step is None or not _live_or_done(folder, step[0]):
            return False
        current = step[1]
    return current == head


def load_etags(folder: Path) -> dict[str, str]:
    """The ETags the clone's groups last put (read inside a turn)."""
    try:
        doc = json.loads((folder / ETAGS).read_bytes())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in doc.items() if v} if isinstance(doc, dict) else {}


def save_etags(folder: Path, etags: Mapping[str, str | None]) -> None:
    """Record ``etags`` over the earlier ones (written inside a turn)."""
    merged = load_etags(folder) | {k: v for k, v in etags.items() if v}
    _replace(folder / ETAGS, json.dumps(merged).encode())


def _live_or_done(folder: Path, gid: str) -> bool:
    if gid == LONE:
        return True  # pushed after every turn before it was done (note_lone)
    return _done(folder, gid, held=True)  # held: its leader's mirror is still to land


def _done(folder: Path, gid: str, held: bool = False) -> bool:
    """Whether the turn ``gid`` is done (``held``: what a turn its leader holds counts as)."""
    try:
        fd = os.open(folder / f"{gid}.turn", os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True  # removed once done
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return held
        return _state(fd).get("state") == "done"
    finally:
        os.close(fd)


def _chain(folder: Path) -> list[tuple[str, str, str]]:
    try:
        text = (folder / CHAIN).read_text(encoding="ascii")
    except (OSError, ValueError):
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _write_state(fd: int, state: Mapping[str, Any]) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(state).encode(), 0)


def _state(fd: int) -> dict[str, Any]:
    try:
        doc = json.loads(os.pread(fd, 1 << 16, 0))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
