"""Work a person did with git in a datom clone is never dropped (private to the git layer).

datom builds every write on ``origin``'s tip and moves the clone's branch there. A commit
someone made in the clone with git and has not pushed would be dropped by that move, and
the files it added deleted from the working tree. So every operation that moves the branch
first looks for such commits and, finding one, refuses before anything changes, naming the
commits and how to push or set them aside.

Refusing, rather than pushing them along with datom's commit (R datom's pull-then-push),
is deliberate: datom only publishes documents it built and checked (a hand-made commit may
hold a manifest or a history no datom reader accepts), and a person's unpushed commit is a
decision the person makes (push it, or keep it on a branch). The check costs nothing in the
common case: the branch is where the clone last saw ``origin`` (its tracking ref).

Commits datom itself made and did not push yet (:meth:`MetadataRepo.commit` before a
rejected :meth:`push`) are listed in ``.git/datom-made-commits`` and are datom's to redo.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from .._errors import GitError
from . import _internals as gi
from ._objects import commit_of

__all__ = ["forget_made", "refuse_local_work", "remember_made"]

_MADE = "datom-made-commits"
_SHOWN = 5  # commits named in the error
_LOOKED = 200  # commits looked at, at most, from the branch tip back


def remember_made(controldir: Path, sha: bytes) -> None:
    """Record that datom made the local commit ``sha`` (before the branch moves to it)."""
    with open(controldir / _MADE, "ab") as f:
        f.write(sha + b"\n")


def forget_made(controldir: Path) -> None:
    """The branch is on what ``origin`` holds: no datom commit is waiting to be pushed."""
    (controldir / _MADE).unlink(missing_ok=True)


def _made(controldir: Path) -> set[bytes]:
    try:
        return set((controldir / _MADE).read_bytes().split())
    except FileNotFoundError:
        return set()


def local_commits(
    r: Repo,
    branch: bytes,
    known: Iterable[bytes | None],
    held: Callable[[bytes], bool],
    seen: bool = True,
) -> list[Commit]:
    """Commits on ``branch`` that neither ``origin`` holds nor datom made, newest first.

    ``known``: commits ``origin`` is on, the branch being their ancestor or one of them is
    enough; ``seen``: so is the tracking ref (what ``origin`` held at the last fetch or
    push; False when ``origin`` lost the branch since); ``held(sha)``: whether the remote
    holds a commit (where that can be asked without the network, a local remote).
    """
    head = gi.get_ref(r, branch)
    if head is None:
        return []
    tips = {s for s in known if s is not None}
    tracked = gi.tracking(r, branch) if seen else None
    if tracked is not None:
        tips.add(tracked)
    if head in tips:
        return []  # the common case: one ref read
    store = r.object_store
    exclude = [ObjectID(s) for s in tips if ObjectID(s) in store]
    made = _made(Path(r.controldir()))
    found: list[Commit] = []
    for entry in r.get_walker(include=[ObjectID(head)], exclude=exclude, max_entries=_LOOKED):
        commit = entry.commit
        if commit.id in made or held(commit.id):
            continue
        found.append(commit)
    return _unreached(r, exclude, found) if found else found


def _unreached(r: Repo, tips: list[ObjectID], commits: list[Commit]) -> list[Commit]:
    """Those of ``commits`` no commit of ``tips`` reaches. dulwich's walk, as git's, goes
    by commit dates and stops a few commits past the last one it could name: a colleague's
    commits dated before the clone's own (a clock behind) between the tips and the branch
    made it name the clone's pushed commits as local work. Asked only before a refusal,
    the tips' history is walked whole (as far as the clone holds it)."""
    left = {c.id for c in commits}
    stack, seen = list(tips), set()
    while stack and left:
        sha = stack.pop()
        if sha in seen or sha not in r.object_store:  # (past a shallow clone's edge)
            continue
        seen.add(sha)
        left.discard(sha)
        commit = commit_of(r.object_store, sha)
        stack.extend(commit.parents if commit is not None else ())
    return [c for c in commits if c.id in left]


def refuse_local_work(
    r: Repo,
    clone: Path,
    branch: bytes,
    known: Iterable[bytes | None],
    held: Callable[[bytes], bool],
    doing: str,
) -> None:
    """:class:`GitError` naming the commits :func:`local_commits` finds, before ``doing``
    (what would drop them) changes anything. ``known`` all None: ``origin`` has no such
    branch, and every commit on the clone's but those datom made and never pushed counts
    (a remote that looks empty never empties a clone of the history it held)."""
    known = list(known)
    gone = all(s is None for s in known)
    found = local_commits(r, branch, known, (lambda _: False) if gone else held, seen=not gone)
    if not found:
        return
    name = gi.short(branch)
    if gone:
        raise GitError(
            f"Cannot {doing} in {clone}: origin ({gi.remote_url(r)}) has no branch {name}, "
            f"but this clone's holds {len(found)} commit(s) (newest "
            f"{found[0].id.decode()[:12]}). Nothing was changed or deleted. If the "
            f"remote was emptied or replaced on purpose, push this clone's work there "
            f"(git -C {clone} push origin {name}); if {name} is a branch of your own, check "
            "out the project's branch (git checkout <branch>); else check the remote URL."
        )
    shown = ", ".join(
        f"{c.id.decode()[:12]} {c.message.decode('utf-8', 'replace').splitlines()[0][:60]!r}"
        if c.message.strip()
        else c.id.decode()[:12]
        for c in found[:_SHOWN]
    )
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    raise GitError(
        f"Cannot {doing} in {clone}: its branch {name} holds {len(found)} commit(s) made with "
        f"git and not pushed to origin ({shown}{more}); datom builds on origin's tip and "
        "would drop them. Nothing was changed. Push them "
        f"(git -C {clone} push origin {name}), or keep them on a branch and drop them from "
        f"{name} (git -C {clone} branch my-work && git -C {clone} reset --keep "
        f"origin/{name}), then retry."
    )
