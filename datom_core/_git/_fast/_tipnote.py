"""The clone's newest look at the remote's tip, shared by the processes using the clone
(an accelerator of group commit, for speed only; switched off by ``DATOM_PLAIN=1`` or
``DATOM_PLAIN=group``, see :mod:`datom_core._plain`).

Contract: after each push or look, ``.git/datom-tip`` notes the branch's tip; a writer
that shares the clone classifies its write on a note less than ``FRESH_FOR`` seconds old
(a *kept* look, over HTTP(S) only) without taking the clone's lock, so the writers
waiting behind a group's push prepare theirs meanwhile. A push's view takes a note newer
than this process's own kept look (:func:`adopt_note`): the next group's leader pushes
from the tip the last group pushed, not from its own older look (a push refused, a new
look, a second push). A kept look is only ever built on: the push's compare-and-swap
refuses a stale one (the write then builds on a new look, as after any lost race), and a
decision to record nothing is made again on a new look.
Plain path: :func:`noted_tip` gives None, and ``RepoCore.remote_tip`` takes the clone's
lock and looks at the remote itself. Measured with the grouping it serves
(``benchmarks/bench_wan.py --one-clone --compare group``, 8 writers through one clone,
RTT 50-200 ms, runs alternated on a loaded 2-core machine): 0.43-2.13x the plain path's
writes/s over 13 pairs (median 1.19, mean 1.25; 1.49-2.13 when the machine was least
loaded, below 1 where CPU-bound writers hid the round trips), git requests a write 5 ->
2-3.6.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path

from dulwich.object_store import BaseObjectStore
from dulwich.objects import ObjectID
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from ..._plain import plain
from .. import _internals as gi
from .._objects import commit_of
from .._remote import is_http_url
from .._tipview import TipView
from ._advert import FRESH_FOR, RefsMemo

__all__ = ["adopt_note", "note_tip", "noted_tip"]

_NOTE = "datom-tip"  # in .git: "<time> <branch> <commit>", the clone's newest look


def note_tip(controldir: Path, branch: bytes, sha: bytes | None) -> None:
    """Note ``sha`` as ``branch``'s tip on the remote now, for the clone's sharers (a hint)."""
    tmp = Path(controldir, f"{_NOTE}.{os.getpid()}")
    with suppress(OSError):
        tmp.write_bytes(b"%.6f %s %s" % (time.time(), branch, sha or b"-"))
        os.replace(tmp, Path(controldir, _NOTE))


def noted_tip(controldir: Path, r: Repo, transport: object, url: object) -> TipView | None:
    """The tip of ``r``'s branch noted less than ``FRESH_FOR`` seconds ago, as a kept view;
    None: no note, not an HTTP(S) ``url`` (a local remote is read in place), the clone
    lacks the commit, or this process's own fresh look saw a tip it does not descend from."""
    memo = getattr(getattr(transport, "_client", None), "memo", None)
    branch = gi.branch_ref(r)
    noted = _newer_note(controldir, r, memo, branch) if is_http_url(str(url)) else None
    if noted is None:
        return None
    try:
        view = TipView(r.object_store, noted[0])
    except (KeyError, PackFileDisappeared):
        return None
    view.kept = True
    return view


def adopt_note(r: Repo, memo: RefsMemo, branch: bytes) -> None:
    """Before a push's view: a fresh note of ``branch``'s tip newer than this process's
    kept look (a sharer of the clone pushed since) replaces it in ``memo``, so the write
    builds on it and pushes from it (see the module docstring). Never where ``memo``
    keeps no look: after a refused push only the remote says where it is."""
    known, seen = memo.tip(branch)
    if not known:  # none kept (a refused push forgot it): the caller looks at the remote
        return
    noted = _newer_note(Path(r.controldir()), r, memo, branch)
    if noted is not None and noted[0] != seen:
        memo.adopt(branch, *noted)


def _newer_note(
    controldir: Path, r: Repo, memo: RefsMemo | None, branch: bytes
) -> tuple[bytes, float] | None:
    """``(commit, age)`` of the note of ``branch``'s tip when it is fresh, the clone holds
    the commit, and it descends from this process's own fresh look (if any); None on the
    plain path (``DATOM_PLAIN=group``: the caller looks at the remote itself)."""
    if plain("group"):
        return None
    try:
        at, noted, sha = Path(controldir, _NOTE).read_bytes().split()
        age = time.time() - float(at)
        if noted != branch or sha == b"-" or not 0 <= age < FRESH_FOR:
            return None
        known, seen = memo.tip(branch) if memo is not None else (False, None)
        if known and seen != sha and not _descends(r.object_store, sha, seen):
            return None
        return (sha, age) if ObjectID(sha) in r.object_store else None
    except (OSError, ValueError, KeyError, PackFileDisappeared):
        return None


def _descends(store: BaseObjectStore, sha: bytes | None, older: bytes | None) -> bool:
    """Whether ``older`` is one of the 64 first-parent ancestors of ``sha``."""
    for _ in range(64):
        parsed = commit_of(store, sha) if sha is not None else None
        sha = parsed.parents[0] if parsed is not None and parsed.parents else None
        if sha is None or sha == older:
            return sha is not None
    return False
