"""The set payload's bytes, exactly as R writes them, and their ``document_sha``.

R writes ``set.json`` with ``jsonlite::write_json(payload, auto_unbox = TRUE, pretty =
TRUE)``, which appends ``\\n``. ``document_sha`` is the SHA-256 of those bytes and R
compares them on revert and repair, so the layout is reproduced byte for byte:

* an object: ``{``, then per key ``\\n`` + indent+2 spaces + ``"key": value`` joined by
  ``,``, then ``\\n`` + indent + ``}``; an empty one is ``{}``;
* a text value with one label is unboxed to a string; with several, inline
  ``["a", "b"]``;
* the member list (an R list, never unboxed): ``[``, per member ``\\n`` + indent+2 +
  member joined by ``,``, then ``\\n`` + indent + ``]``.

Strings are escaped as jsonlite's ``escape_chars`` does: ``\\"``, ``\\\\``, ``\\n``,
``\\r``, ``\\t``, ``\\b``, ``\\f``, other control characters as ``\\u00xx``, and ``/``
only after ``<`` (``</`` becomes ``<\\/``); everything else is written as UTF-8.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from datom_core._errors import MalformedSetError
from datom_core._identity._canonical import jsonlite_string

__all__ = ["document_sha", "jsonlite_string", "parse_payload", "serialise_payload"]


def _object(items: Sequence[tuple[str, str]], indent: int) -> str:
    if not items:
        return "{}"
    pad = " " * (indent + 2)
    body = ",".join(f"\n{pad}{jsonlite_string(k)}: {v}" for k, v in items)
    return "{" + body + "\n" + " " * indent + "}"


def _records(elements: Sequence[str], indent: int) -> str:
    if not elements:
        return "[]"
    pad = " " * (indent + 2)
    return "[" + ",".join(f"\n{pad}{e}" for e in elements) + "\n" + " " * indent + "]"


def _text(values: Sequence[str] | str) -> str:
    # auto_unbox: one label is a scalar; a character vector stays inline.
    if isinstance(values, str):
        return jsonlite_string(values)
    if len(values) == 1:
        return jsonlite_string(values[0])
    return "[" + ", ".join(jsonlite_string(v) for v in values) + "]"


def _tag_map(tags: Mapping[str, Any], indent: int) -> str:
    return _object([(k, _text(v)) for k, v in tags.items()], indent)


def _member(member: Mapping[str, Any], indent: int) -> str:
    items = [("id", _object([(k, _text(v)) for k, v in member["id"].items()], indent + 2))]
    if member.get("tags"):
        items.append(("tags", _tag_map(member["tags"], indent + 2)))
    return _object(items, indent)


def serialise_payload(payload: Mapping[str, Any]) -> bytes:
    """The ``set.json`` bytes R writes for a normalised payload (keys in payload order)."""
    items: list[tuple[str, str]] = []
    if payload.get("tags"):
        items.append(("tags", _tag_map(payload["tags"], 2)))
    members = [_member(m, 4) for m in payload["members"]]
    items.append(("members", _records(members, 2)))
    return (_object(items, 0) + "\n").encode("utf-8")


def document_sha(data: bytes) -> str:
    """SHA-256 (lowercase hex) of a stored payload's exact bytes."""
    return hashlib.sha256(data).hexdigest()


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise MalformedSetError(f"the payload repeats the key {key!r} in one object")
        seen[key] = value
    return seen


def parse_payload(data: bytes, *, key: str) -> Any:
    """Parse stored payload bytes (already verified) strictly: no duplicate keys."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except MalformedSetError as e:
        raise MalformedSetError(f"{key}: {e}", key=key) from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MalformedSetError(
            f"{key} is not valid JSON ({e}); run validate() on the project that owns this set",
            key=key,
        ) from e
