"""The writes waiting on one clone for the next push: files in ``.git/datom-queue/``.

A writer that finds the clone's lock held puts its prepared write there (``<id>.req``:
the version's documents, its history entry, message and author, as JSON: nothing but
data crosses between processes) and waits for the lock. The next holder of the lock
claims every waiting write (renaming it ``<id>.work``), records them in one push and
answers each (``<id>.done``) before it lets the lock go; a writer that gets the lock
and finds its write still waiting takes it back and leads itself (``_group``).

Only the holder of the clone's lock claims or answers, so a writer that holds the lock
reads a settled state: its write is waiting, answered, or claimed and never answered
(the holder died, or failed before answering: the remote decides). An answer
"recorded, mirror under way" (``Answer.turn``) is final as to git; the leader replaces
it, before its group's turn to mirror ends, with the mirror's outcome. A waiting writer
holds a shared ``flock`` on its own request file, released by the kernel when it dies:
a request whose writer is gone is dropped, never recorded for no one.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from datom_core._errors import StoreError
from datom_core._project._build import TableUpdate
from datom_core._project._mirrorturn import wait_released
from datom_core._project._parse import parse_metadata

__all__ = ["Answer", "Claimed", "Queue", "Waiting", "decode_update", "encode_update"]

FORMAT = "datom-group-1"
FOLDER = "datom-queue"
MAX_GROUP = 64  # writes claimed for one push at most
_STALE = 3600.0  # seconds after which a leftover answer or claim is swept


@dataclass(frozen=True)
class Claimed:
    """A waiting write the lock holder took: its id, update, message and author."""

    rid: str
    update: TableUpdate | None  # None: the request did not decode (it redoes itself)
    message: str
    identity: str


@dataclass(frozen=True)
class Answer:
    """The lock holder's answer to one claimed write. ``state``: ``recorded`` (``commit``,
    built on ``parent``, in a push whose last commit is ``last``; ``mirrored`` when the
    holder mirrored it into the store too), ``none`` (the tip held the version: no
    commit), ``redo`` (its build failed: the writer redoes its write alone, meeting the
    error itself) or ``unknown`` (the push failed: the remote decides)."""

    state: str
    commit: str | None = None
    parent: str | None = None
    last: str | None = None
    mirrored: bool = False
    turn: str | None = None


def encode_update(update: TableUpdate, message: str, identity: str) -> bytes:
    """A request's JSON text (:class:`TypeError` when the entry holds no JSON value)."""
    doc = {
        "format": FORMAT,
        "project": update.project_name,
        "table": update.table,
        "metadata": base64.b64encode(update.metadata_bytes).decode("ascii"),
        "entry": update.entry,
        "written_at": update.written_at,
        "message": message,
        "identity": identity,
    }
    return json.dumps(doc, allow_nan=False).encode()


def decode_update(raw: bytes) -> tuple[TableUpdate, str, str]:
    """``(update, message, identity)`` of a request's JSON text (ValueError/KeyError/TypeError
    when it is not one: a writer of another release)."""
    doc = json.loads(raw)
    if doc.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} request")
    metadata_bytes = base64.b64decode(doc["metadata"], validate=True)
    table = str(doc["table"])
    entry = doc["entry"]
    update = TableUpdate(
        str(doc["project"]),
        table,
        metadata_bytes,
        parse_metadata(metadata_bytes, key=f"{table}/metadata.json"),
        dict(entry) if isinstance(entry, Mapping) else None,
        written_at=str(doc["written_at"]),
    )
    return update, str(doc["message"]), str(doc["identity"])


class Waiting:
    """One writer's request in the queue, held (its shared ``flock``) until :meth:`close`."""

    def __init__(self, folder: Path, body: bytes) -> None:
        folder.mkdir(exist_ok=True)
        self.rid = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        self._folder = folder
        tmp = folder / f"{self.rid}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # alive while held (see the module docstring)
            os.write(fd, body)
            os.rename(tmp, self._path("req"))
        except BaseException:
            os.close(fd)
            _unlink(tmp)
            raise
        self._fd: int | None = fd

    def _path(self, kind: str) -> Path:
        return self._folder / f"{self.rid}.{kind}"

    def withdraw(self) -> bool:
        """Take the request back unless a lock holder claimed it; True when taken back."""
        try:
            os.rename(self._path("req"), self._path("gone"))
        except FileNotFoundError:
            return False
        return True

    def state(self) -> Answer | None:
        """Under the clone's lock: the answer, None while still waiting (``unknown``
        when it was claimed and never answered)."""
        if self._path("req").exists():
            return None
        try:
            return _answer_of(self._path("done").read_bytes())
        except OSError:
            return Answer("unknown")

    def answered(self) -> Answer | None:
        """The answer, without the clone's lock, once the lock holder has written it (it is
        final then: written whole, by a rename); None before."""
        try:
            raw = self._path("done").read_bytes()
        except FileNotFoundError:
            return None
        return _answer_of(raw)

    def settled(self, answer: Answer) -> Answer:
        """The final answer of a write recorded while its group's mirror is under way
        (``answer.turn``), once that mirror's turn is over: not ``mirrored`` when its
        leader stopped without saying, or held the turn past ``TURN_WAIT`` (the writer
        then mirrors its own write)."""
        if answer.turn is None:
            return answer
        try:
            wait_released(self._folder, answer.turn)  # the leader answers before it lets go
        except StoreError:  # a leader stopped mid-mirror: as if it stopped without saying
            return replace(answer, mirrored=False, turn=None)
        final = self.answered()
        if final is None or final.turn is not None or final.commit != answer.commit:
            return replace(answer, mirrored=False, turn=None)
        return final

    def close(self) -> None:
        """Release the request and remove its files."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for kind in ("req", "gone", "work", "done"):
            _unlink(self._path(kind))


class Queue:
    """The clone's queue folder, as its lock holder sees it."""

    def __init__(self, controldir: Path) -> None:
        self.folder = controldir / FOLDER

    def wait(self, body: bytes) -> Waiting:
        """Put a request in the queue (the caller then waits for the clone's lock)."""
        return Waiting(self.folder, body)

    def claim(self) -> list[Claimed]:
        """Under the clone's lock: take the waiting requests of live writers, oldest
        first (at most :data:`MAX_GROUP`); those of dead writers are dropped."""
        out: list[Claimed] = []
        for path in self._waiting():
            if len(out) >= MAX_GROUP:
                break
            rid = path.name[: -len(".req")]
            work = path.with_name(f"{rid}.work")
            try:
                os.rename(path, work)
            except FileNotFoundError:
                continue  # taken back meanwhile
            body = _if_alive(work)
            if body is None:
                _unlink(work)
                continue
            try:
                update, message, identity = decode_update(body)
            except Exception:  # another release's request, or a damaged one
                out.append(Claimed(rid, None, "", ""))
                continue
            out.append(Claimed(rid, update, message, identity))
        return out

    def answer(self, rid: str, answer: Answer) -> None:
        """Under the clone's lock: tell the writer of ``rid`` its outcome."""
        doc: dict[str, Any] = {"state": answer.state}
        if answer.commit is not None:
            doc["commit"], doc["parent"] = answer.commit, answer.parent
            doc["last"], doc["mirrored"] = answer.last, answer.mirrored
            if answer.turn is not None:
                doc["turn"] = answer.turn
        tmp = self.folder / f"{rid}.answer-tmp"
        tmp.write_bytes(json.dumps(doc).encode())
        os.replace(tmp, self.folder / f"{rid}.done")

    def _waiting(self) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(self.folder), key=lambda e: e.name)
        except FileNotFoundError:
            return
        cutoff = time.time() - _STALE
        for entry in entries:
            if entry.name.endswith(".req"):
                yield Path(entry.path)
            else:
                _sweep(Path(entry.path), cutoff)


def _answer_of(raw: bytes) -> Answer:
    try:
        doc = json.loads(raw)
        commit, parent, last = doc.get("commit"), doc.get("parent"), doc.get("last")
        turn = doc.get("turn")
        turn = str(turn) if turn is not None else None
        return Answer(str(doc["state"]), commit, parent, last, doc.get("mirrored") is True, turn)
    except (ValueError, KeyError, TypeError, AttributeError):
        return Answer("unknown")


def _if_alive(path: Path) -> bytes | None:
    """The body of a claimed request whose writer still waits (holds its ``flock``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(os.dup(fd), "rb") as f:
                return f.read()
        return None  # nobody holds it: its writer is gone
    finally:
        os.close(fd)


def _sweep(path: Path, cutoff: float) -> None:
    """Remove a leftover answer or claim (its writer died before reading it)."""
    try:
        if path.stat().st_mtime < cutoff:
            path.unlink()
    except OSError:
        pass


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
