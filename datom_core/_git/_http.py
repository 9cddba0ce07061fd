"""Opening ``origin`` (a local bare repository, or HTTP(S) with a token read at call time),
and the HTTP(S) transport through dulwich's client (its errors translated by
:mod:`._remoteerrors`)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dulwich.client import GitClient
from dulwich.config import Config
from dulwich.errors import GitProtocolError
from dulwich.graph import can_fast_forward
from dulwich.objects import ObjectID, ShaFile
from dulwich.pack import pack_objects_to_data
from dulwich.refs import Ref
from dulwich.repo import Repo

from .._errors import GitError
from .._plain import plain
from . import _internals as gi
from ._backoff import Backoff
from ._credentials import CredentialHelpers, effective_url
from ._fast import _advert
from ._fast._advert import RefsMemo
from ._fast._prime import push_advertisement_alongside
from ._fast._tipnote import adopt_note
from ._httpclient import HttpClient
from ._httpsettings import pool_manager, with_git_environment
from ._read import keeping
from ._refstatus import SAID_MAX, check_ref_status, storage_fault
from ._remote import (
    GitCredentials,
    is_http_url,
    local_remote_path,
    resolve_credentials,
    scrub,
)
from ._remoteerrors import remote_errors
from ._transport import FETCH_PATIENCE, Errors, Heads, LocalTransport, Transport, rejected

__all__ = ["HttpTransport", "open_transport"]

HTTP_TIMEOUT = 120.0
_HEADS = b"refs/heads/"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_WHOLE_HISTORY = 0x7FFFFFFF  # git's "infinite" depth (what --unshallow asks for)
_STORAGE_TRIES = 4  # sends of a push the server failed to store (_refstatus.storage_fault)


def open_transport(
    url: str, config: Config, explicit: GitCredentials | None, token_env: str, clone: Path
) -> Transport:
    """A transport for ``url`` as git reaches it (:func:`effective_url`); HTTP credentials
    are resolved now and live only in it: ``explicit``, else the token in ``token_env``,
    else any in the URL git's configuration rewrites it to, else (on a 401) what git's
    credential helpers give."""
    url, url_creds = effective_url(url, config)
    if not is_http_url(url):
        return LocalTransport(
            url, local_remote_path(url), partial(remote_errors, url, None, token_env)
        )
    creds = resolve_credentials(explicit, token_env)
    sent = creds or url_creds
    host = (urlsplit(url).hostname or "").lower()
    if sent is not None and url.lower().startswith("http://") and host not in _LOOPBACK:
        raise GitError(
            f"Refusing to send the git token over unencrypted HTTP to {url}: use https://."
        )
    config = with_git_environment(config)
    try:
        pool = pool_manager(config, url, HTTP_TIMEOUT)
    except ValueError as e:  # urllib3's word for a proxy it cannot use
        raise GitError(
            f"Cannot reach {url} through the proxy git's settings name ({e}): fix http.proxy "
            "or the proxy variables (HTTPS_PROXY, ALL_PROXY; an http:// proxy URL)."
        ) from None
    client = HttpClient(
        url,
        config=config,
        pool_manager=pool,
        username=sent.username if sent else None,
        password=sent.token if sent else None,
        timeout=HTTP_TIMEOUT,
        helpers=CredentialHelpers(url, clone),
    )
    errors = partial(
        remote_errors,
        url,
        sent,
        token_env,
        rewritten=creds is None and url_creds is not None,
        helped=lambda: client.filled,
    )
    return HttpTransport(url, client, errors, creds)


def _transient(cause: BaseException | None) -> bool:
    """Whether a failed fetch may succeed when asked again: a server error (5xx) or a
    reply cut short, not a refusal (401, 403, 404: each has its own remedy)."""
    if not isinstance(cause, GitProtocolError):
        return False
    status = re.search(r"http resp (\d{3})", str(cause))
    return status is None or status.group(1).startswith("5")


class HttpTransport(Transport):
    """A smart-HTTP(S) server, through dulwich's client (``errors`` translates failures)."""

    def __init__(
        self, url: str, client: GitClient, errors: Errors, credentials: GitCredentials | None
    ) -> None:
        self.url = url
        self.credentials = credentials
        self._client = client
        self.errors = errors

    def heads(self, action: str = "read the branches of") -> Heads:
        with self.errors(action):
            result = self._client.get_refs(b"", protocol_version=0)  # v2: a request more
        refs = {bytes(n): bytes(s) for n, s in result.refs.items() if n.startswith(_HEADS) and s}
        named = (result.symrefs or {}).get(Ref(b"HEAD"))
        return refs, bytes(named) if named else None

    def branch_tip(self, branch: bytes) -> bytes | None:
        """A new look: one request, kept by :mod:`._fast._advert` (a push advertisement) as
        the tip the next write builds on and pushes from; plain: a fetch advertisement."""
        if plain("advert"):
            return super().branch_tip(branch)
        return _advert.branch_tip(self, branch)

    def _tip(self, r: Repo, branch: bytes, recent: bool = True) -> bytes | None:
        """A look read at most once per write (a push built on a tip that moved since is
        refused by the server, and the retry looks again): with :mod:`._fast._advert` the
        last advertisement's when fresh; plain: a new fetch."""
        if not plain("advert"):
            if recent:  # a sharer of the clone may have pushed since this process looked
                adopt_note(r, self._client.memo, branch)  # type: ignore[attr-defined]
            return _advert.tip(self, r, branch, recent)
        self.kept = False
        return self.fetch_branch(r, branch)

    def forget(self) -> bool:
        self._client.memo.forget()  # type: ignore[attr-defined]
        return super().forget()

    def fetch_branch(self, r: Repo, branch: bytes, depth: int | None = None) -> bytes | None:
        return self._fetch(r, depth, branch)[0].get(branch)

    def fetch_heads(self, r: Repo, depth: int | None = None) -> Heads:
        """One exchange (the branches and ``HEAD``'s in one advertisement, one pack); a
        shallow clone, made to write, reads the push's advertisement alongside."""
        with push_advertisement_alongside(self._client, depth is not None):
            return self._fetch(r, depth, None)

    def _fetch(self, r: Repo, depth: int | None, branch: bytes | None) -> Heads:
        """The advertised branches (``branch`` only, if given) and ``HEAD``'s, each tip
        fetched with the objects it adds (``depth``: of that many commits)."""
        if depth is None and r.get_shallow():
            # A shallow clone stays one: what is new, down to the new tip's commit (a
            # shallow request without a depth is also one dulwich's server cannot read).
            depth = 1
        tips: dict[bytes, bytes] = {}
        again = depth == _WHOLE_HISTORY  # a deepening wants the tips it has

        def wants(refs: Any, depth: int | None = None) -> list[bytes]:
            advertised = [(n, s) for n, s in refs.items() if s and n.startswith(_HEADS)]
            tips.clear()
            tips.update((bytes(n), bytes(s)) for n, s in advertised if branch in (None, n))
            return [t for t in set(tips.values()) if again or ObjectID(t) not in r.object_store]

        # A push landing mid-fetch can advertise a tip newer than the pack sent: ask again.
        deadline, backoff = time.monotonic() + FETCH_PATIENCE, Backoff()
        while True:
            try:
                # The pack stays kept until a ref reaches it (_read.keeping, gi.set_fetched).
                with self.errors("fetch from"), keeping(r.object_store):
                    # Protocol v0: the refs come with the advertisement (v2 asks for
                    # them in a request of their own, one more round trip).
                    result = self._client.fetch(
                        b"",
                        r,
                        determine_wants=wants,  # type: ignore[arg-type]
                        protocol_version=0,
                        depth=depth,
                    )
                    fetched = all(ObjectID(t) in r.object_store for t in tips.values())
                    if fetched:
                        for name, sha in tips.items():
                            gi.set_fetched(r, name, sha)
            except GitError as e:
                # A stateless server re-reads its refs for the pack request: a tip that moved
                # since the advertisement is "invalid" there (dulwich's server answers 500;
                # git's accepts a tip still reachable), as is a server's passing 5xx. Ask
                # again on the new refs, at random moments, as concurrent writers all do.
                if not _transient(e.__cause__) or time.monotonic() >= deadline:
                    raise
            else:
                if fetched:
                    named = (result.symrefs or {}).get(Ref(b"HEAD"))
                    return dict(tips), bytes(named) if named else None
                if time.monotonic() >= deadline:
                    raise GitError(f"fetch from {self.url} kept racing concurrent pushes; retry")
            time.sleep(backoff.next())

    def deepen(self, r: Repo, branch: bytes) -> None:
        """git's ``--unshallow``: the tip wanted again with the deepest ``deepen``; the
        server sends the commits behind the clone's shallow ones."""
        self._fetch(r, _WHOLE_HISTORY, branch)

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
        memo: RefsMemo = self._client.memo  # type: ignore[attr-defined]
        backoff = Backoff()
        for tries in range(1, _STORAGE_TRIES + 1):
            said.clear()
            if tries == 1 and not plain("advert"):
                memo.arm()  # answered from the last look (_fast/_advert); plain: dulwich asks
            try:
                with self.errors("push to"):
                    result = self._client.send_pack(
                        b"",
                        update_refs,  # type: ignore[arg-type]
                        generate,
                        progress=said.append,
                    )
            finally:
                # Refs seen before a push are not the remote's after it, whatever its
                # outcome (a lost answer is decided by a new look, see _project/_outcome).
                memo.forget()
            if tries == _STORAGE_TRIES or not storage_fault(result.ref_status or {}):
                break
            time.sleep(backoff.next())  # the ref did not move: the same push, sent again
        check_ref_status(
            result.ref_status or {},
            self.url,
            moved=lambda: self.heads("read the branches of")[0].get(branch) != old,
            said=scrub(b"".join(said).decode("utf-8", "replace")[-SAID_MAX:], *self._secrets()),
        )
        # git's receive-pack checks the old value: its "ok" is a compare-and-swap that held.
        if result.agent is not None and result.agent.startswith(b"git/"):
            return memo.pushed(branch, new)
        # Another server may answer "ok" though a concurrent push won the ref (dulwich's does).
        landed = self.heads()[0].get(branch)
        memo.forget()
        if landed != new and not self._built_on(r, branch, new):
            raise rejected(self.url, branch, "the remote said ok but lost a race")

    def _built_on(self, r: Repo, branch: bytes, new: bytes) -> bool:
        """Whether the branch moved on from ``new`` (another writer built on it already)."""
        tip = self.fetch_branch(r, branch)
        if tip is None or ObjectID(new) not in r.object_store:
            return False
        return can_fast_forward(r, ObjectID(new), ObjectID(tip))

    def _secrets(self) -> tuple[str | None, ...]:
        return self._client.secrets()  # type: ignore[attr-defined]

    def close(self) -> None:
        self._client.close()
