"""Editing a set's member list: add, remove, repoint. Pure: the caller writes the result.

Each helper returns a :class:`SetEdit` with the new member list and what changed, so a
write can name the change in its commit message and a caller can show what moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from datom_core._errors import ConflictingMemberError, NotFoundError
from datom_core._sets._records import MemberMove, SetMember, SetVersion

__all__ = ["SetEdit", "add_members", "remove_members", "update_members"]


@dataclass(frozen=True)
class SetEdit:
    """The member list after an edit, and what the edit did."""

    members: tuple[SetMember, ...]
    added: tuple[SetMember, ...] = ()
    removed: tuple[SetMember, ...] = ()
    moved: tuple[MemberMove, ...] = ()
    skipped: tuple[SetMember, ...] = ()  # asked to repoint, but no current version found

    def message(self, name: str) -> str:
        """A commit message naming the change (``Update <name>: ...``)."""
        parts = [f"add {m.name}@{m.version[:8]}" for m in self.added]
        parts += [f"move {m.name} {m.before[:8]}->{m.after[:8]}" for m in self.moved]
        parts += [f"remove {m.name}@{m.version[:8]}" for m in self.removed]
        return f"Update {name}: " + ", ".join(parts) if parts else f"Update {name}"


def _members(x: SetVersion | Iterable[SetMember]) -> tuple[SetMember, ...]:
    return tuple(x.members) if isinstance(x, SetVersion) else tuple(x)


def _key(m: SetMember) -> tuple[str, str, str]:
    return (m.project, m.name, m.version)


def add_members(current: SetVersion | Iterable[SetMember], new: Iterable[SetMember]) -> SetEdit:
    """Add members; one already listed with the same labels is a no-op, with other labels
    a :class:`ConflictingMemberError` (use ``update`` via ``with_tags`` to relabel)."""
    members = list(_members(current))
    by_id = {_key(m): m for m in members}
    added = []
    for m in new:
        old = by_id.get(_key(m))
        if old is None:
            members.append(m)
            by_id[_key(m)] = m
            added.append(m)
        elif dict(old.tags) != dict(m.tags):
            raise ConflictingMemberError(
                f"member {m.name!r}@{m.version[:8]} is already in the set with other tags; "
                "remove it first, or relabel it with member.with_tags(...)"
            )
    return SetEdit(tuple(members), added=tuple(added))


def remove_members(
    current: SetVersion | Iterable[SetMember],
    names: Sequence[str] | str,
    *,
    version: str | None = None,
) -> SetEdit:
    """Drop the members called ``names`` (only at ``version``, a prefix, when given)."""
    wanted = {names} if isinstance(names, str) else set(names)
    members = _members(current)
    listed = {m.name for m in members}
    missing = sorted(wanted - listed)
    if missing:
        raise NotFoundError(
            f"the set has no member(s) {missing}; members: {', '.join(sorted(listed))}"
        )

    def drop(m: SetMember) -> bool:
        return m.name in wanted and (version is None or m.version.startswith(version))

    return SetEdit(
        tuple(m for m in members if not drop(m)),
        removed=tuple(m for m in members if drop(m)),
    )


def update_members(
    current: SetVersion | Iterable[SetMember],
    versions: Mapping[str, str],
    *,
    project: str,
    names: Sequence[str] | None = None,
) -> SetEdit:
    """Repoint the table members of ``project`` to ``versions`` (name -> version id).

    ``names`` limits the edit; a member with no entry in ``versions`` is left as it is and
    reported in ``skipped``. Returns what moved, so a caller can show it before writing.
    """
    members = _members(current)
    out, moved, skipped = [], [], []
    for m in members:
        eligible = m.project == project and m.kind == "table"
        if not eligible or (names is not None and m.name not in names):
            out.append(m)
            continue
        target = versions.get(m.name)
        if target is None:
            skipped.append(m)
            out.append(m)
        elif target != m.version:
            moved.append(MemberMove(m.project, m.name, m.kind, m.version, target))
            out.append(replace(m, version=target))
        else:
            out.append(m)
    return SetEdit(tuple(out), moved=tuple(moved), skipped=tuple(skipped))
