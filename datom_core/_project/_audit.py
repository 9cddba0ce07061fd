"""The store checks of ``validate`` that compare it with what git recorded.

* Snapshots: every version's store snapshot against the document git recorded for that
  version. A snapshot certifies only the fields inside the version id; one whose
  ``parquet_sha`` (or any other recorded field) was edited still certifies, so it is
  compared with git's document itself. Git's document of a version is found through the
  store history's ``commit_sha`` (one blob read, checked against the version), else by
  walking the git history of ``metadata.json`` once for the table. A shallow clone (an
  ephemeral worker's) has no history to walk, and walking would fetch it all: a snapshot
  git's documents there cannot settle is compared with git's history entry of its version
  (``data_sha`` and ``parquet_sha``, what a swap of data would edit).
* Data: each pinned parquet exists; with ``verify="bytes"`` its SHA-256 is git's
  ``parquet_sha``; with ``"content"`` its decoded table also hashes to ``data_sha``.
* Temp objects: a local store's writer publishes through a temp file next to the target
  (``.datom-tmp-``); a killed writer leaves it behind. Only those older than a grace
  period are reported (and removed by the fix): a younger one may be a live upload.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from datom_core._errors import DatomError
from datom_core._project import _layout as L
from datom_core._project._context import ProjectContext
from datom_core._project._documents import load
from datom_core._project._model import HistoryEntry, TableMetadata
from datom_core._project._parquet import read_verified, without_footer_key
from datom_core._project._parse import parse_history, parse_metadata
from datom_core._project._records import Problem
from datom_core._project._verify import Verify, content_mismatch
from datom_core._store import LocalStore, Store
from datom_core._store._paths import TEMP_MARKER, TEMP_NAME

__all__ = [
    "RecordedDocuments",
    "check_data",
    "check_snapshots",
    "check_temp_objects",
    "restore_document",
]


class RecordedDocuments:
    """The documents git recorded for each version of one table, looked up lazily.

    A version may be recorded by several commits (re-recorded with other bytes by a later
    commit, say); its snapshot, written once at the first, may match any of them. The
    cheap lookups come first (the current document, the commit the store's history names);
    the walk of the whole git history of ``metadata.json`` only when they do not settle it.
    """

    def __init__(self, ctx: ProjectContext, table: str) -> None:
        self._ctx, self._table = ctx, table
        self._path = L.git_metadata(table)
        current = ctx.require_repo().read(self._path)
        self._current = (_version(current), current) if current is not None else None
        self._hints: dict[str, str] | None = None
        self._walked: dict[str, list[bytes]] | None = None
        self.shallow = ctx.require_repo().is_shallow()  # no walk: it would fetch the history

    def matches(self, version: str, stored: bytes) -> bool:
        """Whether ``stored`` is (semantically) a document git recorded for ``version``."""
        quick = [d for d in (self._from_current(version), self._from_hint(version)) if d]
        if any(_same(stored, d) for d in quick):
            return True
        return any(_same(stored, d) for d in self._all(version))

    def genuine(self, version: str) -> bytes | None:
        """The first document git recorded for ``version`` (what its snapshot holds)."""
        return self._from_hint(version) or next(iter(self._all(version)), None)

    def any(self, version: str) -> bytes | None:
        """A document git recorded for ``version`` (the cheapest to find)."""
        return self._from_current(version) or self.genuine(version)

    def _from_current(self, version: str) -> bytes | None:
        return self._current[1] if self._current and self._current[0] == version else None

    def _from_hint(self, version: str) -> bytes | None:
        if self._hints is None:
            self._hints = _commit_hints(self._ctx, self._table)
        commit = self._hints.get(version)
        if commit is None:
            return None
        try:
            # A commit this clone does not have (a shallow one's): the walk finds the document.
            raw = self._ctx.require_repo().read_at(commit, self._path, deepen=False)
        except DatomError:
            return None
        return raw if raw is not None and _version(raw) == version else None

    def _all(self, version: str) -> list[bytes]:
        if self.shallow:
            return []
        if self._walked is None:
            self._walked = {}
            repo = self._ctx.require_repo()
            for commit in reversed(repo.log(self._path)):  # oldest first
                raw = repo.read_at(commit.id, self._path)
                found = _version(raw) if raw is not None else None
                if raw is not None and found is not None:
                    self._walked.setdefault(found, []).append(raw)
        return self._walked.get(version, [])


def check_snapshots(
    ctx: ProjectContext,
    table: str,
    history: Sequence[HistoryEntry],
    recorded: RecordedDocuments,
    fix: bool,
) -> list[Problem]:
    problems = []
    for entry in history:
        key = L.store_snapshot(table, entry.version)
        stored = ctx.store.read_if_present(key)
        certifies = stored is not None and _version(stored) == entry.version
        if stored is not None and certifies and recorded.matches(entry.version, stored):
            continue
        genuine = recorded.genuine(entry.version)
        if stored is not None and certifies and genuine is None:
            if recorded.shallow and (edited := _edited_against(stored, entry)):
                problems.append(_forged_in_shallow(table, key, entry.version, edited))
            # else git cannot say; the snapshot certifies itself, which is all there is
            continue
        if stored is None:
            kind, detail = "missing_snapshot", f"snapshot of version {entry.version}"
        elif not certifies:
            kind = "altered_snapshot"
            detail = f"snapshot of version {entry.version} does not certify itself"
        else:
            kind = "forged_snapshot"
            detail = (
                f"snapshot of version {entry.version} differs from the document git recorded "
                f"(keys {', '.join(_changed_keys(stored, genuine)) or 'none: formatting'}): "
                "edited outside the version id, e.g. to vouch for swapped data"
            )
        fixed = False
        if fix and genuine is not None:
            ctx.store.write_bytes(key, genuine)
            fixed = True
        problems.append(Problem(kind, table, key, detail, fixable=genuine is not None, fixed=fixed))
    return problems


def _edited_against(stored: bytes, entry: HistoryEntry) -> list[str]:
    """The fields of a snapshot that differ from git's history entry of its version."""
    doc = _json(stored)
    recorded = {"data_sha": entry.data_sha, "parquet_sha": entry.parquet_sha}
    return [k for k, v in recorded.items() if v is not None and doc.get(k) != v]


def _forged_in_shallow(table: str, key: str, version: str, edited: list[str]) -> Problem:
    detail = (
        f"snapshot of version {version} differs from git's history entry of it (keys "
        f"{', '.join(edited)}): edited outside the version id, e.g. to vouch for swapped "
        "data; this shallow clone lacks the document to restore it: validate(fix=True) in "
        "a whole clone (one cloned without shallow=True) restores it"
    )
    return Problem("forged_snapshot", table, key, detail, fixable=False)


def check_data(
    ctx: ProjectContext,
    table: str,
    history: Sequence[HistoryEntry],
    recorded: RecordedDocuments,
    verify: Verify | None,
) -> list[Problem]:
    problems, checked = [], set()
    for entry in history:
        key = L.store_parquet(table, entry.data_sha)
        if key in checked:
            continue
        checked.add(key)
        if not ctx.store.exists(key):
            detail = f"version {entry.version} pins it"
            problems.append(Problem("missing_parquet", table, key, detail, fixable=False))
        elif verify == "bytes" and entry.parquet_sha:
            actual = ctx.store.sha256(key)
            if actual != entry.parquet_sha:
                detail = f"expected {entry.parquet_sha}, actual {actual}"
                problems.append(Problem("parquet_mismatch", table, key, detail, fixable=False))
        elif verify == "content":
            problems += _check_content(ctx, table, entry, recorded.any(entry.version), key)
    return problems


def _check_content(
    ctx: ProjectContext, table: str, entry: HistoryEntry, raw: bytes | None, key: str
) -> list[Problem]:
    try:
        data = without_footer_key(read_verified(ctx.store, key, entry.parquet_sha))
    except DatomError as e:
        return [Problem("parquet_mismatch", table, key, str(e), fixable=False)]
    metadata = _metadata(raw)
    if metadata is None or metadata.data_sha != entry.data_sha:
        return []  # git cannot say who wrote it: the bytes check above is all there is
    why = content_mismatch(table, metadata, key, data)
    return [Problem("content_mismatch", table, key, why, fixable=False)] if why else []


def check_temp_objects(ctx: ProjectContext, grace_s: float, fix: bool) -> list[Problem]:
    """Temp objects older than ``grace_s`` seconds in a local store (the only kind of store
    whose writes go through temp objects)."""
    problems = []
    for path, key in _temp_objects(ctx.store):
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            continue  # its writer just published or removed it
        if age < grace_s:
            continue
        if fix:
            path.unlink(missing_ok=True)
        table = key.split("/", 1)[0] if "/" in key else None
        detail = f"left by an interrupted write {age / 3600:.1f} h ago; never part of a version"
        problems.append(Problem("temp_object", table, key, detail, fixable=True, fixed=fix))
    return problems


def _temp_objects(store: Store) -> Iterator[tuple[Path, str]]:
    if not isinstance(store, LocalStore):
        return
    base = Path(store.root) / store.prefix if store.prefix else Path(store.root)
    root = base / "datom"
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if TEMP_MARKER in name and TEMP_NAME.match(name):
                path = Path(directory) / name
                yield path, path.relative_to(root).as_posix()


def restore_document(
    ctx: ProjectContext, table: str, path: str, agrees: Callable[[bytes], bool], fix: bool
) -> tuple[Problem, bytes | None]:
    """A table document missing from git, or of the wrong shape there.

    Git can restore it when the newest readable copy it recorded agrees with the table's
    other document (``agrees``); the fix commits that copy back. Returns the finding and
    the document to use (None: none restorable, or not fixing; the store keeps its copy).
    """
    repo = ctx.require_repo()
    restorable = None
    for commit in repo.log(path):  # newest first: the damage itself comes first
        raw = repo.read_at(commit.id, path)
        if raw is None or _readable(raw, path) is None:
            continue
        restorable = raw if agrees(raw) else None
        break
    current = repo.read(path)
    damage = (
        "is missing from git" if current is None else f"is damaged in git ({_why(current, path)})"
    )
    detail = f"{path} {damage}" + (
        "; git's last good copy can be restored"
        if restorable
        else "; git holds no copy that agrees with the table's other document"
    )
    fixed = fix and restorable is not None
    if fixed and restorable is not None:
        repo.commit({path: restorable}, f"Restore {path} (datom validate --fix)")
        repo.push()
    problem = Problem(
        "corrupt_git_document", table, path, detail, fixable=restorable is not None, fixed=fixed
    )
    return problem, restorable if fixed else None


def _why(raw: bytes, path: str) -> str:
    try:
        _readable(raw, path, strict=True)
    except DatomError as e:
        return str(e)
    return "it disagrees with the table's other document"


def _readable(raw: bytes, path: str, *, strict: bool = False) -> object | None:
    try:
        if path.endswith("version_history.json"):
            return parse_history(raw, key=path)
        return parse_metadata(raw, key=path)
    except DatomError:
        if strict:
            raise
        return None


def _commit_hints(ctx: ProjectContext, table: str) -> dict[str, str]:
    raw = ctx.store.read_if_present(L.store_history(table))
    try:
        entries = parse_history(raw, key=L.store_history(table)) if raw is not None else ()
    except DatomError:
        return {}
    return {h.version: h.commit_sha for h in entries if h.commit_sha}


def _same(stored: bytes, genuine: bytes) -> bool:
    return stored == genuine or _json(stored) == _json(genuine)


def _changed_keys(stored: bytes, genuine: bytes | None) -> list[str]:
    a, b = _json(stored), _json(genuine) if genuine is not None else None
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return []
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _json(raw: bytes) -> Any:
    try:
        return load(raw, key="snapshot")
    except DatomError:
        return None


def _metadata(raw: bytes | None) -> TableMetadata | None:
    try:
        return parse_metadata(raw, key="snapshot") if raw is not None else None
    except DatomError:
        return None


def _version(raw: bytes) -> str | None:
    metadata = _metadata(raw)
    return metadata.version if metadata is not None else None
