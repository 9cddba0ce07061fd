"""The metadata repository: a small git porcelain over dulwich.

dulwich is used here and in the private helper module ``_internals`` only. The rest of
datom sees :class:`MetadataRepo`, :class:`Author`, :class:`CommitInfo` and
:class:`GitCredentials`, and only datom's own errors (:class:`GitError`,
:class:`PushRejectedError`, :class:`InvalidNameError`).

Remotes are a local path, a ``file://`` URL or an ``http(s)://`` URL. With no remote,
:meth:`MetadataRepo.init` creates the *embedded default*: a bare repository next to the
clone, at ``<parent>/<name>.remote.git`` (:meth:`MetadataRepo.embedded_remote_path`), so a
project works without any server or account.

HTTPS tokens come from the environment variable named by ``token_env`` (default
``DATOM_GIT_TOKEN``; username from ``DATOM_GIT_USERNAME``, default ``x-access-token``), read
at call time, or from :class:`GitCredentials` given at construction. ``user:token@`` in a
remote URL is stripped before the URL is stored (the token is then kept on that handle, in
memory, only). No token is ever written to ``.git/config``, a commit, a log or an error.

A handle opens the dulwich repository afresh for each operation and closes it again, so it
holds no file descriptors between calls and stays usable after ``fork``. It is not
thread-safe; processes and threads sharing a clone serialise writes with
:meth:`MetadataRepo.lock`.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dulwich import porcelain
from dulwich.config import Config, StackedConfig
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from .._errors import GitError, InvalidNameError, PushRejectedError
from . import _internals as gi
from ._lock import RepoLock
from ._remote import DEFAULT_TOKEN_ENV, GitCredentials, normalize_remote

__all__ = ["Author", "CommitInfo", "GitCredentials", "MetadataRepo"]

_FETCH_ATTEMPTS = 20


@dataclass(frozen=True)
class Author:
    """A git identity; :meth:`default` finds the configured one."""

    name: str
    email: str

    def __post_init__(self) -> None:
        for value in (self.name, self.email):
            if any(c in value for c in "<>\n\0"):
                raise InvalidNameError(f"Invalid git author {value!r}: no '<', '>' or newline.")

    @property
    def identity(self) -> str:
        """``Name <email>``, as git records it."""
        return f"{self.name} <{self.email}>"

    def __str__(self) -> str:
        return self.identity

    @classmethod
    def default(cls) -> Author:
        """``DATOM_AUTHOR_NAME``/``DATOM_AUTHOR_EMAIL``, else git's ``user.name``/``user.email``,
        else ``<login>@<hostname>``."""
        return _author_from(StackedConfig.default())


@dataclass(frozen=True)
class CommitInfo:
    """One commit of the metadata history (``timestamp`` is the author time, in UTC)."""

    id: str
    message: str
    author: Author
    timestamp: datetime


class MetadataRepo:
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
        self.path = Path(path).absolute()
        self.token_env = token_env
        self.credentials = credentials
        with self._repo() as r:
            if r.bare:
                raise GitError(f"{self.path} is a bare repository; datom needs a clone.")
            self._lock_path = Path(r.controldir()) / "datom.lock"

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
        project means updating ``origin``). Any other remote is not contacted here; use
        :meth:`clone` for a remote that already holds a project.
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
        return cls(clone, token_env=token_env, credentials=credentials or url_creds)

    @classmethod
    def clone(
        cls,
        remote: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        token_env: str = DEFAULT_TOKEN_ENV,
        credentials: GitCredentials | None = None,
    ) -> MetadataRepo:
        """Clone ``remote`` into ``path`` (absent or an empty directory).

        An empty remote gives an unborn ``main``; otherwise the local branch follows the
        remote's default branch. On failure nothing is left at ``path``.
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
            repo._checkout_remote_default()
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
        with self._repo() as r:
            return gi.remote_url(r)

    @property
    def branch(self) -> str:
        """The local branch HEAD points at (``main`` unless cloned from elsewhere)."""
        with self._repo() as r:
            return gi.short(gi.branch_ref(r))

    def head(self) -> str | None:
        """The commit id (hex) of HEAD, or ``None`` before the first commit."""
        with self._repo() as r:
            sha = gi.head(r)
            return sha.decode() if sha is not None else None

    def read(self, relpath: str) -> bytes | None:
        """The bytes of a working-tree file, or ``None`` if it does not exist."""
        gi.check_relpath(relpath)
        try:
            return (self.path / relpath).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def read_at(self, commit: str, relpath: str) -> bytes | None:
        """The bytes of ``relpath`` in ``commit`` (full hex id), or ``None`` if absent there."""
        gi.check_relpath(relpath)
        with self._repo() as r:
            tree = gi.commit_object(r, commit).tree
            try:
                _mode, sha = tree_lookup_path(r.__getitem__, tree, relpath.encode())
            except KeyError:
                return None
            blob = r[sha]
            return blob.as_raw_string() if isinstance(blob, Blob) else None

    def log(self, relpath: str | None = None, max_entries: int | None = None) -> list[CommitInfo]:
        """Commits reachable from HEAD, newest first; only those changing ``relpath`` if given."""
        if relpath is not None:
            gi.check_relpath(relpath)
        with self._repo() as r:
            head = gi.head(r)
            if head is None:
                return []
            paths = [relpath.encode()] if relpath is not None else None
            walker = r.get_walker(include=[head], paths=paths, max_entries=max_entries)
            return [_commit_info(entry.commit) for entry in walker]

    def has_unpushed_commits(self) -> bool:
        """Whether HEAD holds commits ``origin`` lacked at the last fetch or push (offline)."""
        with self._repo() as r:
            head = gi.head(r)
            if head is None:
                return False
            tracking = gi.get_ref(r, gi.tracking_ref(gi.branch_ref(r)))
            return tracking is None or not gi.is_ancestor(r, head, tracking)

    def default_author(self) -> Author:
        """:meth:`Author.default`, also consulting this clone's own ``.git/config``."""
        with self._repo() as r:
            return _author_from(r.get_config_stack())

    def lock(self, timeout: float | None = 600) -> RepoLock:
        """An exclusive cross-process lock on this clone, for ``with repo.lock(): ...``.

        Re-entrant within a thread; ``timeout`` in seconds (``None``: wait forever);
        :class:`GitError` on timeout. Hold it around read-modify-commit-push sequences.
        """
        return RepoLock(self._lock_path, timeout)

    def commit(
        self, files: Mapping[str, bytes], message: str, author: Author | None = None
    ) -> str | None:
        """Write ``files`` (path -> exact bytes) to the working tree, stage exactly them, commit.

        Returns the new commit id, or ``None`` (and no commit) when HEAD already holds these
        bytes. Author and committer are ``author`` (default :meth:`default_author`); times UTC.
        """
        for relpath in files:
            gi.check_relpath(relpath)
        if not message.strip():
            raise GitError("A commit needs a non-empty message.")
        if not files:
            return None
        with self._repo() as r:
            who = author if author is not None else _author_from(r.get_config_stack())
            branch = gi.branch_ref(r)
            parent = gi.head(r)
            blobs = {relpath: Blob.from_string(bytes(data)) for relpath, data in files.items()}
            for relpath, blob in blobs.items():
                r.object_store.add_object(blob)
                gi.write_file_atomic(self.path / relpath, blob.data)
            gi.stage(r, self.path, blobs)
            base = r[r[parent].tree].copy() if parent is not None else Tree()
            base_id = base.id
            changes = [(p.encode(), gi.FILE_MODE, b.id) for p, b in blobs.items()]
            tree_id = commit_tree_changes(r.object_store, base, changes)
            if parent is not None and tree_id == base_id:
                return None
            now = int(datetime.now(UTC).timestamp())
            sha = gi.record_commit(r, branch, parent, tree_id, message, who.identity.encode(), now)
            return sha.decode()

    def push(self) -> None:
        """Push HEAD's branch to ``origin`` (nothing to do before the first commit).

        :class:`PushRejectedError` when ``origin`` holds commits this clone lacks: call
        :meth:`fetch_and_reset`, redo the write, push again. :class:`GitError` for every
        other failure (unreachable remote, authentication, a server-side refusal); the local
        branch is never changed by a failed push.
        """
        with self._repo() as r, self._remote(r) as remote:
            branch, head = gi.branch_ref(r), gi.head(r)
            if head is None:
                return

            def update_refs(theirs: dict[bytes, bytes]) -> dict[bytes, bytes]:
                current = theirs.get(branch)
                if current is not None and not gi.is_ancestor(r, current, head):
                    raise PushRejectedError(
                        f"Push to {remote.url} rejected: origin's {gi.short(branch)} has "
                        "commits this clone lacks (another writer pushed first). Call "
                        "fetch_and_reset(), redo the write on top, and push again."
                    )
                return {branch: head}

            with gi.remote_errors(remote, "push to"):
                try:
                    result = remote.client.send_pack(remote.path, update_refs, r.generate_pack_data)
                except FileLocked as e:
                    raise PushRejectedError(
                        f"Push to {remote.url} rejected: {gi.short(branch)} is being updated "
                        "by a concurrent push. Call fetch_and_reset(), redo the write, push again."
                    ) from e
                gi.check_ref_status(result.ref_status or {}, remote.url)
                if not self._push_landed(r, remote, branch, head):
                    raise PushRejectedError(
                        f"Push to {remote.url} lost a race: the remote reported success but a "
                        f"concurrent push moved {gi.short(branch)} elsewhere. Call "
                        "fetch_and_reset(), redo the write, and push again."
                    )

    def fetch_and_reset(self) -> str | None:
        """Fetch ``origin``; hard-reset the branch, index and working tree to it.

        Unpushed local commits and changes to tracked files are dropped (the write protocol
        recomputes them); untracked files such as ``input_files/`` are kept. An empty remote
        resets to an empty, unborn branch. Returns the new HEAD.
        """
        with self._repo() as r, self._remote(r) as remote:
            branch = gi.branch_ref(r)
            target = self._fetch(r, remote)[0].get(branch)
            # Already there with a clean tree (the common case): a status check is ~5x
            # cheaper than rewriting the index and working tree.
            if target is None or target != gi.head(r) or gi.dirty_paths(r):
                gi.hard_reset(r, branch, target)
            return target.decode() if target is not None else None

    def pull(self) -> None:
        """Fetch ``origin`` and fast-forward to it.

        :class:`GitError` (and nothing changed) if the histories diverged or tracked files
        have uncommitted changes. A clone that is ahead of ``origin`` is left as it is.
        """
        with self._repo() as r, self._remote(r) as remote:
            branch = gi.branch_ref(r)
            theirs, ours = self._fetch(r, remote)[0].get(branch), gi.head(r)
            if theirs is None or theirs == ours:
                return
            if ours is not None and gi.is_ancestor(r, theirs, ours):
                return
            if ours is not None and not gi.is_ancestor(r, ours, theirs):
                raise GitError(
                    f"Cannot fast-forward {self.path}: its {gi.short(branch)} and origin's "
                    "have diverged. Push the local work after fetch_and_reset() (which drops "
                    "it) and redo it, or reconcile the histories by hand."
                )
            gi.require_clean(r)
            porcelain.reset(r, "hard", theirs)

    @contextmanager
    def _repo(self) -> Iterator[Repo]:
        try:
            r = Repo(str(self.path))
        except (NotGitRepository, FileNotFoundError, NotADirectoryError) as e:
            raise GitError(
                f"{self.path} is not a git repository: create one with MetadataRepo.init() "
                "or MetadataRepo.clone()."
            ) from e
        with closing(r):
            yield r

    def _remote(self, r: Repo) -> AbstractContextManager[gi.Remote]:
        return gi.open_remote(r, self.credentials, self.token_env)

    def _fetch(self, r: Repo, remote: gi.Remote) -> tuple[dict[bytes, bytes], dict[bytes, bytes]]:
        """Fetch every branch of ``origin`` and mirror them in ``refs/remotes/origin/*``.

        Returns the remote's branches and its symbolic refs (``HEAD`` -> default branch).
        """

        def wants(refs: Mapping[bytes, bytes], depth: int | None = None) -> list[bytes]:
            return [
                s for n, s in refs.items() if n.startswith(gi.HEADS) and s not in r.object_store
            ]

        # A push landing mid-fetch can make the advertised refs newer than the pack we got
        # (seen with local remotes): fetch again until every advertised head is present.
        for _ in range(_FETCH_ATTEMPTS):
            with gi.remote_errors(remote, "fetch from"):
                result = remote.client.fetch(remote.path, r, determine_wants=wants)
            heads = {
                n: s for n, s in result.refs.items() if n.startswith(gi.HEADS) and s is not None
            }
            if all(s in r.object_store for s in heads.values()):
                break
        else:
            raise GitError(f"fetch from {remote.url} kept racing concurrent pushes; retry")
        for name, sha in heads.items():
            r.refs[gi.tracking_ref(name)] = sha
        for stale in r.refs.keys(base=gi.TRACKING) - {n[len(gi.HEADS) :] for n in heads}:
            r.refs.remove_if_equals(gi.TRACKING + stale, None)
        return heads, dict(result.symrefs or {})

    def _push_landed(self, r: Repo, remote: gi.Remote, branch: bytes, head: bytes) -> bool:
        """Check, not trust, that the remote branch now contains ``head``.

        A server may answer "ok" although a concurrent push won the compare-and-swap (the
        dulwich server does), so the remote ref is read back.
        """
        landed = remote.client.get_refs(remote.path).refs.get(branch)
        if landed == head:
            r.refs[gi.tracking_ref(branch)] = head
            return True
        now = self._fetch(r, remote)[0].get(branch)
        return now is not None and gi.is_ancestor(r, head, now)

    def _checkout_remote_default(self) -> None:
        with self._repo() as r, self._remote(r) as remote:
            heads, symrefs = self._fetch(r, remote)
            default = symrefs.get(b"HEAD")
            if default is not None and default in heads and default != gi.branch_ref(r):
                r.refs.set_symbolic_ref(b"HEAD", default)
                gi.configure(r, gi.remote_url(r), gi.short(default))
            branch = gi.branch_ref(r)
            gi.hard_reset(r, branch, heads.get(branch))


def _author_from(config: Config) -> Author:
    name = os.environ.get("DATOM_AUTHOR_NAME") or _config_value(config, b"name")
    email = os.environ.get("DATOM_AUTHOR_EMAIL") or _config_value(config, b"email")
    if not name or not email:
        login = _login()
        host = socket.gethostname() or "localhost"
        name = name or login
        email = email or f"{login}@{host}"
    return Author(name=name, email=email)


def _config_value(config: Config, key: bytes) -> str | None:
    try:
        value = config.get((b"user",), key)
    except KeyError:
        return None
    return value.decode("utf-8", "replace").strip() or None


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no USER/LOGNAME and no passwd entry (some containers)
        return "datom"


def _commit_info(c: Commit) -> CommitInfo:
    name, _, email = c.author.decode("utf-8", "replace").rpartition(" <")
    return CommitInfo(
        id=c.id.decode(),
        message=c.message.decode("utf-8", "replace").removesuffix("\n"),
        author=Author(name=name, email=email.removesuffix(">")),
        timestamp=datetime.fromtimestamp(c.author_time, UTC),
    )
