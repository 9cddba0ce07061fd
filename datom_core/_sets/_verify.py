"""Checking that a set's members still resolve and verify, from the stores alone.

For each member: its snapshot exists and certifies itself; a table's stored parquet
matches its recorded ``parquet_sha`` (bytes, cheap: the store's hash of the object); with
``content=True`` the data is read back and its datom-cv1 ``data_sha`` recomputed; a set
member's payload matches its ``document_sha`` (one level, reading does not recurse).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from datom_core._errors import DatomError
from datom_core._identity import hash_table
from datom_core._sets._read import read_set, snapshot_of
from datom_core._sets._records import Opener, SetMember, SetVersion

__all__ = ["MemberCheck", "SetCheck", "verify_set"]

_READERS = 8


@dataclass(frozen=True)
class MemberCheck:
    """One member's verdict: ``ok``, ``failed`` (``problem`` says why) or ``unchecked``
    (no store was given for its project)."""

    member: SetMember
    status: Literal["ok", "failed", "unchecked"]
    problem: str = ""


@dataclass(frozen=True)
class SetCheck:
    """Every member's verdict for one set version."""

    name: str
    version: str
    members: tuple[MemberCheck, ...]

    @property
    def ok(self) -> bool:
        """Whether every member checked out."""
        return all(m.status == "ok" for m in self.members)

    @property
    def failed(self) -> tuple[MemberCheck, ...]:
        """The members whose check failed."""
        return tuple(m for m in self.members if m.status == "failed")


def _check(m: SetMember, store: Any, content: bool, opener: Opener | None) -> MemberCheck:
    try:
        snap = snapshot_of(store, m.project, m.name, m.version)
        if m.kind == "set":
            read_set(store, m.project, m.name, m.version)
            return MemberCheck(m, "ok")
        parquet_sha, data_sha = snap.get("parquet_sha"), snap.get("data_sha")
        key = f"{m.name}/{data_sha}.parquet"
        if not store.exists(key):
            return MemberCheck(m, "failed", f"{key} is missing from {store.url}")
        if parquet_sha and store.sha256(key) != parquet_sha:
            return MemberCheck(m, "failed", f"{key} does not match its recorded parquet_sha")
        if content:
            if opener is None:
                raise DatomError("content=True needs an opener to read the data")
            data = opener(store, m.project).read(m.name, version=m.version, as_="arrow")
            if hash_table(data).data_sha != data_sha:
                return MemberCheck(m, "failed", f"{m.name}@{m.version[:8]}: data_sha differs")
        return MemberCheck(m, "ok")
    except DatomError as e:
        return MemberCheck(m, "failed", str(e))


def verify_set(
    x: SetVersion,
    stores: Mapping[str, Any] | None = None,
    *,
    content: bool = False,
    opener: Opener | None = None,
) -> SetCheck:
    """Check every member of ``x``. ``stores``: project -> store for members of other
    projects (else the store each member came with: the set's own store, or the one its
    product repo records); a member whose store is not known is reported ``unchecked``."""
    given = dict(stores or {})

    def one(m: SetMember) -> MemberCheck:
        store = given.get(m.project, m.store)
        if store is None:
            return MemberCheck(m, "unchecked", f"no store given for project {m.project!r}")
        return _check(m, store, content, opener or m.opener)

    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        checks = tuple(pool.map(one, x.members))
    return SetCheck(x.name, x.version, checks)
