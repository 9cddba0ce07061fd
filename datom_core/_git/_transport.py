"""Talking to ``origin``: the transport interface (:class:`Transport`, each call O(what
changed)), and a local bare repository used directly (HTTP(S), through dulwich's client,
is in :mod:`._http`).

A local remote is opened once per handle and written like git does (objects, then the ref
under its ``.lock``; few loose objects and packs: :mod:`_maintenance`). Every datom push to it
holds the writers' turn, which keeps its holder's tenure: a ref lock in the way is a git
process's (a colleague's push, ``git pack-refs``), waited for and never removed, unless a
datom pusher killed under the turn left it (:mod:`._gitlocks`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from dulwich.errors import NotGitRepository
from dulwich.object_store import BaseObjectStore
from dulwich.objects import ObjectID, ShaFile
from dulwich.pack import PackFileDisappeared
from dulwich.refs import Ref
from dulwich.repo import Repo

from .._checkpoint import checkpoint
from .._errors import GitError, PushRejectedError
from . import _maintenance as maint
from ._copy import add_objects, copy_commits, kept_till_fetched, receive_objects
from ._fast._share import share_objects
from ._gitlocks import sweep_killed, unstale
from ._groupshare import LOCK_FILES, lock_mode, ref_paths, shared_perm, widen
from ._lock import RepoLock
from ._read import has
from ._receive import check_current_branch, hooks_of, post_receive, pre_receive
from ._remote import GitCredentials
from ._remoterefs import read_branch, read_branches
from ._settings import check_object_format, open_repo, precious
from ._tipview import TipView

__all__ = ["FETCH_PATIENCE", "Heads", "LocalTransport", "Transport", "rejected"]

log = logging.getLogger("datom_core.git")

_HEADS = b"refs/heads/"
_TURN_TIMEOUT = 600.0
_UNKEEP_WAIT = 5.0  # seconds a compaction waits for the writers' turn to unkeep its packs
FETCH_PATIENCE = 30.0  # seconds a fetch racing pushes or a server's 5xx is asked again
_TURN_LOCK = "datom-writers.lock"


def rejected(url: str, branch: bytes, why: str) -> PushRejectedError:
    return PushRejectedError(
        f"Push to {url} rejected: {why} on {branch[len(_HEADS) :].decode()} (another writer "
        "pushed first). Call fetch_and_reset(), redo the write on top, and push again."
    )


Errors = Callable[[str], AbstractContextManager[None]]
Heads = tuple[dict[bytes, bytes], bytes | None]  # the branches, and the one HEAD names


class Transport:
    """What the clone needs from ``origin``; the defaults are the HTTP(S) transport's."""

    url: str
    errors: Errors  # errors(action): a context translating failures into GitError
    credentials: GitCredentials | None = None

    def heads(self, action: str = "read the branches of") -> Heads:
        """The remote's branches and the branch its ``HEAD`` names."""
        raise NotImplementedError

    def fetch_branch(self, r: Repo, branch: bytes, depth: int | None = None) -> bytes | None:
        """Bring the branch tip and the objects it adds (``depth``: of that many commits
        only, where the transport can; see :meth:`MetadataRepo.clone`'s ``shallow``)."""
        raise NotImplementedError

    def fetch_heads(self, r: Repo, depth: int | None = None) -> Heads:
        """:meth:`heads`, each branch fetched (a clone); those that fetched nothing left out."""
        heads, named = self.heads()
        fetched = {n: self.fetch_branch(r, n, depth) for n in heads}
        return {n: sha for n, sha in fetched.items() if sha is not None}, named

    def branch_tip(self, branch: bytes) -> bytes | None:
        """The commit ``branch`` is on in the remote (None: no such branch); nothing is
        fetched."""
        return self.heads()[0].get(branch)

    def holds(self, sha: bytes) -> bool:
        """Whether the remote is known to hold the object ``sha``, asked without the
        network (False where only the network could tell)."""
        return False

    def attach(self, r: Repo, share: bool) -> None:
        """Called once per opened clone: let it read the remote's objects in place where
        the transport can and ``share`` allows (a local remote, see :mod:`._fast._share`)."""

    @contextmanager
    def view(self, r: Repo, branch: bytes) -> Iterator[tuple[bytes | None, BaseObjectStore]]:
        """``(tip, store)``: the branch tip and an object store holding it, to build on."""
        yield self._tip(r, branch), r.object_store

    def _tip(self, r: Repo, branch: bytes, recent: bool = True) -> bytes | None:
        raise NotImplementedError

    def tip_view(self, r: Repo, branch: bytes, recent: bool = False) -> TipView:
        """The branch tip as a read-only view, the clone's branch left where it is;
        ``recent``: a look a few seconds old may stand in for a new one (see ``kept``)."""
        view = TipView(r.object_store, self._tip(r, branch, recent))
        view.kept = self.kept
        return view

    # Whether the tip the last view or tip_view gave came from a look kept from an
    # earlier operation (HTTP, see _fast/_advert) rather than a new one: a decision to
    # record nothing is then made again on a new look.
    kept = False

    def forget(self) -> bool:
        """Drop a kept look at the remote (the next view asks it); returns :attr:`kept`."""
        kept, self.kept = self.kept, False
        return kept

    def deepen(self, r: Repo, branch: bytes) -> None:
        """Fetch the whole history of ``branch`` into a shallow clone (a local remote's
        clones are never shallow)."""

    def fetch_commit(self, r: Repo, sha: bytes, branch: bytes) -> None:
        """Make ``sha`` (a commit the remote has) and its objects present in the clone."""
        if not has(r.object_store, sha):
            self.fetch_branch(r, branch)

    def receive(
        self, r: Repo, branch: bytes, tip: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> int:
        """After a push of ``new`` (with ``objects``) on ``tip``: make both present in the
        clone; returns how many loose files the clone gained."""
        if tip is not None:
            self.fetch_commit(r, tip, branch)
        return kept_till_fetched(r, branch, new, lambda: add_objects(r, objects))

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        """Send the new commits' ``objects`` (given, never searched for) and move ``branch``
        by compare-and-swap from ``old``; :class:`PushRejectedError` when it moved."""
        raise NotImplementedError

    def adopt_head(self, branch: bytes) -> None:
        """Make the remote's ``HEAD`` name ``branch`` where the transport can."""

    def turn(self, timeout: float) -> AbstractContextManager[object]:
        """Hold the remote's writers' turn, from ``view`` to ``push``, where there is one
        (a local remote: see :class:`LocalTransport`)."""
        return nullcontext()

    def maintain(self, made: bytes | None = None) -> None:
        """Compact the remote now and then, where datom can (a local remote); ``made``:
        the commit just pushed (see :func:`_maintenance.due`)."""

    def close(self) -> None:
        pass


class LocalTransport(Transport):
    """A bare repository on this machine (a path or ``file://`` URL)."""

    def __init__(self, url: str, path: str, errors: Errors) -> None:
        self.url = url
        self.errors = errors
        self.path = Path(path)
        # A repository with a working tree: its git folder is the remote's (locks, refs).
        self._checked_out = (self.path / ".git").is_dir()
        if self._checked_out:
            self.path = self.path / ".git"
        self._repo: Repo | None = None
        self._pid = os.getpid()
        self._pushes = 0
        self._loose = 0  # loose objects written into the remote since its last compaction
        self._access = maint.RemoteAccess(self.path)
        self._head_named: bytes | None = None  # the branch HEAD was last seen to name

    def attach(self, r: Repo, share: bool) -> None:
        if not share or not self.path.is_dir():
            return  # not wanted, or not there (yet): the clone copies what it fetches
        try:
            with self._using("read from") as remote:
                share_objects(r.object_store, remote.object_store)
        except GitError:
            return  # not a repository: the operation that needs it says so

    def holds(self, sha: bytes) -> bool:
        try:
            with self._using("read from") as remote:
                return has(remote.object_store, sha)
        except GitError:
            return False

    def _open(self) -> Repo:
        if self._repo is None or self._pid != os.getpid():
            with self.errors("open the remote"):
                opened = open_repo(self.path, f"The remote {self.url}", remote=True)
            try:
                check_object_format(opened, f"The remote {self.url}")
            except GitError:
                opened.close()
                raise
            self._repo, self._pid = opened, os.getpid()
            # dulwich gives the objects and folders it makes this (from core.sharedRepository
            # only; a setgid group folder says so too, see _groupshare).
            perm = opened.object_store.shared_perm = shared_perm(opened)
            widen([self.path / n for n in LOCK_FILES], perm)  # the team's
            self._access.file_mode = lock_mode(opened)
        return self._repo

    @contextmanager
    def _using(self, action: str) -> Iterator[Repo]:
        with self.errors(action):
            if not self.path.is_dir():
                raise NotGitRepository(self.url)  # its message says so
            remote = self._open()  # first: it tells the lock file's mode
            with self._access.shared():
                yield remote

    def heads(self, action: str = "read the branches of") -> Heads:
        with self._using(action) as remote:
            refs = read_branches(self.path, self.url)
            head = remote.refs.get_symrefs().get(Ref(b"HEAD"))
        return refs, head

    def branch_tip(self, branch: bytes) -> bytes | None:
        with self._using("read from"):
            return self._read_ref(branch)

    def _read_ref(self, name: bytes) -> bytes | None:
        return read_branch(self.path, name, self.url)  # strictly: see _remoterefs

    @contextmanager
    def view(self, r: Repo, branch: bytes) -> Iterator[tuple[bytes | None, BaseObjectStore]]:
        """The remote's own store: building on it copies nothing into the clone while
        other writers wait for their turn (the clone catches up afterwards)."""
        with self._using("fetch from") as remote:
            yield self._read_ref(branch), remote.object_store

    def tip_view(self, r: Repo, branch: bytes, recent: bool = False) -> TipView:
        """Read in the remote's own store: nothing is copied into the clone."""
        with self._using("fetch from") as remote:
            return TipView(remote.object_store, self._read_ref(branch), self._reading)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self.errors("read from"), self._access.shared():
            yield

    def fetch_commit(self, r: Repo, sha: bytes, branch: bytes) -> None:
        with self._using("fetch from") as remote:
            kept_till_fetched(r, branch, sha, lambda: copy_commits(remote, r, sha))

    def receive(
        self, r: Repo, branch: bytes, tip: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> int:
        """Nothing to copy when the clone reads the remote's objects (see
        :mod:`._fast._share`); otherwise the other writers' commits, then those objects
        the clone lacks."""
        if has(r.object_store, new):
            return 0
        with self._using("fetch from") as remote:
            missing = [o for o in objects if o.id not in r.object_store]
            return kept_till_fetched(
                r, branch, new, lambda: copy_commits(remote, r, tip) + add_objects(r, missing)
            )

    def fetch_branch(self, r: Repo, branch: bytes, depth: int | None = None) -> bytes | None:
        """Whole history (``depth`` ignored): a clone of a local remote reads its objects
        in place where sharing is on, and copies them cheaply where it is not."""
        with self._using("fetch from") as remote:
            tip = self._read_ref(branch)
            kept_till_fetched(r, branch, tip, lambda: copy_commits(remote, r, tip))
        return tip

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        """Under the writers' turn (re-entrant: ``commit_and_push`` already holds it), so
        that the ref locks a killed pusher left are known (see the module docstring)."""
        with self.turn(_TURN_TIMEOUT), self._using("push to") as remote:
            current = self._read_ref(branch)
            if current != old:
                raise rejected(self.url, branch, "the remote moved")
            if self._checked_out:
                check_current_branch(remote, self.url, branch)
            perm, hooks = shared_perm(remote), hooks_of(remote)
            with receive_objects(remote, objects) as loose:  # a pack kept till the swap
                self._loose += loose
                checkpoint("git:push:objects")
                pre_receive(hooks, self.url, branch, old, new)
                if not self._swap(remote, branch, old, new):
                    raise rejected(self.url, branch, "the remote moved")
            widen(ref_paths(self.path, branch), perm)
            self._pushes += 1
        post_receive(hooks, branch, old, new)  # the push stands whatever they do

    def _swap(self, remote: Repo, branch: bytes, old: bytes | None, new: bytes) -> bool:
        """Compare-and-swap the branch (the caller holds the writers' turn)."""
        refs: Any = remote.refs
        name, sha = Ref(branch), ObjectID(new)
        if old is None:
            return bool(unstale(lambda: refs.add_if_new(name, sha), self.url))
        return bool(unstale(lambda: refs.set_if_equals(name, ObjectID(old), sha), self.url))

    def turn(self, timeout: float) -> AbstractContextManager[object]:
        """datom writers on this machine take turns (a ``flock`` in the remote) from fetch
        to push: under contention they queue instead of redoing work that a
        compare-and-swap would reject. Other git clients still meet the swap. The turn
        keeps its holder's tenure: the next holder after a killed one removes the ref
        locks it left."""
        return RepoLock(
            self.path / _TURN_LOCK,
            timeout,
            lambda: lock_mode(self._open()),
            on_inherit=partial(sweep_killed, self.path),
        )

    def maintain(self, made: bytes | None = None) -> None:
        """Every ``REMOTE_CHECK_EVERY`` pushes of this handle, and after a push whose commit
        ``made`` is due (:func:`_maintenance.due`: a remote written by short-lived
        processes), compact the remote if it needs it. Called after the writers' turn
        (the other writers push meanwhile), outside any read of the remote."""
        mine = self._pushes >= maint.REMOTE_CHECK_EVERY
        if not mine and (made is None or not maint.due(made, maint.REMOTE_CHECK_EVERY)):
            return
        if precious(self._open()):
            return  # extensions.preciousObjects: compaction deletes objects (_settings)
        with self._access.shared():
            idle = not maint.may_need_compaction(self._open(), self._loose)
        if idle:
            self._pushes = 0
            return
        try:
            done = maint.compact_remote(
                self.path, self._open, self._access, wait=0.5, turn=lambda: self.turn(_UNKEEP_WAIT)
            )
        except (OSError, PackFileDisappeared) as e:  # the push is recorded: tried again later
            log.warning("could not compact %s (%s); it is tried again later", self.url, e)
            return
        if done:  # its packs and lock files are the team's already (_packs, _access)
            self._pushes = self._loose = 0

    def adopt_head(self, branch: bytes) -> None:
        """Looked at without the writers' turn (each fresh process does it once, and
        ``HEAD`` mostly names the branch already); changed under it."""
        if self._head_named == branch:
            return
        wanted = b"ref: " + branch
        with self._using("read from") as remote:
            named = remote.refs.read_ref(Ref(b"HEAD"))
        if named != wanted:
            with self.turn(_TURN_TIMEOUT), self._using("push to") as remote:
                if remote.refs.read_ref(Ref(b"HEAD")) != wanted:
                    refs: Any = remote.refs
                    unstale(lambda: refs.set_symbolic_ref(b"HEAD", branch), self.url)
                    widen([self.path / "HEAD"], shared_perm(remote))
        self._head_named = branch

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._repo is not None and self._pid == os.getpid():
            self._repo.close()
        self._repo = None
        self._access.close()
