"""Typed records of sets: a member, a set version, a write's result, a diff of two versions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from datom_core._errors import AmbiguousVersionError, DatomError, NotFoundError
from datom_core._sets._payload import normalise_tags

__all__ = [
    "MemberMove",
    "Opener",
    "SetDiff",
    "SetMember",
    "SetVersion",
    "SetWriteResult",
    "diff_sets",
]

#: Opens a store-only reader of a project: ``opener(store, project_name)``.
Opener = Callable[[Any, str], Any]
#: Reads a set version from a store: ``set_reader(store, project, name, version)``.
SetReader = Callable[[Any, str, str, str], "SetVersion"]


@dataclass(frozen=True)
class SetMember:
    """A pointer at one exact version of one artifact, with its labels.

    ``fetch()`` reads the pinned data (a table) or the pinned set version (a set: reading
    does not recurse further) through a store-only reader of the member's project.
    """

    project: str
    name: str
    kind: Literal["table", "set"]
    version: str
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    store: Any = field(default=None, compare=False, repr=False)
    opener: Opener | None = field(default=None, compare=False, repr=False)
    set_reader: SetReader | None = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> dict[str, str]:
        """The member's id as the payload records it: kind, name, project, version."""
        return {
            "kind": self.kind,
            "name": self.name,
            "project": self.project,
            "version": self.version,
        }

    def to_json(self) -> dict[str, Any]:
        """The member's payload record (``id`` and, when there are labels, ``tags``)."""
        record: dict[str, Any] = {"id": self.id}
        if self.tags:
            record["tags"] = {k: list(v) for k, v in self.tags.items()}
        return record

    def with_tags(self, tags: Mapping[str, Any] | None) -> SetMember:
        """The same pointer with other labels (normalised, refused as a write refuses them)."""
        clean = normalise_tags(tags, f"tags of {self.name!r}")
        return SetMember(
            self.project, self.name, self.kind, self.version,
            {k: tuple(v) for k, v in clean.items()}, self.store, self.opener, self.set_reader,
        )  # fmt: skip

    def fetch(self, *, store: Any = None, columns: Any = None, as_: str = "pandas") -> Any:
        """The pinned data (a table, as pandas / ``"arrow"`` / ``"polars"``) or set version.

        ``store``: the store of the member's project when it is not the set's own store.
        """
        where = store if store is not None else self.store
        if where is None:
            raise DatomError(
                f"member {self.name!r} belongs to project {self.project!r}, whose store this set "
                "does not record: pass store= (that project's store) to member.fetch(), or "
                "record it in the product repo (write the set with members declared in that "
                f"project's store: datom set write --source {self.project}=STORE_URL)"
            )
        if self.opener is None:
            raise DatomError(
                f"member {self.name!r} was declared without a reader; read it through "
                f"connect(store=..., project_name={self.project!r})"
            )
        if self.kind == "set":
            if self.set_reader is None:
                raise DatomError(f"member {self.name!r} is a set and no set reader was given")
            return self.set_reader(where, self.project, self.name, self.version)
        reader = self.opener(where, self.project)
        return reader.read(self.name, version=self.version, columns=columns, as_=as_)


@dataclass(frozen=True)
class SetVersion:
    """One version of a set as read back: its id, content hash, labels and members."""

    name: str
    project: str
    version: str
    data_sha: str
    document_sha: str
    tags: Mapping[str, tuple[str, ...]]
    members: tuple[SetMember, ...]

    def member(self, name: str, version: str | None = None) -> SetMember:
        """The member called ``name`` (at ``version``, a prefix, when it is listed twice)."""
        hits = [
            m for m in self.members
            if m.name == name and (version is None or m.version.startswith(version))
        ]  # fmt: skip
        if not hits:
            listed = ", ".join(sorted({m.name for m in self.members}))
            raise NotFoundError(f"set {self.name!r} has no member {name!r}; members: {listed}")
        if len(hits) > 1:
            raise AmbiguousVersionError(
                f"set {self.name!r} lists {name!r} at {len(hits)} versions; give version=",
                tuple(m.version for m in hits),
            )
        return hits[0]

    def tag_json(self) -> dict[str, list[str]]:
        """The set-level labels as JSON (each key to a list of values)."""
        return {k: list(v) for k, v in self.tags.items()}

    def to_json(self) -> dict[str, Any]:
        """Everything a ``--json`` listing shows: ids, labels and the members' records."""
        return {
            "name": self.name,
            "project": self.project,
            "version": self.version,
            "data_sha": self.data_sha,
            "document_sha": self.document_sha,
            "tags": self.tag_json(),
            "members": [m.to_json() for m in self.members],
        }


@dataclass(frozen=True)
class SetWriteResult:
    """What a set write did: ``change`` is ``"none"`` (identical payload) or ``"full"``."""

    name: str
    change: Literal["none", "full"]
    version: str
    data_sha: str
    document_sha: str
    member_count: int
    commit: str | None = None
    uploaded: bool = False


@dataclass(frozen=True)
class MemberMove:
    """A member that points at another version of the same artifact."""

    project: str
    name: str
    kind: str
    before: str
    after: str


@dataclass(frozen=True)
class SetDiff:
    """What changed between two set versions (members keyed by their full ``id``)."""

    before: str | None
    after: str | None
    added: tuple[SetMember, ...]
    removed: tuple[SetMember, ...]
    moved: tuple[MemberMove, ...]
    retagged: tuple[tuple[SetMember, SetMember], ...]
    tags_before: Mapping[str, tuple[str, ...]]
    tags_after: Mapping[str, tuple[str, ...]]

    @property
    def changed(self) -> bool:
        """Whether anything differs: members added, removed, moved or retagged, or the labels."""
        return bool(
            self.added or self.removed or self.moved or self.retagged
            or dict(self.tags_before) != dict(self.tags_after)
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The diff as JSON (members as their payload records)."""
        return {
            "before": self.before,
            "after": self.after,
            "added": [m.to_json() for m in self.added],
            "removed": [m.to_json() for m in self.removed],
            "moved": [
                {
                    "project": m.project,
                    "name": m.name,
                    "kind": m.kind,
                    "before": m.before,
                    "after": m.after,
                }
                for m in self.moved
            ],  # fmt: skip
            "retagged": [{"before": a.to_json(), "after": b.to_json()} for a, b in self.retagged],
            "tags_before": {k: list(v) for k, v in self.tags_before.items()},
            "tags_after": {k: list(v) for k, v in self.tags_after.items()},
        }

    def to_markdown(self) -> str:
        """A short human-readable summary (one line per change)."""
        lines = [f"set {self.before or '-'} -> {self.after or '-'}"]
        lines += [f"- moved {m.name}: {m.before[:8]} -> {m.after[:8]}" for m in self.moved]
        lines += [f"- added {m.name}@{m.version[:8]}" for m in self.added]
        lines += [f"- removed {m.name}@{m.version[:8]}" for m in self.removed]
        lines += [f"- retagged {a.name}@{a.version[:8]}" for a, _ in self.retagged]
        if dict(self.tags_before) != dict(self.tags_after):
            lines.append("- set tags changed")
        return "\n".join(lines)


def _members_of(x: SetVersion | Any) -> tuple[SetMember, ...]:
    return tuple(x.members) if isinstance(x, SetVersion) else tuple(x)


def diff_sets(a: SetVersion | Any, b: SetVersion | Any) -> SetDiff:
    """Compare two set versions (or member lists): ``a`` before, ``b`` after.

    A member whose ``project`` and ``name`` appear exactly once on each side at different
    versions is reported as moved; other id changes are additions and removals.
    """
    before, after = _members_of(a), _members_of(b)
    ids_a = {(m.project, m.name, m.version): m for m in before}
    ids_b = {(m.project, m.name, m.version): m for m in after}
    gone = [m for k, m in ids_a.items() if k not in ids_b]
    new = [m for k, m in ids_b.items() if k not in ids_a]
    retagged = tuple(
        (ids_a[k], ids_b[k]) for k in ids_a if k in ids_b and dict(ids_a[k].tags) != dict(ids_b[k].tags)
    )  # fmt: skip

    def count(ms: tuple[SetMember, ...], m: SetMember) -> int:
        return sum(1 for x in ms if (x.project, x.name) == (m.project, m.name))

    moved = []
    for old in list(gone):
        match = [n for n in new if (n.project, n.name) == (old.project, old.name)]
        if len(match) == 1 and count(before, old) == 1 and count(after, old) == 1:
            moved.append(MemberMove(old.project, old.name, old.kind, old.version, match[0].version))
            gone.remove(old)
            new.remove(match[0])
    return SetDiff(
        before=getattr(a, "version", None),
        after=getattr(b, "version", None),
        added=tuple(new),
        removed=tuple(gone),
        moved=tuple(moved),
        retagged=retagged,
        tags_before=dict(getattr(a, "tags", {}) or {}),
        tags_after=dict(getattr(b, "tags", {}) or {}),
    )
