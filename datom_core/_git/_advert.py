"""The refs a smart-HTTP server advertised last (or a push it swapped answered), kept a few
seconds: a write's tip to build on and its push's ``old`` value are one look, and the push
goes with those refs and the push capabilities seen before. Nothing here is trusted: the
server refuses a push whose ``old`` value moved; a refused push reads afresh."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["FRESH_FOR", "RefsMemo", "honours_old_value"]

FRESH_FOR = 5.0  # seconds a look stands for a new one (if stale: a refused push, no harm)


def honours_old_value(agent: bytes | None) -> bool:
    """Whether a server's ``ok`` means the ref moved from the push's ``old`` value (git's
    ``receive-pack`` checks it; dulwich's answers ``ok`` to a failed compare-and-swap)."""
    return agent is not None and agent.startswith(b"git/")


@dataclass
class _Seen:
    at: float
    refs: dict[Any, Any]
    symrefs: dict[Any, Any]
    peeled: dict[Any, Any]


class RefsMemo:
    """The last refs advertised and the push capabilities; one per HTTP client."""

    def __init__(self) -> None:
        self._seen: _Seen | None = None
        self._push: tuple[set[bytes], str] | None = None  # capabilities, base URL

    def saw(self, service: bytes, advertised: tuple[Any, ...]) -> None:
        """Record what ``_discover_references(service, ...)`` returned."""
        refs, capabilities, url, symrefs, peeled = advertised
        clean = {k: v for k, v in refs.items() if v is not None}
        self._seen = _Seen(time.monotonic(), clean, dict(symrefs or {}), dict(peeled or {}))
        if service == b"git-receive-pack":
            self._push = (set(capabilities), url)

    def tip(self, branch: bytes, within: float = FRESH_FOR) -> tuple[bool, bytes | None]:
        """``(known, sha)``: the branch as advertised less than ``within`` seconds ago."""
        seen = self._seen
        if seen is None or time.monotonic() - seen.at >= within:
            return False, None
        return True, None if (sha := seen.refs.get(branch)) is None else bytes(sha)

    def can_push(self) -> bool:
        """Whether the server's push capabilities are known (a push advertisement seen)."""
        return self._push is not None

    def take_for_push(self, within: float = FRESH_FOR) -> tuple[Any, ...] | None:
        """A push advertisement made of the fresh refs and the push capabilities, or None;
        used once (a second push asks the server)."""
        seen, push = self._seen, self._push
        if seen is None or push is None or time.monotonic() - seen.at >= within:
            return None
        self._seen = None
        return dict(seen.refs), set(push[0]), push[1], dict(seen.symrefs), dict(seen.peeled)

    def pushed(self, branch: bytes, new: bytes) -> None:
        """A push the server swapped from its ``old`` value: its answer is a look."""
        self._seen = _Seen(time.monotonic(), {branch: new}, {}, {})

    def forget(self) -> None:
        """Drop the refs kept (a push was refused: the next look asks the server)."""
        self._seen = None
