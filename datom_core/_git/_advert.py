"""The refs a smart-HTTP server advertised last, kept for a few seconds so that one
advertisement serves a whole write.

A write over HTTP(S) needs the branch tip twice: to build its commit on, and, as the
``old`` value of its push, in the push's own ref advertisement (dulwich's ``send_pack``
asks for one before it sends). Both are the same look at the remote: the refs of the most
recent advertisement (of either service: a fetch's ``git-upload-pack`` one or a push's
``git-receive-pack`` one) are kept with the time they were read, and the next push sends
its commands straight away with those refs as what it expects, together with the push
capabilities the server advertised before (a server's capabilities do not change between
two requests). Nothing here is trusted for correctness: the server compares each ref with
the ``old`` value the push names and refuses a moved one, and a refused push reads afresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["FRESH_FOR", "RefsMemo", "honours_old_value"]

# Seconds an advertisement stands in for a new look at the remote. Short: a stale one
# costs a refused push and a new fetch, never a wrong result.
FRESH_FOR = 5.0
_RECEIVE = b"git-receive-pack"


def honours_old_value(agent: bytes | None) -> bool:
    """Whether a server's ``ok`` for a ref means the ref moved from the ``old`` value the
    push named. git's ``receive-pack`` (``agent=git/...``) updates refs in a transaction
    that checks it; dulwich's server answers ``ok`` even when its compare-and-swap failed,
    so for it, and for any server not known, the push is looked at again."""
    return agent is not None and agent.startswith(b"git/")


@dataclass
class _Seen:
    at: float
    refs: dict[Any, Any]
    symrefs: dict[Any, Any]
    peeled: dict[Any, Any]


class RefsMemo:
    """The last refs advertised and the server's push capabilities (see the module
    docstring); one per HTTP client, used by one thread at a time like the client."""

    def __init__(self) -> None:
        self._seen: _Seen | None = None
        self._push: tuple[set[bytes], str] | None = None  # capabilities, base URL

    def saw(self, service: bytes, advertised: tuple[Any, ...]) -> None:
        """Record what ``_discover_references(service, ...)`` returned."""
        refs, capabilities, url, symrefs, peeled = advertised
        clean = {k: v for k, v in refs.items() if v is not None}
        self._seen = _Seen(time.monotonic(), clean, dict(symrefs or {}), dict(peeled or {}))
        if service == _RECEIVE:
            self._push = (set(capabilities), url)

    def tip(self, branch: bytes, within: float = FRESH_FOR) -> tuple[bool, bytes | None]:
        """``(known, sha)``: the branch as advertised less than ``within`` seconds ago
        (``known`` False: no such advertisement)."""
        seen = self._seen
        if seen is None or time.monotonic() - seen.at >= within:
            return False, None
        sha = seen.refs.get(branch)
        return True, bytes(sha) if sha is not None else None

    def can_push(self) -> bool:
        """Whether the server's push capabilities are known (a push advertisement seen)."""
        return self._push is not None

    def take_for_push(self, within: float = FRESH_FOR) -> tuple[Any, ...] | None:
        """What a push's ref advertisement would return, made of the last refs seen and
        the push capabilities, or None (no fresh refs, or no push capabilities yet). Used
        once: a second push asks the server."""
        seen, push = self._seen, self._push
        if seen is None or push is None or time.monotonic() - seen.at >= within:
            return None
        self._seen = None
        capabilities, url = push
        return dict(seen.refs), set(capabilities), url, dict(seen.symrefs), dict(seen.peeled)

    def forget(self) -> None:
        """Drop the refs kept (a push was refused: the next look asks the server)."""
        self._seen = None
