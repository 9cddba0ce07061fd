"""A write over HTTP(S) in two git requests: the refs a smart-HTTP server advertised last,
kept a few seconds, stand for a new look (an accelerator of the git layer; switched off by
``DATOM_PLAIN=1`` or ``DATOM_PLAIN=advert``, see :mod:`datom_core._plain`).

dulwich's ``send_pack`` asks for a push advertisement (``GET
info/refs?service=git-receive-pack``) before it sends, and a write reads the branch tip
before it builds: two looks, in sequence, where one does. Here every advertisement the
client reads is kept (:class:`RefsMemo`); for ``FRESH_FOR`` seconds its refs are the tip a
write builds on and the push's old values, sent with the push capabilities seen before (the
push is one POST), and the look after a write (the mirror's settling) reads a push
advertisement, which the next write builds on.

Contract: the refs a push is answered with were advertised by the server less than
``FRESH_FOR`` seconds ago and are used once. Nothing in them is trusted for correctness:
the server refuses a push whose old value moved (one that answers ``ok`` anyway, dulwich's,
is looked at again, see :mod:`.._http`) and a refused push looks afresh; a kept look never
decides a write that records nothing (``Transport.kept``: that one looks again); a token
the server refuses push advertisements to reads fetch advertisements instead. Measured with
``benchmarks/bench_wan.py`` (RTT 50 ms, ``git http-backend``, one writer, plain and fast
writes alternated in one run): 2 git requests a write against 4, a small write 1.16-1.29x
faster (median 1.25 over 5 runs; 1.26x at RTT 100 ms).

Plain path (in :mod:`.._http`, beside each call): every view fetches (one advertisement),
every push asks for its own advertisement (dulwich's ``send_pack``), and a look is a fetch
advertisement (dulwich's ``get_refs``). The memo still records what was advertised: a
clone's sharers' note is checked against it (:func:`.._tipview.noted_tip`).
"""

from __future__ import annotations

import time
from typing import Any

from dulwich.client import HTTPUnauthorized
from dulwich.errors import GitProtocolError
from dulwich.objects import ObjectID
from dulwich.repo import Repo

from ..._errors import GitError

__all__ = ["FRESH_FOR", "RefsMemo", "branch_tip", "look", "tip"]

# Seconds a look stands for a new one: a stale one costs a refused push, never a wrong result.
FRESH_FOR = 5.0
_RECEIVE = b"git-receive-pack"


class RefsMemo:
    """The last refs advertised and the push capabilities; one per HTTP client."""

    def __init__(self) -> None:
        self._seen: tuple[float, dict[Any, Any], Any, Any] | None = (
            None  # when, refs, symrefs, peeled
        )
        self._push: tuple[set[bytes], str] | None = None  # capabilities, base URL
        self._armed: tuple[Any, ...] | None = None  # the next push's advertisement
        self.read_only = False  # the server refuses push advertisements to this token

    def saw(self, service: bytes, advertised: tuple[Any, ...]) -> None:
        """Record what ``_discover_references(service, ...)`` returned."""
        refs, capabilities, url, symrefs, peeled = advertised
        clean = {k: v for k, v in refs.items() if v is not None}
        self._seen = (time.monotonic(), clean, dict(symrefs or {}), dict(peeled or {}))
        if service == _RECEIVE:
            self._push = (set(capabilities), url)

    def tip(self, branch: bytes, within: float = FRESH_FOR) -> tuple[bool, bytes | None]:
        """``(known, sha)``: the branch as advertised less than ``within`` seconds ago."""
        seen = self._seen
        if seen is None or time.monotonic() - seen[0] >= within:
            return False, None
        sha = seen[1].get(branch)
        return True, bytes(sha) if sha is not None else None

    def adopt(self, branch: bytes, sha: bytes, age: float) -> None:
        """Take ``sha``, seen ``age`` seconds ago by a sharer of the clone, as ``branch``'s
        advertised tip (a newer one than this memo's: see ``_tipnote.adopt_note``)."""
        seen = self._seen
        refs = dict(seen[1]) if seen is not None else {}
        refs[branch] = sha
        when = time.monotonic() - max(age, 0.0)
        if seen is not None and seen[0] > when:
            when = seen[0]  # a look of this process's own, newer than the note
        self._seen = (when, refs, seen[2] if seen else {}, seen[3] if seen else {})

    def can_push(self) -> bool:
        """Whether the server's push capabilities are known (a push advertisement seen)."""
        return self._push is not None

    def arm(self, within: float = FRESH_FOR) -> None:
        """Let the next push advertisement asked for be answered from the fresh refs and
        the push capabilities (once; nothing when they are not fresh or not known)."""
        seen, push = self._seen, self._push
        if seen is None or push is None or time.monotonic() - seen[0] >= within:
            return
        self._seen = None
        self._armed = dict(seen[1]), set(push[0]), push[1], dict(seen[2]), dict(seen[3])

    def primed(self, service: bytes) -> tuple[Any, ...] | None:
        """The advertisement :meth:`arm` made, for a push's ``service`` (used once)."""
        if service != _RECEIVE:
            return None
        armed, self._armed = self._armed, None
        return armed

    def pushed(self, branch: bytes, new: bytes) -> None:
        """A push the server swapped from its ``old`` value: its answer is a look."""
        self._seen = (time.monotonic(), {branch: new}, {}, {})

    def forget(self) -> None:
        """Drop the refs kept (a push was refused: the next look asks the server)."""
        self._seen = self._armed = None


def look(client: Any) -> dict[bytes, bytes]:
    """The branches and tags of a new push advertisement (one request), kept in the
    client's memo for the push that follows."""
    found = client._discover_references(_RECEIVE, client._get_url(b""))
    return {bytes(k): bytes(v) for k, v in found[0].items() if v is not None}


def branch_tip(transport: Any, branch: bytes) -> bytes | None:
    """``branch`` on the remote, read from a new push advertisement; a token refused one
    (401, 403: a read-only token) reads fetch advertisements from then on."""
    memo: RefsMemo = transport._client.memo
    if not memo.read_only:
        try:
            with transport.errors("read from"):
                return look(transport._client).get(branch)
        except GitError as e:
            cause = e.__cause__
            if not isinstance(cause, HTTPUnauthorized) and not (
                isinstance(cause, GitProtocolError) and "http resp 403" in str(cause)
            ):
                raise
            memo.read_only = True
    return transport.heads("read from")[0].get(branch)


def tip(transport: Any, r: Repo, branch: bytes, recent: bool = True) -> bytes | None:
    """The tip to build on: the last advertisement's when it is fresh (and ``recent``
    allows it; ``transport.kept`` then says so), else a new look; its objects fetched when
    the clone lacks them."""
    memo: RefsMemo = transport._client.memo
    known, sha = memo.tip(branch) if recent else (False, None)
    transport.kept = known
    if not known and memo.can_push():
        # A fetch's advertisement serves the push too (the capabilities are known): one
        # request when the clone has the tip, two when it must fetch its objects.
        return transport.fetch_branch(r, branch)
    if not known:
        sha = transport.branch_tip(branch)
    if sha is not None and ObjectID(sha) not in r.object_store:
        sha = transport.fetch_branch(r, branch)
    return sha
