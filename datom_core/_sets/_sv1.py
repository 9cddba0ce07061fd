"""datom-sv1: the ``data_sha`` of a set payload, byte-compatible with R datom 0.2.0.

The hash is a function of the parsed-JSON data model, never of serialised bytes: every
collection is sorted by UTF-8 bytes and de-duplicated, every intermediate is a raw
32-byte SHA-256 digest (so concatenation needs no length prefixes), and no Unicode
normalisation is applied. The encoder refuses what it cannot encode (``null``, numbers,
booleans, nesting, unexpected fields) rather than guessing: a field it skipped would be
content outside identity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from datom_core._errors import (
    EmptySetError,
    InvalidLabelError,
    InvalidMemberError,
    InvalidSetError,
)

__all__ = [
    "HASH_ALGO",
    "hash_set",
    "sv1_map",
    "sv1_member",
    "sv1_set",
    "sv1_str",
    "sv1_strset",
]

#: The ``hash_algo`` recorded in a set's metadata.
HASH_ALGO = "datom-sv1"


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _utf8_key(text: str) -> bytes:
    return text.encode("utf-8")


def as_strings(value: Any, what: str) -> list[str]:
    """A tag value (one string, or an array of strings) as a list; anything else refused."""
    if value is None:
        raise InvalidLabelError(
            f"{what} is null, which is not encodable: spell absence by omitting the key"
        )
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        raise InvalidLabelError(
            f"{what} must be text or an array of text, not an object: a set payload has no "
            "nesting beyond members and their tag maps"
        )
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        bad = next((i for i, e in enumerate(value) if not isinstance(e, str)), None)
        if bad is not None:
            raise InvalidLabelError(
                f"{what} must be text or an array of text: element {bad + 1} is "
                f'{_kind(value[bad])}; write a number as a string, e.g. "500"'
            )
        return list(value)
    raise InvalidLabelError(
        f"{what} must be text or an array of text, not {_kind(value)}; a set payload is "
        'text-only: write a number or a flag as a string, e.g. "500"'
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def sv1_str(text: Any, what: str = "value") -> bytes:
    """``str(s) = h(0x01 || utf8(s))``."""
    values = as_strings(text, what)
    if len(values) != 1:
        raise InvalidLabelError(f"{what} must be a single string, not {len(values)} values")
    return _h(b"\x01" + values[0].encode("utf-8"))


def sv1_strset(values: Any, what: str = "value") -> bytes:
    """``strset(v) = h(0x02 || concat(str(e) for e in sort(unique(v))))``; a scalar is a 1-set."""
    ordered = sorted(set(as_strings(values, what)), key=_utf8_key)
    return _h(b"\x02" + b"".join(sv1_str(e, what) for e in ordered))


def sv1_map(mapping: Mapping[str, Any] | None, what: str = "map") -> bytes:
    """``map(m) = h(0x03 || concat(str(k) || strset(m[k]) for k in sort(keys(m))))``.

    An absent (``None``) or empty map is ``h(0x03)``.
    """
    if mapping is None:
        return _h(b"\x03")
    if not isinstance(mapping, Mapping):
        raise InvalidLabelError(f"{what} must be an object of labels, not {_kind(mapping)}")
    body = []
    for key in sorted(mapping, key=lambda k: _utf8_key(str(k))):
        if not isinstance(key, str) or key == "":
            raise InvalidLabelError(f"every key in {what} must be a non-empty name, not {key!r}")
        body.append(sv1_str(key, f"{what} key") + sv1_strset(mapping[key], f"{what}.{key}"))
    return _h(b"\x03" + b"".join(body))


def sv1_member(member: Mapping[str, Any], what: str = "member") -> bytes:
    """``member(x) = h(0x04 || map(x.id) || map(x.tags))``."""
    if not isinstance(member, Mapping):
        raise InvalidMemberError(f"{what} must be an object with an 'id', not {_kind(member)}")
    unknown = sorted(set(member) - {"id", "tags"})
    if unknown:
        raise InvalidMemberError(
            f"{what} carries unexpected field(s) {unknown}: a member is exactly an 'id' plus "
            "optional 'tags' (encoding around an extra field would leave it out of identity)"
        )
    if not member.get("id"):
        raise InvalidMemberError(f"{what} has no 'id'; declare members with member()")
    return _h(
        b"\x04" + sv1_map(member["id"], f"{what}.id") + sv1_map(member.get("tags"), f"{what}.tags")
    )


def sv1_set(payload: Mapping[str, Any]) -> bytes:
    """``set(p) = h(0x05 || map(p.tags) || concat(sort(unique(member(m) for m in p.members))))``."""
    if not isinstance(payload, Mapping):
        raise InvalidSetError(f"a set payload must be an object, not {_kind(payload)}")
    unknown = sorted(set(payload) - {"tags", "members"})
    if unknown:
        raise InvalidSetError(
            f"the set payload carries unexpected field(s) {unknown}: it is exactly 'members' "
            "plus optional set-level 'tags'"
        )
    members = payload.get("members")
    if not members:
        raise EmptySetError("a set must have at least one member: an empty set has no content")
    if isinstance(members, Mapping) or not isinstance(members, Sequence):
        raise InvalidSetError("'members' must be an array of member records")
    digests = {sv1_member(m, f"members[{i}]") for i, m in enumerate(members)}
    # Byte order and lowercase-hex order agree, so sorting the raw digests is R's hex sort.
    return _h(b"\x05" + sv1_map(payload.get("tags"), "tags") + b"".join(sorted(digests)))


def hash_set(payload: Mapping[str, Any]) -> str:
    """The datom-sv1 ``data_sha`` (64 lowercase hex) of a set payload given as parsed JSON.

    ``data_sha = hex(h(0x06 || utf8("datom-sv1") || set(payload)))``. Hashes what it is
    given (it does not drop empty tag keys); a write hashes the normalised payload.
    """
    return _h(b"\x06" + HASH_ALGO.encode("utf-8") + sv1_set(payload)).hex()
