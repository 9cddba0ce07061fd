"""Locked data cuts: a cut that, once recorded, refuses to move with its inputs.

A database lock is recorded once and must then stay as it was. ``datom_data_cut(...,
locked=True)`` gives a cut with two differences from an ordinary one:

* Materializing it when its set already has a version compares the versions it would
  pin now with the recorded ones. When any member would move (or be added or removed),
  the step fails, nothing is written, and the message lists each move and how to record
  a new version deliberately: the run config ``relock: true`` (:class:`LockConfig`).
  When nothing would move, the materialization is the same set version (``change
  none``), as for any cut.
* It declares no upstream dependencies in the asset graph. Dagster marks an asset
  "Unsynced" when an upstream asset has a newer data version than the one its latest
  materialization consumed; a lock's content does not follow its upstream assets, so
  such a dependency would invite exactly the click that moves it. The members are
  linked from the definition's metadata (``datom/member/<asset>``) instead, and the cut's
  data version stays its set's ``data_sha``.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import datom_core as dc
from dagster import Config

__all__ = ["LockConfig", "lock_refusal"]


class LockConfig(Config):
    """Run config of a locked cut: ``relock`` records a new version of the cut deliberately
    (the members move to the current versions of their tables)."""

    relock: bool = False


def lock_refusal(
    conn: dc.Connection,
    name: str,
    members: Sequence[dc.SetMember],
    labels: Mapping[str, Any],
    op_name: str,
) -> str | None:
    """Why writing ``members`` would move the locked cut ``name`` (None: it would not).

    ``conn`` is the product repo; a repo without a version of the set yet has nothing
    to protect (the first materialization records the lock).
    """
    try:
        current = conn.get_set()
    except dc.NotFoundError:
        return None
    diff = dc.diff_sets(current.members, members)
    moves = [f"- {m.name}: {m.before[:12]} -> {m.after[:12]}" for m in diff.moved]
    moves += [f"- {m.name}: added at {m.version[:12]}" for m in diff.added]
    moves += [f"- {m.name}: removed (locked at {m.version[:12]})" for m in diff.removed]
    moves += [f"- {a.name}@{a.version[:12]}: labels changed" for a, _ in diff.retagged]
    if _tags(current) != _tags_of(labels):
        moves.append("- the cut's labels changed")
    if not moves:
        return None
    return (
        f"data cut {name!r} is locked at version {current.version[:12]} and "
        f"materializing it now would change it; nothing was written, the lock stands:\n"
        + "\n".join(moves)
        + "\nTo record a new version of the cut deliberately, materialize it with run config "
        f"`ops: {{{op_name}: {{config: {{relock: true}}}}}}` (in the Dagster UI: "
        "Shift+click Materialize to open the launchpad). To keep this lock and cut the new "
        "data as well, define another data cut with a new name. `datom --repo "
        f"{conn.path} set show` shows the locked version."
    )


def _tags(current: dc.SetVersion) -> dict[str, tuple[str, ...]]:
    return {k: tuple(v) for k, v in current.tags.items()}


def _tags_of(labels: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {k: (v,) if isinstance(v, str) else tuple(str(x) for x in v) for k, v in labels.items()}
