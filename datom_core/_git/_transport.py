"""Talking to ``origin``: a local bare repository directly, HTTP(S) through dulwich.

Both transports do the same three things, each O(what changed):

* ``heads()``: the remote's branches and the branch its ``HEAD`` names;
* ``fetch_branch()``: bring one branch tip and only the objects it adds into the clone;
* ``push()``: send the objects of new commits (given, never searched for) and move the
  branch by compare-and-swap from the tip the commits were built on.

A local remote is opened once per handle and written like git does (objects first, then
the ref under its ``.lock``); its loose objects and packs are kept few by :mod:`_maintenance`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from dulwich.client import GitClient, HTTPProxyUnauthorized, HTTPUnauthorized, LocalGitClient
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.file import FileLocked
from dulwich.graph import can_fast_forward
from dulwich.objects import Commit, ShaFile
from dulwich.pack import pack_objects_to_data
from dulwich.repo import Repo

from .._errors import DatomError, GitError, PushRejectedError
from . import _maintenance as maint
from ._lock import RepoLock
from ._objects import objects_of_commits
from ._remote import USERNAME_ENV, GitCredentials, scrub

__all__ = ["HttpTransport", "LocalTransport", "Transport", "check_ref_status"]

log = logging.getLogger("datom_core.git")

_HEADS = b"refs/heads/"
_LOOSE_MAX = 64  # more objects than this in one transfer arrive as a pack
_STALE_REMOTE_LOCK = 60.0  # seconds: a ref lock older than this in a local remote is dead
_FETCH_ROUNDS = 5
_TURN_LOCK = "datom-writers.lock"
# Ref statuses meaning "someone else moved the ref first": fetch, rebuild and retry.
_RACE_STATUSES = ("failed to write", "failed to lock", "unable to set", "non-fast-forward",
                  "fetch first", "stale info", "atomic push failed")  # fmt: skip


def _rejected(url: str, branch: bytes, why: str) -> PushRejectedError:
    return PushRejectedError(
        f"Push to {url} rejected: {why} on {branch[len(_HEADS) :].decode()} (another writer "
        "pushed first). Call fetch_and_reset(), redo the write on top, and push again."
    )


def add_objects(r: Repo, objects: Sequence[ShaFile]) -> None:
    """Store ``objects`` in ``r``: loose when few, as one pack when many."""
    missing = [o for o in objects if o.id not in r.object_store]
    if len(missing) > _LOOSE_MAX:
        r.object_store.add_objects([(o, None) for o in missing])
    else:
        for o in missing:
            r.object_store.add_object(o)


def missing_commits(source: Repo, target: Repo, tip: bytes) -> list[bytes]:
    """Commits reachable from ``tip`` in ``source`` that ``target`` lacks, parents first."""
    order: list[bytes] = []
    seen: set[bytes] = set()
    stack = [tip]
    while stack:
        sha = stack.pop()
        if sha in seen or sha in target.object_store:
            continue
        seen.add(sha)
        order.append(sha)
        c = source.object_store[sha]
        if isinstance(c, Commit):
            stack.extend(c.parents)
    order.reverse()
    return order


_Errors = Callable[[str], AbstractContextManager[None]]


class Transport:
    """What the clone needs from ``origin`` (see the module docstring)."""

    url: str
    errors: _Errors  # errors(action): a context translating failures into GitError
    credentials: GitCredentials | None = None

    def heads(
        self, action: str = "read the branches of"
    ) -> tuple[dict[bytes, bytes], bytes | None]:
        raise NotImplementedError

    def fetch_branch(self, r: Repo, branch: bytes) -> bytes | None:
        raise NotImplementedError

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        raise NotImplementedError

    def adopt_head(self, branch: bytes) -> None:
        """Make the remote's ``HEAD`` name ``branch`` where the transport can."""

    def turn(self, timeout: float) -> AbstractContextManager[object]:
        """Hold the remote's writer turn, where there is one (see :class:`LocalTransport`)."""
        return nullcontext()

    def client(self) -> tuple[GitClient, str]:
        """A dulwich client and path, for the whole-remote operations (clone, pull)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalTransport(Transport):
    """A bare repository on this machine (a path or ``file://`` URL)."""

    def __init__(self, url: str, path: str, errors: _Errors) -> None:
        self.url = url
        self.errors = errors
        self.path = Path(path)
        self._repo: Repo | None = None
        self._pid = os.getpid()
        self._pushes = 0
        self._access = maint.RemoteAccess(self.path)
        self._head_named: bytes | None = None  # the branch HEAD was last seen to name

    def _open(self) -> Repo:
        if self._repo is None or self._pid != os.getpid():
            try:
                self._repo = Repo(str(self.path))
            except Exception as e:
                raise GitError(
                    f"Cannot open the remote {self.url}: no git repository there. Check the "
                    "remote path/URL."
                ) from e
            self._pid = os.getpid()
        return self._repo

    @contextmanager
    def _using(self, action: str) -> Iterator[Repo]:
        if not self.path.is_dir():
            raise GitError(
                f"Cannot {action} {self.url}: no git repository there. Check the remote path/URL."
            )
        with self.errors(action), self._access.shared():
            yield self._open()

    def heads(
        self, action: str = "read the branches of"
    ) -> tuple[dict[bytes, bytes], bytes | None]:
        with self._using(action) as remote:
            refs = remote.refs.as_dict(_HEADS)
            head = remote.refs.get_symrefs().get(b"HEAD")
        return {_HEADS + k: v for k, v in refs.items()}, head

    def fetch_branch(self, r: Repo, branch: bytes) -> bytes | None:
        with self._using("fetch from") as remote:
            try:
                tip = remote.refs[branch]
            except KeyError:
                return None
            if tip not in r.object_store:
                commits = missing_commits(remote, r, tip)
                add_objects(r, list(objects_of_commits(remote.object_store, commits)))
        return tip

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        with self._using("push to") as remote:
            current = _read_ref(remote, branch)
            if current != old:
                raise _rejected(self.url, branch, "the remote moved")
            add_objects(remote, objects)
            if not self._swap(remote, branch, old, new):
                raise _rejected(self.url, branch, "the remote moved")
            self._pushes += 1
        if self._pushes % maint.REMOTE_CHECK_EVERY == 0:
            maint.compact_remote(self.path, self._open)

    def _swap(self, remote: Repo, branch: bytes, old: bytes | None, new: bytes) -> bool:
        for attempt in range(2):
            try:
                if old is None:
                    return bool(remote.refs.add_if_new(branch, new))
                return bool(remote.refs.set_if_equals(branch, old, new))
            except FileLocked as e:
                lock = Path(os.fsdecode(e.lockfilename))
                age = _age(lock)
                if attempt == 0 and (age is None or age > _STALE_REMOTE_LOCK):
                    if age is not None:
                        log.warning("removing the stale ref lock %s (left by a killed push)", lock)
                        lock.unlink(missing_ok=True)
                    continue  # released meanwhile, or removed: try the swap once more
                raise PushRejectedError(
                    f"Push to {self.url} rejected: {branch[len(_HEADS) :].decode()} is being "
                    "updated by a concurrent push. Call fetch_and_reset(), redo the write, push "
                    "again."
                ) from e
        return False

    def turn(self, timeout: float) -> AbstractContextManager[object]:
        """datom writers on this machine take turns (a ``flock`` in the remote) from fetch
        to push: under contention they queue instead of redoing work that a
        compare-and-swap would reject. Other git clients still meet the swap."""
        return RepoLock(self.path / _TURN_LOCK, timeout, poll=(0.001, 0.004))

    def adopt_head(self, branch: bytes) -> None:
        if self._head_named == branch:
            return
        with self._using("push to") as remote:
            if remote.refs.read_ref(b"HEAD") != b"ref: " + branch:
                refs: Any = remote.refs
                refs.set_symbolic_ref(b"HEAD", branch)
        self._head_named = branch

    def client(self) -> tuple[GitClient, str]:
        return LocalGitClient(), str(self.path)

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._repo is not None and self._pid == os.getpid():
            self._repo.close()
        self._repo = None
        self._access.close()


def check_ref_status(ref_status: Mapping[bytes, str | None], url: str) -> None:
    """Raise for every ref the remote refused to update."""
    for ref, status in ref_status.items():
        if status is None:
            continue
        if any(status.startswith(s) for s in _RACE_STATUSES):
            raise PushRejectedError(
                f"Push to {url} rejected for {ref.decode()} ({status}): another writer moved "
                "it. Call fetch_and_reset(), redo the write, and push again."
            )
        raise GitError(
            f"The remote {url} refused the push of {ref.decode()}: {status}. A server-side "
            "rule (hook, branch protection) declined it; ask the repository's owner."
        )


@contextmanager
def remote_errors(
    url: str, credentials: GitCredentials | None, token_env: str, action: str
) -> Iterator[None]:
    """Translate transport failures into :class:`GitError` with the token scrubbed out."""
    token = credentials.token if credentials else None
    where = f"{action} {url}"

    def fail(message: str) -> GitError:
        return GitError(scrub(message, token))

    try:
        yield
    except DatomError:
        raise
    except HTTPUnauthorized as e:
        hint = (
            f"no token was sent; set {token_env}"
            if credentials is None
            else f"the token was refused; check {token_env}"
        )
        raise fail(
            f"Authentication failed trying to {where} (HTTP 401): {hint} (a token with "
            f"access to this repository; username from {USERNAME_ENV}, default "
            "x-access-token)."
        ) from e
    except HTTPProxyUnauthorized as e:
        raise fail(f"The HTTP proxy refused to {where} (HTTP 407): check its credentials.") from e
    except NotGitRepository as e:
        raise fail(f"Cannot {where}: no git repository there. Check the remote path/URL.") from e
    except GitProtocolError as e:
        detail = " ".join(str(e).split())
        if "http resp 403" in detail:
            detail = (
                f"the server refused access (HTTP 403): the token in {token_env} "
                "lacks permission, or the server forbids this operation"
            )
        raise fail(f"Cannot {where}: {detail}. Check the remote and your access to it.") from e
    except OSError as e:
        raise fail(f"Cannot {where}: {e.strerror or e}. Check the remote path/URL.") from e
    except FileLocked as e:
        raise fail(f"Cannot {where}: a ref is locked by another git process; retry.") from e
    except ValueError as e:  # dulwich's word for a malformed server reply
        raise fail(f"Cannot {where}: unexpected reply ({e}). Is it a git server?") from e


def _read_ref(r: Repo, name: bytes) -> bytes | None:
    """A branch's sha read from its file (or packed-refs), without listing every ref."""
    refs: Any = r.refs
    try:
        return bytes(refs[name])
    except KeyError:
        return None


def _age(path: Path) -> float | None:
    """Seconds since ``path`` was last modified; None if it is gone."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


class HttpTransport(Transport):
    """A smart-HTTP(S) server, through dulwich's client (``errors`` translates failures)."""

    def __init__(
        self, url: str, client: GitClient, errors: _Errors, credentials: GitCredentials | None
    ) -> None:
        self.url = url
        self.credentials = credentials
        self._client = client
        self.errors = errors

    def heads(
        self, action: str = "read the branches of"
    ) -> tuple[dict[bytes, bytes], bytes | None]:
        with self.errors(action):
            result = self._client.get_refs("")
        refs = {n: s for n, s in result.refs.items() if n.startswith(_HEADS) and s is not None}
        return refs, (result.symrefs or {}).get(b"HEAD")

    def fetch_branch(self, r: Repo, branch: bytes) -> bytes | None:
        advertised: list[bytes | None] = [None]

        def wants(refs: Any, depth: int | None = None) -> list[bytes]:
            advertised[0] = refs.get(branch)
            tip = advertised[0]
            return [tip] if tip is not None and tip not in r.object_store else []

        # A push landing mid-fetch can advertise a tip newer than the pack sent: ask again.
        for attempt in range(_FETCH_ROUNDS):
            try:
                with self.errors("fetch from"):
                    self._client.fetch("", r, determine_wants=wants)
            except GitError as e:
                # A stateless server re-reads its refs for the pack request: a tip that moved
                # since the advertisement is "invalid" there. Ask again on the new refs.
                if attempt + 1 == _FETCH_ROUNDS or not isinstance(e.__cause__, GitProtocolError):
                    raise
                time.sleep(0.05 * (attempt + 1))
                continue
            tip = advertised[0]
            if tip is None or tip in r.object_store:
                return tip
        raise GitError(f"fetch from {self.url} kept racing concurrent pushes; retry")

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        def update_refs(theirs: dict[bytes, bytes]) -> dict[bytes, bytes]:
            if theirs.get(branch) != old:
                raise _rejected(self.url, branch, "the remote moved")
            return {branch: new}

        def generate(*_args: Any, **_kwargs: Any) -> Any:
            return pack_objects_to_data([(o, None) for o in objects])

        with self.errors("push to"):
            result = self._client.send_pack("", update_refs, generate)
        check_ref_status(result.ref_status or {}, self.url)
        # A server may answer "ok" though a concurrent push won the ref (dulwich's does).
        landed = self.heads()[0].get(branch)
        if landed != new and not self._built_on(r, branch, new):
            raise PushRejectedError(
                f"Push to {self.url} lost a race: the remote reported success but a concurrent "
                f"push moved {branch[len(_HEADS) :].decode()} elsewhere. Call fetch_and_reset(), "
                "redo the write, and push again."
            )

    def _built_on(self, r: Repo, branch: bytes, new: bytes) -> bool:
        """Whether the branch moved on from ``new`` (another writer built on it already)."""
        tip = self.fetch_branch(r, branch)
        return tip is not None and new in r.object_store and can_fast_forward(r, new, tip)

    def client(self) -> tuple[GitClient, str]:
        return self._client, ""

    def close(self) -> None:
        self._client.close()
