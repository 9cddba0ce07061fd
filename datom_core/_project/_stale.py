"""A stale inbox file: an earlier version's source file, left behind by a newer version.

A file whose bytes are the source file of an earlier version (not the current one) is
either an old extract dropped again on purpose, or a leftover: a copy that sat in one
clone's inbox while someone (in any clone, in R or in Python) recorded a newer version.
They are told apart by time: the file is *stale* when the table's current version was
made current (the manifest entry's ``last_updated``, which every writer stamps) after the
file was last modified. Onboarding a stale file would silently revert the newer version,
so scans report it as ``stale``, sync leaves it, and a write of it is refused unless the
revert is asked for (``sync(revert=True)``).

``last_updated`` has whole seconds: a file modified in the same second as the version
was written counts as newer (a revert then needs no flag; it is named in the message).
"""

from __future__ import annotations

import datetime as dt

from datom_core._errors import DatomError, OnboardingError
from datom_core._project import _layout as L
from datom_core._project._model import ManifestEntry
from datom_core._project._parse import parse_manifest
from datom_core._project._tip import TreeReader

__all__ = ["became_current", "is_stale", "refuse_stale_revert", "stale_message"]


def became_current(entry: ManifestEntry) -> float | None:
    """When ``entry``'s current version was made current (POSIX seconds), if recorded."""
    text = entry.last_updated
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None  # written by someone else in another shape: not stale by this rule
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def is_stale(modified: float | None, entry: ManifestEntry) -> bool:
    """Whether a file last modified at ``modified`` predates ``entry``'s current version."""
    current_since = became_current(entry)
    return modified is not None and current_since is not None and modified < current_since


def stale_message(table: str, filename: str, earlier: str, entry: ManifestEntry) -> str:
    """What a scan says of a stale file: both versions, and the two ways out."""
    current = entry.current_version
    return (
        f"{filename} holds an earlier extract of {table!r} (version {earlier[:12]}) and was "
        f"last modified before the current version {current[:12]} was recorded "
        f"({entry.last_updated}): it was left behind, and sync leaves it. Delete it from the "
        f"inbox, or sync with revert=True (datom sync --revert) to make version "
        f"{earlier[:12]} current again in place of {current[:12]}"
    )


def refuse_stale_revert(tip: TreeReader, table: str, version: str, modified: float | None) -> None:
    """Refuse to make ``version`` (an earlier one) current from a file the tip's newer
    current version postdates; the scan that chose the file may have seen an older tip."""
    if modified is None:
        return
    raw = tip.read(L.MANIFEST)
    try:
        manifest = parse_manifest(raw, key=L.MANIFEST) if raw is not None else None
    except DatomError:
        return  # a damaged manifest is the write door's to report
    entry = manifest.artifacts.get(table) if manifest is not None else None
    if entry is None or entry.current_version == version or not is_stale(modified, entry):
        return
    raise OnboardingError(
        f"stale: {stale_message(table, 'the file', version, entry)}. Nothing was written"
    )
