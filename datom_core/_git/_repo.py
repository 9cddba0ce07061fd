"""The metadata repository: a clone, its working tree and its ``origin``.

Every operation does work proportional to what changed: a commit is the parent commit's
tree plus the changed blobs (no working-tree scan), the working tree and the index are
updated for the changed paths only, a push sends exactly the objects of the new commits
and moves the remote branch by compare-and-swap, and a fetch brings one branch tip and the
objects it adds (none for a clone of a local remote: it reads them there, see ``_fast/_share``).
One dulwich repository (and one remote) is kept open per handle, re-opened after ``fork``.

The working tree mirrors HEAD for the paths datom writes. A crash while it is updated is
repaired by the next operation (a journal in ``.git``, ``_worktree``; git's lock files,
``_gitlocks``). Hand edits to tracked files are not looked for each time (the scan this
design avoids): :meth:`MetadataRepo.commit_and_push` builds on the remote tip's tree,
never on the working tree, and :meth:`pull` refuses a clone with such edits.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import cast

from dulwich.config import StackedConfig
from dulwich.errors import NotGitRepository
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from .._checkpoint import checkpoint
from .._errors import GitError, PushRejectedError, mark_push_sent
from . import _internals as gi
from . import _maintenance as maint
from ._backoff import Backoff
from ._fast._share import sharing_wanted
from ._fast._tipnote import note_tip, noted_tip
from ._gitlocks import sweep_killed
from ._http import open_transport
from ._localwork import forget_made, local_commits, refuse_local_work
from ._lock import RepoLock
from ._objects import Answer, Build, ChainItem, NewCommit, TreeReader, build_chain, commit_object
from ._remote import DEFAULT_TOKEN_ENV, GitCredentials, is_http_url, resolve_credentials
from ._settings import check_index, config_stamp, open_repo, sparse_filter
from ._shared import missing_object
from ._signing import signer
from ._tipview import TipView
from ._transport import Transport
from ._types import Author, author_from, config_stack
from ._worktree import WorkTree

__all__ = ["Build", "RepoCore"]

log = logging.getLogger("datom_core.git")

Pushed = Callable[[str], None]
_PUSH_DEADLINE = 300.0  # seconds a commit_and_push keeps replaying a rejected push
_UNFOLLOWED = (
    "commit %s is recorded, but the clone %s could not follow it (%s); the next datom "
    "operation on this clone finishes that"
)


class RepoCore:
    """The open repository, transport and caches of one clone (see the module docstring)."""

    def __init__(
        self, path: Path, token_env: str = DEFAULT_TOKEN_ENV, credentials: GitCredentials | None = None
    ) -> None:  # fmt: skip
        self.path, self.token_env, self.credentials = path, token_env, credentials
        self._r: Repo | None = None
        self._pid = -1
        self._transport: Transport | None = None
        self._url: str | None = None
        self._config: StackedConfig | None = None
        self._config_stamp: tuple[object, ...] | None = None
        self._added, self._loose = 0, 0  # _loose: objects written since it last compacted
        r = self._open()
        if r.bare:
            raise GitError(f"{self.path} is a bare repository; datom needs a clone.")
        self.controldir = Path(r.controldir())
        self._lock_path = self.controldir / "datom.lock"
        self._worktree = WorkTree(self.path, self.controldir)

    # -- the open repository -----------------------------------------------------------

    def _open(self) -> Repo:
        if self._r is None or self._pid != os.getpid():
            try:
                self._r = open_repo(self.path, f"The clone {self.path}")
            except (NotGitRepository, FileNotFoundError, NotADirectoryError) as e:
                raise GitError(
                    f"{self.path} is not a git repository: create one with MetadataRepo.init() "
                    "or MetadataRepo.clone()."
                ) from e
            self._pid, self._transport = os.getpid(), None
            self._worktree = WorkTree(self.path, Path(self._r.controldir()))
        return self._r

    def close(self) -> None:
        """Release the open repository and remote (the handle re-opens them when used)."""
        r, transport = getattr(self, "_r", None), getattr(self, "_transport", None)
        if r is not None and self._pid == os.getpid():
            r.close()
            if transport is not None:
                transport.close()
        self._r, self._transport = None, None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def _reconfigure(self, url: str, branch: str) -> None:
        gi.configure(self._open(), url, branch)
        self._url, self._config = None, None

    def _url_of(self) -> str:
        """The ``origin`` URL, read again whenever ``.git/config`` changed (one ``stat``):
        ``git remote set-url`` takes effect on a long-lived handle's next operation."""
        stamp = config_stamp(self._open())
        if self._url is None or stamp != self._config_stamp:
            url = gi.remote_url(self._open())
            if url != self._url and self._transport is not None:
                self._transport.close()
                self._transport = None
            self._url, self._config, self._config_stamp = url, None, stamp
        return self._url

    def _ready(self, r: Repo) -> None:
        """Before an operation that may move the branch: refuse a clone whose settings
        datom cannot honour (``_settings``), and finish an interrupted update."""
        self._url_of()  # the configuration as it is now
        config = self._config_stack()
        check_index(r, self.path, config)
        self._worktree.check_readable()
        self._worktree.sparse = sparse_filter(self.controldir, config)
        self._worktree.recover(r)

    def _remote(self) -> Transport:
        """The open transport, rebuilt when the token in the environment changed (read now)."""
        r, url = self._open(), self._url_of()
        if self._transport is not None and is_http_url(url):
            if resolve_credentials(self.credentials, self.token_env) != self._transport.credentials:
                self._transport.close()
                self._transport = None
        if self._transport is None:
            config = self._config_stack()
            self._transport = open_transport(
                url, config, self.credentials, self.token_env, self.path
            )
            self._transport.attach(r, sharing_wanted(config))
        return self._transport

    def _config_stack(self) -> StackedConfig:
        if self._config is None:
            self._config = config_stack(self._open())
        return self._config

    def lock(self, timeout: float | None = 600) -> RepoLock:
        """An exclusive cross-process lock on this clone (``with repo.lock(): ...``), taken
        by every changing method; re-entrant per thread; ``timeout`` in seconds (``None``:
        for ever), then :class:`GitError`. An error leaving it closes the handle (a kept
        traceback holds no open pack); a holder after a killed one sweeps its git locks."""
        sweep = partial(sweep_killed, self.controldir)
        return RepoLock(self._lock_path, timeout, on_error=self.close, on_inherit=sweep)

    # -- keeping the working tree and the index in step with HEAD ----------------------

    def recover(self) -> bool:
        """Finish a working-tree update a killed process left half done (one ``stat`` when
        there is none); True if there was one. Every changing method does this itself;
        call it before reading the working tree to judge what a crashed writer left."""
        with self.lock():
            pending = self._worktree.pending()
            self._ready(self._open())
            return pending

    def _count_local(self, r: Repo, loose: int, made: bytes) -> None:
        """Count an operation that added ``loose`` loose objects to the clone (``made``:
        its commit), compacting the clone when it is over budget: checked every
        ``CLONE_CHECK_EVERY`` operations of this handle and when ``made`` is due. Called
        once the branch reaches ``made`` (``git repack -a -d`` drops packed objects no ref
        reaches)."""
        self._loose += loose
        self._added += 1
        if self._added % maint.CLONE_CHECK_EVERY == 0 or maint.due(made, maint.CLONE_CHECK_EVERY):
            self._loose = maint.compact_if_over(r, self._loose)

    # -- the remote's branch --------------------------------------------------------------

    def _target_branch(self, r: Repo, remote: Transport) -> bytes:
        """The branch to push: ours, unless a remote we never pushed to names another."""
        branch = gi.branch_ref(r)
        if gi.tracking(r, branch) is not None:
            return branch
        heads, named = remote.heads("push to")
        if branch in heads or named is None or named == branch or not named.startswith(gi.HEADS):
            return branch
        if heads and named not in heads:
            return branch  # HEAD names a branch that does not exist: keep ours, fix HEAD
        sha = gi.head(r)
        if gi.get_ref(r, named) not in (None, sha):
            return branch  # the clone has a branch of that name elsewhere: never moved
        if local_commits(r, branch, [], lambda _: False, seen=False):
            return branch  # someone's commits: kept where they are (the write refuses)
        if sha is not None:
            gi.set_ref(r, named, sha)
        gi.set_head(r, named)
        if sha is not None:
            gi.drop_ref(r, branch, sha)
        self._reconfigure(self._url_of(), gi.short(named))
        log.info("following the remote's HEAD: this clone's branch is now %s", gi.short(named))
        return named

    def _pushed(self, r: Repo, remote: Transport, branch: bytes, sha: bytes) -> None:
        gi.set_tracking(r, branch, sha)
        note_tip(self.controldir, branch, sha)
        if gi.get_ref(r, branch) == sha:
            forget_made(self.controldir)
        remote.adopt_head(branch)

    def _keep_local_work(self, r: Repo, branch: bytes, tip: bytes | None, doing: str) -> None:
        """Refuse (:class:`GitError`, nothing changed) to move ``branch`` to ``origin``'s
        ``tip`` over commits made there with git and not pushed (see ``_localwork``)."""
        refuse_local_work(r, self.path, branch, [tip], self._remote().holds, doing)

    # -- commit_and_push -------------------------------------------------------------------

    def commit_and_push(
        self,
        build: Build,
        message: str,
        author: Author | None = None,
        *,
        deadline: float = _PUSH_DEADLINE,
        pushed: Pushed | None = None,
    ) -> str | None:
        """Commit the files ``build`` returns on top of ``origin``'s tip and push them.

        ``build(tree)`` gets a read-only view of the parent tip (``tree.read(path)``) and
        returns ``{path: bytes}``; cheap and pure, as a push rejected by a concurrent writer
        calls it again on the new tip, after a randomized exponential backoff, until
        ``deadline`` seconds have passed (then :class:`PushRejectedError`, nothing
        recorded). Returns the pushed commit, or ``None`` when the tip already holds those
        bytes (the clone is then moved to the tip). The clone ends on the pushed commit;
        commits made with git and not pushed make it refuse first (``_localwork``);
        ``pushed(commit)`` once the remote holds it, before the clone moves (no waiting on its lock).
        """
        who = (author or self.default_author()).identity
        with self.lock():
            answers, _, made = self._record([ChainItem(build, message, who)], deadline, pushed)
        if made is not None:  # outside the clone's lock: steps sharing the clone go on
            self._remote().maintain(made)
        return cast(str | None, answers[0])

    def _record(
        self, items: Sequence[ChainItem], deadline: float, pushed: Pushed | None = None
    ) -> tuple[list[Answer], bytes | None, bytes | None]:
        """Under the clone's lock, commit ``items`` in order on ``origin``'s tip, pushed at
        once (a write alone is a chain of one): one answer per item, the tip built on and the
        last commit pushed (None: none needed); a lost race builds again after a backoff."""
        if any(not item.message.strip() for item in items):
            raise GitError("A commit needs a non-empty message.")
        r = self._open()
        self._ready(r)
        remote = self._remote()
        branch = self._target_branch(r, remote)
        group, sign = len(items) > 1, signer(self._config_stack())
        end, backoff, attempts = time.monotonic() + deadline, Backoff(), 0
        while True:
            attempts += 1
            try:
                wait = max(end - time.monotonic(), 0.0)
                with remote.turn(wait), remote.view(r, branch) as (tip, store):
                    if attempts == 1:
                        self._keep_local_work(r, branch, tip, "write")
                    answers, made = build_chain(store, tip, items, _now(), sign)
                    if not group and isinstance(answers[0], Exception):
                        raise answers[0]  # met where it arose, as the remote's errors are
                    if made is not None:
                        if group:
                            checkpoint("git:chain:built")
                        try:
                            remote.push(r, branch, tip, made.id, made.objects)
                        except BaseException as e:
                            if not isinstance(e, PushRejectedError):
                                mark_push_sent(e)  # the remote may have applied it
                            raise
            except PushRejectedError:  # its look fetched a pack: they pile up race after race
                self._loose = maint.compact_if_over(r, self._loose)
                delay = backoff.next()
                if time.monotonic() + delay > end:
                    raise PushRejectedError(
                        f"Push to {remote.url} kept being rejected by concurrent writers: gave "
                        f"up after {attempts} attempts in {deadline:g}s. Nothing was recorded; "
                        "retry the write."
                    ) from None
                time.sleep(delay)
                continue
            if made is None:
                if remote.forget():  # a kept look: recording nothing needs a new one
                    continue
                self._stay_on(r, remote, branch, tip)
                return answers, tip, None
            checkpoint("git:push:swapped")
            if group:
                checkpoint("git:chain:swapped")
            if pushed is not None:
                pushed(made.id.decode())
            self._follow(r, remote, branch, tip, made)
            return answers, tip, made.id

    def _stay_on(self, r: Repo, remote: Transport, branch: bytes, tip: bytes | None) -> None:
        """The clone follows the remote's ``tip`` as it is (nothing to record)."""
        if tip is not None:
            remote.fetch_commit(r, tip, branch)
            gi.set_tracking(r, branch, tip)
        self._worktree.move_to(r, branch, tip)

    def _follow(
        self, r: Repo, remote: Transport, branch: bytes, tip: bytes | None, new: NewCommit
    ) -> None:
        """After a push, the clone catches up outside the turn (the remote is compacted now
        and then, once the clone's lock is released). The commit is recorded, so a failure
        here (a full disk) is logged, not raised (a caller told its write failed would undo
        a recorded version): the next operation finishes it (the journal lists the files in
        flight)."""
        try:
            loose = remote.receive(r, branch, tip, new.id, new.objects)
            self._worktree.move_to(r, branch, new.id)
            self._pushed(r, remote, branch, new.id)
            self._count_local(r, loose, new.id)  # once the branch reaches what it packs
        except (OSError, GitError, PackFileDisappeared, KeyError) as e:  # the last two: a
            # foreign repack took a pack, or objects no ref reached (a fetch brings them)
            log.warning(_UNFOLLOWED, new.id.decode()[:12], self.path, e)

    def remote_tip(self, recent: bool = False) -> TipView:
        """A read-only view of ``origin``'s tip of this clone's branch; the clone's branch,
        index and working tree stay where they are (``commit`` None: an empty remote).
        ``recent``: over HTTP(S) a look a few seconds old (``view.kept``), this process's
        or a sharer's (``note_tip``, taken without the lock), may stand in. A local remote
        is read in place; an HTTP(S) remote's new objects are fetched into the clone's
        store. What a write classifies on: the clone moves once, to its pushed commit.
        """
        r = self._open()
        noted = noted_tip(self.controldir, r, self._transport, recent and self._url_of())
        if noted is not None:
            return noted
        with self.lock():
            self._ready(r)
            branch = gi.branch_ref(r)
            view = self._remote().tip_view(r, branch, recent)
            tip = view.commit.encode() if view.commit is not None else None
            self._keep_local_work(r, branch, tip, "write")
            return view

    def remote_head(self) -> str | None:
        """The commit ``origin``'s branch is on (None: an empty remote), looked at without
        the clone's lock once its remote is open (a settling writer asks after each push)."""
        r = self._open()
        if self._transport is None:  # opening the remote may set the clone up: locked
            with self.lock():
                self._remote()
        sha = self._remote().branch_tip(gi.branch_ref(r))
        note_tip(self.controldir, gi.branch_ref(r), sha)
        return gi.hex_or_none(sha)

    def catch_up(self, commit: str | None) -> None:
        """Move the branch, index and working tree to ``commit``, a commit ``origin`` has
        (a :meth:`remote_tip`; None: an empty remote), rewriting only the files that
        differ. Commits made with git and not pushed make it refuse (``_localwork``)."""
        with self.lock():
            r = self._open()
            self._ready(r)
            branch, sha = gi.branch_ref(r), commit.encode() if commit is not None else None
            if sha != gi.get_ref(r, branch):
                self._keep_local_work(r, branch, sha, "catch up with origin")
                self._stay_on(r, self._remote(), branch, sha)

    def default_author(self) -> Author:
        """:meth:`Author.default`, also consulting this clone's own ``.git/config``."""
        return author_from(self._config_stack())

    def tree(self, commit: str | None = None) -> TreeReader:
        """A read-only view of ``commit`` (default HEAD)."""
        r = self._open()
        try:
            sha = commit_object(r, commit).id if commit is not None else gi.head(r)
            return TreeReader(r.object_store, sha)
        except KeyError as e:
            raise missing_object(self.path, r.object_store, e) from e


def _now() -> int:
    return int(datetime.now(UTC).timestamp())
