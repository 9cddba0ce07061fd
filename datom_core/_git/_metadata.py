""":class:`MetadataRepo`: creating, opening and using a clone (built on :class:`RepoCore`).

Remotes are a local path, a ``file://`` URL or an ``http(s)://`` URL. With no remote,
:meth:`MetadataRepo.init` creates the *embedded default*: a bare repository next to the
clone, at ``<parent>/<name>.remote.git`` (:meth:`MetadataRepo.embedded_remote_path`), whose
``HEAD`` names the clone's branch. Into an existing remote datom pushes the branch the
remote's ``HEAD`` names, and after a push to a local remote its ``HEAD`` names the branch
pushed (R's ``datom_clone`` checks out ``HEAD``). An HTTPS server's ``HEAD`` cannot be
set, and an *empty* HTTPS repository does not advertise it (smart protocol v0): datom then
pushes the clone's branch (``main``).

HTTPS tokens come from the environment variable named by ``token_env`` (default
``DATOM_GIT_TOKEN``; username from ``DATOM_GIT_USERNAME``, default ``x-access-token``), or
from :class:`GitCredentials` given at construction. ``user:token@`` in a remote URL is
stripped before the URL is stored. No token is ever written to ``.git/config``, a commit,
a log or an error.

A handle keeps its repository open (see :mod:`._repo`); it is not thread-safe, and
processes sharing a clone serialise through :meth:`MetadataRepo.lock`, which every
changing method takes itself.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path

from dulwich.repo import Repo

from .._checkpoint import checkpoint
from .._errors import GitError, PushRejectedError
from . import _internals as gi
from ._copy import add_objects
from ._diff import objects_to_send
from ._fast._history import PathHistory
from ._fast._share import share_objects, sharing_wanted
from ._localwork import refuse_local_work, remember_made
from ._logview import HistoryReads
from ._objects import Answer, ChainItem, build_commit
from ._read import keeping
from ._remote import DEFAULT_TOKEN_ENV, GitCredentials, normalize_remote
from ._repo import _PUSH_DEADLINE, RepoCore, _now
from ._signing import signer
from ._types import Author, config_stack

__all__ = ["MetadataRepo"]


class MetadataRepo(HistoryReads, RepoCore):
    """A non-bare clone of a datom project's metadata repository.

    ``path`` is the working tree; ``credentials`` optional in-memory HTTPS credentials that
    take precedence over the ``token_env`` environment variable.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        token_env: str = DEFAULT_TOKEN_ENV,
        credentials: GitCredentials | None = None,
    ) -> None:
        super().__init__(Path(path).absolute(), token_env, credentials)
        self._history = PathHistory()

    def __repr__(self) -> str:
        return f"MetadataRepo({str(self.path)!r})"

    @staticmethod
    def embedded_remote_path(path: str | os.PathLike[str]) -> Path:
        """Where :meth:`init` puts the embedded bare remote for a clone at ``path``."""
        clone = Path(path).absolute()
        return clone.parent / f"{clone.name}.remote.git"

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        remote: str | os.PathLike[str] | None,
        *,
        branch: str = "main",
        token_env: str = DEFAULT_TOKEN_ENV,
        credentials: GitCredentials | None = None,
    ) -> MetadataRepo:
        """Create a new clone at ``path`` whose ``origin`` is ``remote``; commits nothing.

        ``remote=None`` creates (or re-uses, if it holds no branch) the embedded bare
        repository at :meth:`embedded_remote_path` (stored as an absolute path: moving the
        project means updating ``origin``). Any other remote is not contacted here; the
        first push goes to the branch its ``HEAD`` names.
        """
        clone = Path(path).absolute()
        gi.check_branch(branch)
        if (clone / ".git").exists():
            raise GitError(f"{clone} is already a git repository: use MetadataRepo.open().")
        if remote is None:
            bare = cls.embedded_remote_path(clone)
            gi.init_bare(bare, branch)
            url, url_creds = str(bare), None
        else:
            url, url_creds = normalize_remote(remote)
        clone.mkdir(parents=True, exist_ok=True)
        with closing(Repo.init(str(clone), default_branch=branch.encode())) as r:
            gi.configure(r, url, branch)
            if remote is None and sharing_wanted(config_stack(r)):
                with closing(Repo(url)) as bare_repo:  # read in place from the start
                    share_objects(r.object_store, bare_repo.object_store)
        return cls(clone, token_env=token_env, credentials=credentials or url_creds)

    @classmethod
    def clone(
        cls,
        remote: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        token_env: str = DEFAULT_TOKEN_ENV,
        credentials: GitCredentials | None = None,
        shallow: bool = False,
    ) -> MetadataRepo:
        """Clone ``remote`` into ``path`` (absent or an empty directory).

        The local branch is the one the remote's ``HEAD`` names (an empty remote gives it
        unborn). On failure nothing is left at ``path``. ``shallow``: over HTTP(S), fetch
        the tip commit only (git's ``--depth 1``), for a worker that writes and does not
        walk the history; later fetches bring what is new, and what walks the history
        deepens the clone first (:meth:`deepen`). A local remote is cloned whole.
        """
        clone = Path(path).absolute()
        if clone.exists() and (not clone.is_dir() or any(clone.iterdir())):
            raise GitError(f"Cannot clone into {clone}: it exists and is not an empty directory.")
        url, url_creds = normalize_remote(remote)
        existed = clone.exists()
        clone.mkdir(parents=True, exist_ok=True)
        try:
            with closing(Repo.init(str(clone), default_branch=b"main")) as r:
                gi.configure(r, url, "main")
            repo = cls(clone, token_env=token_env, credentials=credentials or url_creds)
            repo._checkout_remote_default(1 if shallow else None)
        except BaseException:
            shutil.rmtree(clone, ignore_errors=True)
            if existed:
                clone.mkdir()
            raise
        return repo

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        token_env: str = DEFAULT_TOKEN_ENV,
        credentials: GitCredentials | None = None,
    ) -> MetadataRepo:
        """Open an existing clone; :class:`GitError` if ``path`` is not one."""
        return cls(path, token_env=token_env, credentials=credentials)

    @property
    def remote_url(self) -> str:
        """The ``origin`` URL or path as stored (never containing credentials)."""
        return self._url_of()

    @property
    def branch(self) -> str:
        """The local branch HEAD points at (``main`` unless the remote names another)."""
        return gi.short(gi.branch_ref(self._open()))

    def head(self) -> str | None:
        """The commit id (hex) of HEAD, or ``None`` before the first commit."""
        return gi.hex_or_none(gi.head(self._open()))

    def read(self, relpath: str) -> bytes | None:
        """The bytes of ``relpath`` at HEAD (``None``: absent), git's own: not the working
        tree's copy, which a checkout may convert (``.gitattributes``' ``eol``,
        ``core.autocrlf``) or leave out (a sparse checkout)."""
        gi.check_relpath(relpath)
        return self.tree().read(relpath)

    def has_unpushed_commits(self) -> bool:
        """Whether HEAD holds commits ``origin`` lacked at the last fetch or push (offline)."""
        r = self._open()
        head = gi.head(r)
        if head is None:
            return False
        tracking = gi.tracking(r, gi.branch_ref(r))
        return tracking is None or not gi.is_ancestor(r, head, tracking)

    def commit(
        self, files: Mapping[str, bytes], message: str, author: Author | None = None
    ) -> str | None:
        """Write ``files`` (path -> exact bytes) to the working tree and commit exactly them.

        Returns the new commit id, or ``None`` (and no commit) when HEAD already holds these
        bytes. Author and committer are ``author`` (default :meth:`default_author`); times UTC.
        """
        for relpath in files:
            gi.check_relpath(relpath)
        if not message.strip():
            raise GitError("A commit needs a non-empty message.")
        if not files:
            return None
        with self.lock():
            r = self._open()
            self._ready(r)
            who = author if author is not None else self.default_author()
            branch, parent = gi.branch_ref(r), gi.head(r)
            sign = signer(self._config_stack())
            new = build_commit(
                r.object_store, parent, files, message, who.identity.encode(), _now(), sign
            )
            if new is None:
                return None
            with keeping(r.object_store):  # a pack of them, until the branch reaches it
                loose = add_objects(r, new.objects)
                remember_made(self.controldir, new.id)
                self._worktree.journal(new.changes)
                checkpoint("git:commit:journaled")
                moved = gi.swap_ref(r, branch, parent, new.id)
            if not moved:
                self._ready(r)
                raise GitError(
                    f"The branch of {self.path} moved while committing: another process wrote "
                    "to this clone without MetadataRepo.lock()."
                )
            checkpoint("git:commit:moved")
            self._worktree.sync(r, new.changes, journaled=True)
            self._count_local(r, loose, new.id)  # once the branch reaches what it packs
            return new.id.decode()

    def commit_chain_and_push(
        self, items: Sequence[ChainItem], deadline: float = _PUSH_DEADLINE
    ) -> tuple[list[Answer], str | None, str | None]:
        """Record ``items`` as a chain of commits, one per item, in one push (``RepoCore._record``):
        each item's answer (its commit, None when the tip already held its files, or the
        error its build raised), the remote's tip the chain was built on and the last
        commit pushed. Call :meth:`maintain_remote` with that commit once this clone's
        lock is released."""
        with self.lock():
            answers, tip, last = self._record(items, deadline)
        return answers, gi.hex_or_none(tip), gi.hex_or_none(last)

    def maintain_remote(self, made: str) -> None:
        """Compact the remote now and then (a local one), after pushing ``made``: what
        :meth:`commit_and_push` does once it lets the clone's lock go."""
        self._remote().maintain(made.encode())

    def push(self) -> None:
        """Push HEAD's branch to ``origin`` (nothing to do before the first commit).

        :class:`PushRejectedError` when ``origin`` holds commits this clone lacks: call
        :meth:`fetch_and_reset`, redo the write, push again (or use
        :meth:`commit_and_push`, which does that). :class:`GitError` for every other
        failure, and before anything is sent when the branch holds commits made with git
        and not pushed (only datom's own are pushed, see ``_localwork``); the local branch
        is never changed by a failed push.
        """
        with self.lock():
            r = self._open()
            self._ready(r)
            head = gi.head(r)
            if head is None:
                return
            remote = self._remote()
            branch = self._target_branch(r, remote)
            theirs = remote.heads("push to")[0].get(branch)
            # Only what datom made is published: a commit made with git here (under datom's
            # unpushed one, or on top of it) is the person's to push (``_localwork``).
            refuse_local_work(r, self.path, branch, [theirs], remote.holds, "push")
            if theirs == head:
                self._pushed(r, remote, branch, head)
                return
            if theirs is not None and not gi.is_ancestor(r, theirs, head):
                raise PushRejectedError(
                    f"Push to {remote.url} rejected: origin's {gi.short(branch)} has commits "
                    "this clone lacks (another writer pushed first). Call fetch_and_reset(), "
                    "redo the write on top, and push again."
                )
            remote.push(r, branch, theirs, head, objects_to_send(r.object_store, head, theirs))
            checkpoint("git:push:swapped")
            remote.maintain(head)
            self._pushed(r, remote, branch, head)

    def fetch_and_reset(self) -> str | None:
        """Fetch ``origin``'s branch; reset the branch, index and working tree to it.

        Unpushed commits datom made are dropped; commits made with git and not pushed make
        it refuse, changing nothing (``_localwork``). Only the files that differ between the
        old HEAD and the new one are rewritten; untracked files such as ``input_files/`` are
        kept. An empty remote resets to an unborn branch. Returns the new HEAD.
        """
        with self.lock():
            r = self._open()
            self._ready(r)
            branch = gi.branch_ref(r)
            target = self._remote().fetch_branch(r, branch)
            self._keep_local_work(r, branch, target, "reset to origin")
            if target is not None:
                gi.set_tracking(r, branch, target)
            self._worktree.move_to(r, branch, target)
            return gi.hex_or_none(target)

    def pull(self) -> None:
        """Fetch ``origin`` and fast-forward to it.

        :class:`GitError` (and nothing changed) if the histories diverged or tracked files
        have uncommitted changes. A clone that is ahead of ``origin`` is left as it is.
        """
        with self.lock():
            r = self._open()
            self._ready(r)
            branch = gi.branch_ref(r)
            theirs, ours = self._remote().fetch_branch(r, branch), gi.head(r)
            if theirs is not None:
                gi.set_tracking(r, branch, theirs)
            if theirs is None or (ours is not None and gi.is_ancestor(r, theirs, ours)):
                return  # nothing to follow, or this clone has it (or is ahead)
            if ours is not None and not gi.is_ancestor(r, ours, theirs):
                raise GitError(
                    f"Cannot fast-forward {self.path}: its {gi.short(branch)} and origin's "
                    "have diverged. Push the local work after fetch_and_reset() (which drops "
                    "it) and redo it, or reconcile the histories by hand."
                )
            gi.require_clean(r)
            self._worktree.move_to(r, branch, theirs)

    def _checkout_remote_default(self, depth: int | None = None) -> None:
        with self.lock():
            r = self._open()
            heads, named = self._remote().fetch_heads(r, depth)
            branch = gi.branch_ref(r)
            if named is not None and named.startswith(gi.HEADS) and named != branch:
                if named in heads or not heads:
                    gi.set_head(r, named)
                    self._reconfigure(self._url_of(), gi.short(named))
                    branch = named
            for name, sha in heads.items():
                gi.set_tracking(r, name, sha)
            self._worktree.move_to(r, branch, heads.get(branch))
