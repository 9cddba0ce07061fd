"""Objects in the store that no recorded version names: what failed writes left.

A write puts its parquet and its version's snapshot in the store before its push; one
that fails removes them (``_outcome``), but one that is killed, or whose undo could not
reach the store, leaves them. ``validate`` lists them as ``orphaned_object`` (never as
tampering: nothing names them, so nothing is vouched for by them) and ``fix=True``
removes them; only those older than the grace period: a younger one may belong to a
write in flight, whose push has not landed yet.

Only the two shapes a table write puts are considered (``<table>/<sha>.parquet`` and
``<table>/.metadata/<sha>.json``), under names git does not hold as a set (a set's
objects are its validate's to judge), and never under a table whose git documents are
damaged (what they name cannot be known).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence

from datom_core._errors import NotFoundError
from datom_core._project._context import ProjectContext
from datom_core._project._model import HistoryEntry
from datom_core._project._records import Problem

__all__ = ["check_orphans"]

_PARQUET = re.compile(r"([^/]+)/([0-9a-f]{64})\.parquet")
_SNAPSHOT = re.compile(r"([^/]+)/\.metadata/([0-9a-f]{64})\.json")


def check_orphans(
    ctx: ProjectContext,
    histories: Mapping[str, Sequence[HistoryEntry]],
    unknown: Iterable[str],
    grace_s: float,
    fix: bool,
) -> list[Problem]:
    """Orphaned parquets and snapshots older than ``grace_s`` seconds.

    ``histories``: each table's entries in git; ``unknown``: names whose documents git
    holds but that cannot be judged here (sets, damaged tables): skipped.
    """
    skipped = set(unknown)
    named: dict[str, set[str]] = {}
    for table, entries in histories.items():
        named[table] = {h.version for h in entries} | {h.data_sha for h in entries}
    problems = []
    now = time.time()
    for key in ctx.store.list(""):
        found = _PARQUET.fullmatch(key) or _SNAPSHOT.fullmatch(key)
        if found is None or found.group(1) in skipped:
            continue
        table, sha = found.group(1), found.group(2)
        if sha in named.get(table, ()):
            continue
        try:
            modified = ctx.store.modified(key)
        except NotFoundError:
            continue  # its writer's undo just removed it
        age = now - modified if modified is not None else None
        if age is None or age < grace_s:
            continue  # may be a write in flight (or its age cannot be told)
        what = "parquet" if key.endswith(".parquet") else "snapshot"
        detail = (
            f"a {what} no recorded version of {table!r} names, left {age / 3600:.1f} h ago "
            "by a write that failed or was killed before its push landed"
        )
        if fix:
            ctx.store.delete(key)
        problems.append(Problem("orphaned_object", table, key, detail, fixable=True, fixed=fix))
    return problems
