"""Normalising and refusing a set payload (SETS.md), before anything is hashed or written.

Tidy, then validate, then order -- in that order. Tidying clears the spellings nobody can
care about (tag values out of order or repeated, a single label as a one-element array, a
key with no values), so validation only reports genuine problems; ordering needs the
member digests, which only a validated member has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datom_core._errors import (
    ConflictingMemberError,
    EmptySetError,
    InvalidLabelError,
    InvalidMemberError,
    SelfReferenceError,
)
from datom_core._sets._sv1 import as_strings, sv1_member

__all__ = ["ARTIFACT_KINDS", "ID_FIELDS", "normalise_payload", "normalise_tags", "record_of"]

ID_FIELDS = ("project", "name", "kind", "version")
ARTIFACT_KINDS = ("table", "set")

_REMEDY = "declare members with member() so each carries a validated id"


def _bytes(text: str) -> bytes:
    return text.encode("utf-8")


def normalise_tags(tags: Any, what: str = "tags") -> dict[str, list[str]]:
    """A tag map tidied (keys and values sorted by bytes, values de-duplicated, keys with
    no values dropped) and validated (text only, no blank key or value)."""
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise InvalidLabelError(
            f'{what} must be an object of labels, e.g. {{"type": "output"}}, not '
            f"{type(tags).__name__}"
        )
    out: dict[str, list[str]] = {}
    for key in sorted(tags, key=lambda k: _bytes(str(k))):
        if not isinstance(key, str) or key == "":
            raise InvalidLabelError(
                f"every key in {what} must be a non-empty name, not {key!r}: a blank key has "
                "no meaning as a tag"
            )
        value = tags[key]
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 0:
            continue  # "no labels" is spelled by omitting the key
        values = as_strings(value, f"{what}.{key}")
        if "" in values:
            raise InvalidLabelError(
                f"{what}.{key} contains an empty label: to mean no value here, omit the key"
            )
        out[key] = sorted(set(values), key=_bytes)
    return out


def record_of(member: Any) -> Any:
    """A member as its payload record: typed members give their ``to_json()``."""
    to_json = getattr(member, "to_json", None)
    return to_json() if callable(to_json) else member


def _member(entry: Any, at: str) -> dict[str, Any]:
    entry = record_of(entry)
    if not isinstance(entry, Mapping):
        raise InvalidMemberError(
            f"{at} must be a member record with an 'id', not {type(entry).__name__}; {_REMEDY}"
        )
    unknown = sorted(set(entry) - {"id", "tags"})
    if unknown:
        raise InvalidMemberError(
            f"{at} carries unexpected field(s) {unknown}: a member is exactly an 'id' plus "
            f"optional 'tags' (user metadata belongs in tags); {_REMEDY}"
        )
    ident = entry.get("id")
    if not isinstance(ident, Mapping) or not ident:
        raise InvalidMemberError(f"{at} has no 'id' object; {_REMEDY}")
    missing = [f for f in ID_FIELDS if f not in ident]
    extra = sorted(set(ident) - set(ID_FIELDS))
    if missing or extra:
        raise InvalidMemberError(
            f"{at}: an id is exactly {list(ID_FIELDS)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {extra}" if extra else "")
            + f"; {_REMEDY}"
        )
    for field in ID_FIELDS:
        value = ident[field]
        if not isinstance(value, str) or value == "":
            raise InvalidMemberError(
                f"{at}: id.{field} must be a single non-empty string, not {value!r}; {_REMEDY}"
            )
    if ident["kind"] not in ARTIFACT_KINDS:
        raise InvalidMemberError(
            f"{at} declares kind {ident['kind']!r}: a member points at one of "
            f"{list(ARTIFACT_KINDS)}"
        )
    record: dict[str, Any] = {"id": {k: ident[k] for k in sorted(ID_FIELDS, key=_bytes)}}
    tags = normalise_tags(entry.get("tags"), f"{at}.tags")
    if tags:
        record["tags"] = tags
    return record


def _ordered(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[bytes] = set()
    unique = []
    for i, m in enumerate(members):
        digest = sv1_member(m, f"members[{i}]")
        if digest not in seen:
            seen.add(digest)
            unique.append(m)
    ids = [m["id"] for m in unique]
    order = sorted(
        range(len(unique)),
        key=lambda i: (
            _bytes(ids[i]["project"]),
            _bytes(ids[i]["name"]),
            _bytes(ids[i]["version"]),
        ),
    )
    return [unique[i] for i in order]


def _check_whole(members: list[dict[str, Any]], name: str, project: str) -> None:
    if not members:
        raise EmptySetError(
            f"set {name!r} must have at least one member: an empty set has no content to "
            "identify, so it cannot be cited. Declare members with member() and write the set "
            "once its first output exists."
        )
    seen: set[tuple[str, str, str]] = set()
    for m in members:
        key = (m["id"]["project"], m["id"]["name"], m["id"]["version"])
        if key in seen:
            raise ConflictingMemberError(
                f"set {name!r}: member {key[1]!r} ({key[0]}@{key[2][:8]}) is listed twice with "
                "different tags. One version of one artifact is one member with one set of "
                "labels; to put it in two categories give one key several values, e.g. "
                '{"type": ["input", "output"]}.'
            )
        seen.add(key)
    for m in members:
        if m["id"]["project"] == project and m["id"]["name"] == name:
            raise SelfReferenceError(
                f"set {name!r} in project {project!r} lists itself as a member; remove that "
                "member (a set cannot contain itself at any version)"
            )


def normalise_payload(
    members: Sequence[Any], tags: Mapping[str, Any] | None, *, name: str, project: str
) -> dict[str, Any]:
    """The canonical payload of set ``name`` in ``project``, or the refusal SETS.md names.

    Members may be records (``{"id": ..., "tags": ...}``) or typed members; the result has
    set-level ``tags`` only when there are some, then ``members`` de-duplicated and sorted
    by ``project``, ``name``, ``version`` (UTF-8 bytes).
    """
    set_tags = normalise_tags(tags, "tags")
    if isinstance(members, Mapping | str) or not isinstance(members, Sequence):
        raise InvalidMemberError(
            f"set {name!r}: members must be a list of member records, not "
            f"{type(members).__name__}; {_REMEDY}"
        )
    records = _ordered([_member(m, f"members[{i}]") for i, m in enumerate(members)])
    _check_whole(records, name, project)
    payload: dict[str, Any] = {}
    if set_tags:
        payload["tags"] = set_tags
    payload["members"] = records
    return payload
