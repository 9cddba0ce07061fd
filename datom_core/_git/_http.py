"""Opening ``origin`` (a local bare repository, or HTTP(S) with a token read at call time),
and the HTTP(S) transport through dulwich's client, with its errors translated."""

from __future__ import annotations

import errno
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from dulwich.client import (
    GitClient,
    HTTPProxyUnauthorized,
    HTTPUnauthorized,
    Urllib3HttpGitClient,
    extract_object_format_from_capabilities,
)
from dulwich.config import Config
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.file import FileLocked
from dulwich.graph import can_fast_forward
from dulwich.objects import ObjectID, ShaFile
from dulwich.pack import pack_objects_to_data
from dulwich.repo import Repo

from .._errors import DatomError, GitError, PushRejectedError
from ._remote import (
    USERNAME_ENV,
    GitCredentials,
    is_http_url,
    local_remote_path,
    resolve_credentials,
    scrub,
)
from ._transport import FETCH_PATIENCE, Errors, LocalTransport, Transport, rejected

__all__ = ["HttpTransport", "check_ref_status", "open_transport", "remote_errors"]

HTTP_TIMEOUT = 120.0
_HEADS = b"refs/heads/"
# The status a server gives a ref whose compare-and-swap lost to a concurrent push, old and
# new: git's receive-pack said "failed to lock" / "failed to write" (before 2.2), "failed
# to update ref" (2.2 to 2.49, the cause on stderr: "cannot lock ref '<ref>': is at <x> but
# expected <y>", or "... File exists" for a concurrent push's lock), "atomic transaction
# failed" / "atomic push failure" (an --atomic push), and from 2.50 the transaction's own
# words ("incorrect old value provided", "reference already exists", "reference does not
# exist", "failed to update refs"); dulwich's server says "failed to write"; a client or a
# hosting service "non-fast-forward", "fetch first", "stale info".
_RACE_STATUSES = ("non-fast-forward", "fetch first", "stale info", "atomic push failed",
                  "atomic push failure", "atomic transaction failed", "unable to set",
                  "incorrect old value", "reference already exists",
                  "reference does not exist")  # fmt: skip
# Wordings that also cover a lasting fault (a ref folder the server may not write, a full
# disk): a race only if the ref moved meanwhile or the server's messages say another push
# held or moved it.
_MAYBE_RACE_STATUSES = ("failed to update ref", "failed to lock", "failed to write",
                        "cannot lock ref", "transaction failed to start", "unknown failure")  # fmt: skip
_CONTENTION = ("but expected", "file exists", "reference already exists", "incorrect old value")
_SAID_MAX = 2000  # characters of the server's messages kept for an error
_HEX = re.compile(r"[0-9a-f]+")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_FETCH_BACKOFF, _FETCH_BACKOFF_MAX = 0.02, 1.0  # seconds: first and longest (random) wait


class _ObjectFormat(Exception):
    """A server advertised object names other than SHA-1 (``args[0]``: its format)."""


class _HttpClient(Urllib3HttpGitClient):
    """dulwich's HTTP client, closing the response of a failed request before raising,
    and refusing a server whose objects are not named by SHA-1.

    dulwich raises on 401/403/404 without closing the (unread, streamed) response, which
    leaks the connection's socket; its own status mapping is reproduced here.
    """

    def _discover_references(self, service: bytes, base_url: str, *args: Any, **kw: Any) -> Any:
        # Every fetch, push and listing starts here: a SHA-256 repository says so in its
        # advertisement (object-format=sha256), empty or not, before anything is sent.
        found = super()._discover_references(service, base_url, *args, **kw)
        named = extract_object_format_from_capabilities(found[1])
        if named not in (None, "sha1"):
            raise _ObjectFormat(named)
        return found

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


def open_transport(
    url: str, config: Config, explicit: GitCredentials | None, token_env: str
) -> Transport:
    """A transport for ``url``; HTTP credentials are resolved now and live only in it."""
    if not is_http_url(url):
        return LocalTransport(
            url, local_remote_path(url), partial(remote_errors, url, None, token_env)
        )
    creds = resolve_credentials(explicit, token_env)
    host = (urlsplit(url).hostname or "").lower()
    if creds is not None and url.lower().startswith("http://") and host not in _LOOPBACK:
        raise GitError(
            f"Refusing to send the git token over unencrypted HTTP to {url}: use https://."
        )
    client = _HttpClient(
        url,
        config=config,
        username=creds.username if creds else None,
        password=creds.token if creds else None,
        timeout=HTTP_TIMEOUT,
    )
    return HttpTransport(url, client, partial(remote_errors, url, creds, token_env), creds)


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
    except _ObjectFormat as e:
        raise fail(
            f"Cannot {where}: it uses {e.args[0]} object names (git init "
            f"--object-format={e.args[0]}); datom supports SHA-1 repositories only, and nothing "
            "was changed. Use a remote made by git init --bare (the default "
            "--object-format=sha1)."
        ) from None
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
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise fail(
                f"Cannot {where}: the disk holding it is full ({e.strerror}). Free space "
                "there, then retry; nothing was recorded by this attempt."
            ) from e
        raise fail(f"Cannot {where}: {e.strerror or e}. Check the remote path/URL.") from e
    except FileLocked as e:
        raise fail(f"Cannot {where}: a ref is locked by another git process; retry.") from e
    except ValueError as e:  # dulwich's word for a malformed server reply
        raise fail(f"Cannot {where}: unexpected reply ({e}). Is it a git server?") from e
    except KeyError as e:
        sha = _object_id(e)
        if sha is None:
            raise
        raise fail(
            f"Cannot {where}: the repository lacks the git object {sha}, which its branch "
            "needs. Objects were removed from it while a push was under way (git gc "
            "--prune=now does that; git warns against pruning while others write), or it is "
            "damaged. Run git fsck there to list what is missing; restore the objects from a "
            "clone that holds them, or point the branch back at its last complete commit "
            "(git update-ref); then retry."
        ) from e


def _object_id(e: KeyError) -> str | None:
    """The object id a dulwich lookup's :class:`KeyError` names, None if it names none."""
    key = e.args[0] if e.args else None
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    if isinstance(text, str) and len(text) in (40, 64) and _HEX.fullmatch(text):
        return text
    return None


def _transient(cause: BaseException | None) -> bool:
    """Whether a failed fetch may succeed when asked again: a server error (5xx) or a
    reply cut short, not a refusal (401, 403, 404: each has its own remedy)."""
    if not isinstance(cause, GitProtocolError):
        return False
    status = re.search(r"http resp (\d{3})", str(cause))
    return status is None or status.group(1).startswith("5")


def check_ref_status(
    ref_status: Mapping[bytes, str | None],
    url: str,
    moved: Callable[[], bool] = lambda: False,
    said: str = "",
) -> None:
    """Raise for every ref the remote refused to update: :class:`PushRejectedError` for a
    push that lost a race (redo the write), :class:`GitError` for a refusal. ``moved()``
    tells whether the remote's branch left the commit the push expected; ``said`` is what
    the server printed (receive-pack's reasons)."""
    for ref, status in ref_status.items():
        if status is None:
            continue
        if _lost_race(status, said, moved):
            raise PushRejectedError(
                f"Push to {url} rejected for {ref.decode()} ({status}): another writer moved "
                "it. Call fetch_and_reset(), redo the write, and push again."
            )
        detail = " ".join(said.split())[-_SAID_MAX:]
        raise GitError(
            f"The remote {url} refused the push of {ref.decode()}: {status}"
            + (f" (the server said: {detail})" if detail else "")
            + ". A server-side rule (hook, branch protection) or fault declined it; ask the "
            "repository's owner."
        )


def _lost_race(status: str, said: str, moved: Callable[[], bool]) -> bool:
    lowered, heard = status.lower(), said.lower()
    if any(s in lowered for s in _RACE_STATUSES):
        return True
    if not any(lowered.startswith(s) for s in _MAYBE_RACE_STATUSES):
        return False
    return any(c in heard for c in _CONTENTION) or moved()


class HttpTransport(Transport):
    """A smart-HTTP(S) server, through dulwich's client (``errors`` translates failures)."""

    def __init__(
        self, url: str, client: GitClient, errors: Errors, credentials: GitCredentials | None
    ) -> None:
        self.url = url
        self.credentials = credentials
        self._client = client
        self.errors = errors

    def heads(
        self, action: str = "read the branches of"
    ) -> tuple[dict[bytes, bytes], bytes | None]:
        with self.errors(action):
            result = self._client.get_refs(b"")
        refs = {bytes(n): bytes(s) for n, s in result.refs.items() if n.startswith(_HEADS) and s}
        symrefs = {bytes(k): bytes(v) for k, v in (result.symrefs or {}).items()}
        return refs, symrefs.get(b"HEAD")

    def fetch_branch(self, r: Repo, branch: bytes) -> bytes | None:
        advertised: list[bytes | None] = [None]

        def wants(refs: Any, depth: int | None = None) -> list[bytes]:
            advertised[0] = refs.get(branch)
            tip = advertised[0]
            return [tip] if tip is not None and ObjectID(tip) not in r.object_store else []

        # A push landing mid-fetch can advertise a tip newer than the pack sent: ask again.
        deadline, delay = time.monotonic() + FETCH_PATIENCE, _FETCH_BACKOFF
        while True:
            try:
                with self.errors("fetch from"):
                    self._client.fetch(b"", r, determine_wants=wants)  # type: ignore[arg-type]
            except GitError as e:
                # A stateless server re-reads its refs for the pack request: a tip that moved
                # since the advertisement is "invalid" there (dulwich's server answers 500;
                # git's accepts a tip still reachable), as is a server's passing 5xx. Ask
                # again on the new refs, at random moments, as concurrent writers all do.
                if not _transient(e.__cause__) or time.monotonic() >= deadline:
                    raise
            else:
                tip = advertised[0]
                if tip is None or ObjectID(tip) in r.object_store:
                    return tip
                if time.monotonic() >= deadline:
                    raise GitError(f"fetch from {self.url} kept racing concurrent pushes; retry")
            time.sleep(random.uniform(0, delay))
            delay = min(2 * delay, _FETCH_BACKOFF_MAX)

    def push(
        self, r: Repo, branch: bytes, old: bytes | None, new: bytes, objects: Sequence[ShaFile]
    ) -> None:
        def update_refs(theirs: dict[bytes, bytes]) -> dict[bytes, bytes]:
            if theirs.get(branch) != old:
                raise rejected(self.url, branch, "the remote moved")
            return {branch: new}

        def generate(*_args: Any, **_kwargs: Any) -> Any:
            return pack_objects_to_data([(o, None) for o in objects])

        said: list[bytes] = []  # receive-pack's messages: why a ref was not updated
        with self.errors("push to"):
            result = self._client.send_pack(
                b"",
                update_refs,  # type: ignore[arg-type]
                generate,
                progress=said.append,
            )
        token = self.credentials.token if self.credentials else None
        check_ref_status(
            result.ref_status or {},
            self.url,
            moved=lambda: self.heads("read the branches of")[0].get(branch) != old,
            said=scrub(b"".join(said).decode("utf-8", "replace")[-_SAID_MAX:], token),
        )
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
        if tip is None or ObjectID(new) not in r.object_store:
            return False
        return can_fast_forward(r, ObjectID(new), ObjectID(tip))

    def close(self) -> None:
        self._client.close()
