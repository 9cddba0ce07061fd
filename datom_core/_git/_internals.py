"""dulwich-level helpers behind :mod:`datom_core._git` (private to the git layer).

Together with ``_git.py`` this is the only place that touches dulwich: everything here
works on an open :class:`dulwich.repo.Repo` and translates dulwich's exceptions into
datom's own (:class:`GitError`, :class:`PushRejectedError`, :class:`InvalidNameError`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from dulwich import porcelain
from dulwich.client import (
    GitClient,
    HTTPProxyUnauthorized,
    HTTPUnauthorized,
    LocalGitClient,
    Urllib3HttpGitClient,
)
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.file import FileLocked
from dulwich.graph import can_fast_forward
from dulwich.index import index_entry_from_stat
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from .._errors import DatomError, GitError, InvalidNameError, PushRejectedError
from ._remote import (
    USERNAME_ENV,
    GitCredentials,
    is_http_url,
    local_remote_path,
    resolve_credentials,
    scrub,
)

HEADS = b"refs/heads/"
TRACKING = b"refs/remotes/origin/"
FILE_MODE = 0o100644
HTTP_TIMEOUT = 120.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# Ref statuses meaning "someone else moved the ref first": fetch, rebuild and retry.
_RACE_STATUSES = ("failed to write", "failed to lock", "unable to set", "non-fast-forward",
                  "fetch first", "stale info", "atomic push failed")  # fmt: skip


# -- paths and files --------------------------------------------------------------------


def check_relpath(relpath: str) -> None:
    """Refuse anything but a plain relative POSIX path inside the working tree."""
    parts = PurePosixPath(relpath).parts
    bad = (
        not relpath
        or "\\" in relpath
        or "\0" in relpath
        or relpath.startswith("/")
        or relpath.endswith("/")
        or any(p in ("", ".", "..") for p in relpath.split("/"))
        or parts[0].lower() == ".git"
    )
    if bad:
        raise InvalidNameError(
            f"Invalid repository path {relpath!r}: use a relative path like "
            "'table/metadata.json' (no '..', no leading '/', nothing under .git)."
        )


def write_file_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with exactly ``data``; a crash leaves the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- configuration and refs -------------------------------------------------------------


def check_branch(branch: str) -> None:
    """Refuse branch names git would refuse (a subset of ``git check-ref-format``)."""
    bad = not branch or branch.startswith(("-", "/")) or branch.endswith(("/", ".lock", "."))
    if bad or any(c in branch for c in " ~^:?*[\\\x7f@{") or ".." in branch or "//" in branch:
        raise GitError(f"Invalid branch name {branch!r}.")


def configure(r: Repo, url: str, branch: str) -> None:
    """Point ``origin`` at ``url`` and make ``branch`` track it."""
    config = r.get_config()
    config.set((b"remote", b"origin"), b"url", url.encode())
    config.set((b"remote", b"origin"), b"fetch", b"+refs/heads/*:refs/remotes/origin/*")
    config.set((b"branch", branch.encode()), b"remote", b"origin")
    config.set((b"branch", branch.encode()), b"merge", HEADS + branch.encode())
    # The files are datom's JSON/YAML documents whose bytes are hashed: no EOL conversion.
    config.set((b"core",), b"autocrlf", b"false")
    config.write_to_path()


def init_bare(bare: Path, branch: str) -> None:
    """Create the bare repository ``bare``, or accept it if it exists and holds no branch."""
    if bare.exists():
        try:
            with closing(Repo(str(bare))) as existing:
                if existing.bare and not existing.refs.keys(base=HEADS):
                    return
        except NotGitRepository:
            pass
        raise GitError(
            f"The embedded remote {bare} already exists and is not an empty bare repository: "
            f"clone it instead (MetadataRepo.clone({str(bare)!r}, ...)) or move it away."
        )
    bare.parent.mkdir(parents=True, exist_ok=True)
    Repo.init_bare(str(bare), mkdir=True, default_branch=branch.encode()).close()


def remote_url(r: Repo) -> str:
    """The stored ``origin`` URL."""
    try:
        return r.get_config().get((b"remote", b"origin"), b"url").decode()
    except KeyError:
        raise GitError(f"{r.path} has no 'origin' remote configured.") from None


def branch_ref(r: Repo) -> bytes:
    """The ref HEAD points at, e.g. ``refs/heads/main``."""
    target = r.refs.get_symrefs().get(b"HEAD")
    if target is None or not target.startswith(HEADS):
        raise GitError(f"HEAD of {r.path} is not on a branch; check out the project branch.")
    return target


def tracking_ref(branch: bytes) -> bytes:
    """``refs/heads/x`` -> ``refs/remotes/origin/x``."""
    return TRACKING + branch[len(HEADS) :]


def short(branch: bytes) -> str:
    """``refs/heads/x`` -> ``x``."""
    return branch[len(HEADS) :].decode()


def get_ref(r: Repo, name: bytes) -> bytes | None:
    """The sha a ref points at, or ``None``."""
    try:
        return r.refs[name]
    except KeyError:
        return None


def head(r: Repo) -> bytes | None:
    """The sha of HEAD's branch, or ``None`` while it is unborn."""
    return get_ref(r, branch_ref(r))


def is_ancestor(r: Repo, ancestor: bytes, descendant: bytes) -> bool:
    """Whether ``descendant`` contains ``ancestor`` (or is it)."""
    if ancestor == descendant:
        return True
    if ancestor not in r.object_store:
        return False  # every ancestor of a local commit is local
    return can_fast_forward(r, ancestor, descendant)


def commit_object(r: Repo, commit: str) -> Commit:
    """Look up a commit by its full hex id."""
    obj = None
    if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit):
        try:
            obj = r[commit.encode()]
        except KeyError:
            obj = None
    if not isinstance(obj, Commit):
        raise GitError(f"No commit {commit!r} in {r.path}: pass a full 40-hex commit id.")
    return obj


# -- committing and resetting -----------------------------------------------------------


def stage(r: Repo, root: Path, blobs: Mapping[str, Blob]) -> None:
    """Record the just-written files in the index, with the blobs made from their bytes."""
    index = r.open_index()
    for relpath, blob in blobs.items():
        stat = os.lstat(root / relpath)
        index[relpath.encode()] = index_entry_from_stat(stat, blob.id, mode=FILE_MODE)
    index.write()


def record_commit(
    r: Repo,
    branch: bytes,
    parent: bytes | None,
    tree_id: bytes,
    message: str,
    identity: bytes,
    timestamp: int,
) -> bytes:
    """Store a commit (UTC times) and move ``branch`` to it with a compare-and-swap."""
    c = Commit()
    c.tree = tree_id
    c.parents = [parent] if parent is not None else []
    c.author = c.committer = identity
    c.author_time = c.commit_time = timestamp
    c.author_timezone = c.commit_timezone = 0
    c.encoding = b"UTF-8"
    c.message = (message if message.endswith("\n") else message + "\n").encode()
    r.object_store.add_object(c)
    if parent is None:
        moved = r.refs.add_if_new(branch, c.id)
    else:
        moved = r.refs.set_if_equals(branch, parent, c.id)
    if not moved:
        raise GitError(
            f"The branch of {r.path} moved while committing: another process wrote to this "
            "clone. Hold MetadataRepo.lock() around every write."
        )
    return c.id


def hard_reset(r: Repo, branch: bytes, target: bytes | None) -> None:
    """Reset branch, index and tracked files to ``target`` (``None``: empty, unborn)."""
    if target is not None:
        porcelain.reset(r, "hard", target)
        return
    empty = Tree()
    r.object_store.add_object(empty)
    porcelain.reset(r, "hard", empty)
    r.refs.remove_if_equals(branch, None)


def dirty_paths(r: Repo) -> list[bytes]:
    """Tracked files with staged or unstaged changes."""
    status = porcelain.status(r, untracked_files="no")
    return [p for paths in status.staged.values() for p in paths] + list(status.unstaged)


def require_clean(r: Repo) -> None:
    """:class:`GitError` if tracked files have staged or unstaged changes."""
    dirty = dirty_paths(r)
    if dirty:
        names = ", ".join(sorted({os.fsdecode(p) for p in dirty})[:5])
        raise GitError(
            f"{r.path} has uncommitted changes to tracked files ({names}): commit them, or "
            "drop them with fetch_and_reset(), before pulling."
        )


# -- transport --------------------------------------------------------------------------


class _HttpClient(Urllib3HttpGitClient):
    """dulwich's HTTP client, closing the response of a failed request before raising.

    dulwich raises on 401/403/404 without closing the (unread, streamed) response, which
    leaks the connection's socket; its own status mapping is reproduced here.
    """

    def _http_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        data: bytes | Iterator[bytes] | None = None,
        raise_for_status: bool = True,
    ) -> tuple[Any, Callable[[int], bytes]]:
        resp, read = super()._http_request(url, headers, data, raise_for_status=False)
        if not raise_for_status or resp.status == 200:
            return resp, read
        status, challenge = resp.status, resp.headers.get("WWW-Authenticate")
        proxy_challenge = resp.headers.get("Proxy-Authenticate")
        resp.close()
        if status == 404:
            raise NotGitRepository(f"no repository at {url}")
        if status == 401:
            raise HTTPUnauthorized(challenge, url)
        if status == 407:
            raise HTTPProxyUnauthorized(proxy_challenge, url)
        raise GitProtocolError(f"unexpected http resp {status} for {url}")


@dataclass(frozen=True)
class Remote:
    """An open connection to ``origin`` for one operation."""

    client: GitClient
    path: str
    url: str
    credentials: GitCredentials | None
    token_env: str


@contextmanager
def open_remote(r: Repo, explicit: GitCredentials | None, token_env: str) -> Iterator[Remote]:
    """A client for ``origin``; HTTP credentials are resolved now and live only here."""
    url = remote_url(r)
    if not is_http_url(url):
        remote = Remote(LocalGitClient(), local_remote_path(url), url, None, token_env)
    else:
        creds = resolve_credentials(explicit, token_env)
        host = (urlsplit(url).hostname or "").lower()
        if creds is not None and url.lower().startswith("http://") and host not in _LOOPBACK:
            raise GitError(
                f"Refusing to send the git token over unencrypted HTTP to {url}: use https://."
            )
        client = _HttpClient(
            url,
            config=r.get_config_stack(),
            username=creds.username if creds else None,
            password=creds.token if creds else None,
            timeout=HTTP_TIMEOUT,
        )
        remote = Remote(client, "", url, creds, token_env)
    try:
        yield remote
    finally:
        remote.client.close()


@contextmanager
def remote_errors(remote: Remote, action: str) -> Iterator[None]:
    """Translate transport failures into :class:`GitError` with the token scrubbed out."""
    token = remote.credentials.token if remote.credentials else None
    where = f"{action} {remote.url}"

    def fail(message: str) -> GitError:
        return GitError(scrub(message, token))

    try:
        yield
    except DatomError:
        raise
    except HTTPUnauthorized as e:
        hint = (
            f"no token was sent; set {remote.token_env}"
            if remote.credentials is None
            else f"the token was refused; check {remote.token_env}"
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
                f"the server refused access (HTTP 403): the token in {remote.token_env} "
                "lacks permission, or the server forbids this operation"
            )
        raise fail(f"Cannot {where}: {detail}. Check the remote and your access to it.") from e
    except OSError as e:
        raise fail(f"Cannot {where}: {e.strerror or e}. Check the remote path/URL.") from e
    except FileLocked as e:
        raise fail(f"Cannot {where}: a ref is locked by another git process; retry.") from e
    except ValueError as e:  # dulwich's word for a malformed server reply
        raise fail(f"Cannot {where}: unexpected reply ({e}). Is it a git server?") from e


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
