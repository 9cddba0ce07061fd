"""A write whose push failed: its outcome is the remote's to say, never guessed.

A push can fail after the remote applied it: the answer is lost (a reset, a 5xx from a
proxy, a timeout), or the server stops answering (a token revoked, a network cut) before
the writer learns it. So the failed write asks the remote (reads its tip) before it undoes
anything:

* the tip records the version: the push landed; the write is completed from that tip;
* the tip does not: what this write put in the store and no recorded version names is
  removed (the undo); a failing removal never hides the push's own error (it is noted);
* the remote cannot be asked: nothing is removed, and the error says the version *may
  have been recorded*; the same write run again converges (a ``none`` write when it was
  recorded, else a write that finds its objects in place). Objects of a version that in
  the end was not recorded are orphans that ``validate(fix=True)`` removes after a grace
  period (``_orphans``).

The same rule serves the set writes (``_sets._write``) and sync, which record through
these writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from datom_core._errors import DatomError, PushRejectedError, push_was_sent
from datom_core._git import MetadataRepo, TipView
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._history_text import history_text
from datom_core._project._model import HistoryEntry
from datom_core._project._tip import TreeReader

__all__ = [
    "Put",
    "after_failed_push",
    "may_have_been_recorded",
    "remove_unnamed",
    "undo_unpushed",
]


@dataclass(frozen=True)
class Put:
    """What a write put in the store before its push: the parquet of ``data_sha`` and the
    snapshot of ``version`` (None: it was there already)."""

    data_sha: str | None
    version: str | None


def after_failed_push(
    ctx: ProjectContext, table: str, version: str, put: Put, error: BaseException
) -> TipView | None:
    """Ask the remote what the push that raised ``error`` left.

    Returns the remote's tip when it records ``version`` (the push landed, or a concurrent
    twin recorded the same version; ``error`` is not a refusal), else None, once what no
    recorded version names is removed (or, when the remote cannot be asked, once ``error``
    says the version may have been recorded).
    """
    repo = ctx.require_repo()
    tip: TipView | None = None
    try:
        tip = repo.remote_tip()
    except DatomError as asked:
        if push_was_sent(error):
            error.add_note(may_have_been_recorded(f"table {table!r}", version, asked))
            return None
        # The push never left (the remote was out of reach before): judged by the clone.
    entries = entries_on(tip if tip is not None else repo, table)
    if entries is None:  # git's history of the table does not parse: it cannot say
        error.add_note(may_have_been_recorded(f"table {table!r}", version, "unreadable history"))
        return None
    if tip is not None:
        recorded = any(h.version == version for h in entries)
        if recorded and not isinstance(error, PushRejectedError):
            return tip
        _move_to(repo, tip)
    keys = []
    if put.version is not None and all(h.version != put.version for h in entries):
        keys.append(L.store_snapshot(table, put.version))
    if put.data_sha is not None and all(h.data_sha != put.data_sha for h in entries):
        keys.append(L.store_parquet(table, put.data_sha))
    remove_unnamed(ctx, keys, error)
    return None


def undo_unpushed(ctx: ProjectContext, table: str, put: Put, error: BaseException) -> None:
    """A write that failed before its push (any error, a store refusing the snapshot, an
    interrupt): remove what it put that no version on the remote's tip names (a
    concurrent writer of the same data may have recorded it meanwhile)."""
    if put.data_sha is None and put.version is None:
        return
    named_by = {}  # key: the version or data_sha a recorded version would name it by
    if put.version is not None:
        named_by[L.store_snapshot(table, put.version)] = put.version
    if put.data_sha is not None:
        named_by[L.store_parquet(table, put.data_sha)] = put.data_sha
    keys = list(named_by)
    try:
        entries = entries_on(ctx.require_repo().remote_tip(), table)
    except DatomError as asked:
        entries = None
        why: object = asked
    else:
        why = "its history does not parse"
    if entries is None:
        error.add_note(
            f"table {table!r}: the write failed before its push; {', '.join(keys)} stay in "
            f"store {ctx.store.url}, as the remote could not say whether a concurrent writer "
            f"recorded the same data ({why}): validate(fix=True) removes them once older "
            "than its grace period if no version names them"
        )
        return
    named = {h.version for h in entries} | {h.data_sha for h in entries}
    remove_unnamed(ctx, [k for k in keys if named_by[k] not in named], error)


def may_have_been_recorded(what: str, version: str, asked: BaseException | str) -> str:
    """The note of a write whose outcome the remote could not be asked about."""
    return (
        f"{what}: version {version} may have been recorded: the push's answer was lost "
        f"and the remote could not say afterwards whether it holds it ({asked}). Nothing "
        "was removed from the store. Run the same write again once the remote answers: it finds the version "
        "recorded (a 'none' write) or records it; validate(fix=True) removes what a write "
        "that was in the end not recorded left, after its grace period."
    )


def remove_unnamed(ctx: ProjectContext, keys: Iterable[str], error: BaseException) -> None:
    """Delete ``keys`` (objects of this write no recorded version names); a failure to
    delete is noted on ``error``, which stays the error the caller raises."""
    for key in keys:
        try:
            ctx.store.delete(key)
        except DatomError as undo:
            error.add_note(
                f"the undo could not remove {key} from store {ctx.store.url} ({undo}); no "
                "version names it: validate(fix=True) removes it once older than its grace "
                "period"
            )


def entries_on(tip: TreeReader, table: str) -> Sequence[HistoryEntry] | None:
    """The history entries of ``table`` on ``tip`` (None: a history that does not parse)."""
    raw = tip.read(L.git_history(table))
    if raw is None:
        return ()
    try:
        return history_text(raw, key=L.git_history(table)).entries
    except DatomError:
        return None


def _move_to(repo: MetadataRepo, tip: TipView) -> None:
    """Leave the clone on the tip that was asked (it never holds an unpushed commit)."""
    try:
        repo.catch_up(tip.commit)
    except DatomError:
        pass  # the clone stays where it was: the next write or pull moves it
