"""The documents' one text form, fast: exactly ``json.dumps(doc, indent=2, ensure_ascii=False)``.

The standard library falls back to its pure-Python encoder whenever ``indent`` is given,
and a 3,000-table manifest is re-serialised on every write. This encoder produces the same
text with the C string encoder for every scalar and one ``join`` per container (about
three times faster). Anything it does not recognise exactly (a subclass, a non-string
key, a cycle) is handed to :func:`json.dumps`, so the bytes never depend on which path
ran.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

__all__ = ["pretty_json", "pretty_member", "pretty_object"]

_INDENT = "  "


class _Unusual(Exception):
    """A value whose text only json.dumps may decide."""


def pretty_json(doc: Any) -> str:
    """``json.dumps(doc, indent=2, ensure_ascii=False)``, byte for byte."""
    try:
        return _value(doc, 0)
    except (_Unusual, RecursionError):
        return json.dumps(doc, indent=2, ensure_ascii=False)


def pretty_member(key: Any, value: Any, depth: int) -> str | None:
    """``"key": value`` as :func:`pretty_json` prints a member of an object ``depth`` levels
    deep; None when only :func:`json.dumps` may decide (print the whole document then)."""
    if type(key) is not str:
        return None
    try:
        return encode_basestring(key) + ": " + _value(value, depth + 1)
    except (_Unusual, RecursionError):
        return None


def pretty_object(members: list[str], depth: int) -> str:
    """An object ``depth`` levels deep from its members' texts (see :func:`pretty_member`)."""
    if not members:
        return "{}"
    inner = "\n" + _INDENT * (depth + 1)
    return "{" + inner + ("," + inner).join(members) + "\n" + _INDENT * depth + "}"


def _float(v: float) -> str:
    if v != v:
        return "NaN"
    if v == float("inf"):
        return "Infinity"
    if v == float("-inf"):
        return "-Infinity"
    return float.__repr__(v)


def _scalar(v: Any) -> str | None:
    """The text of a scalar, None for a container (json's own order of tests)."""
    t = type(v)
    if t is str:
        return encode_basestring(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if t is int:
        return int.__repr__(v)
    if t is float:
        return _float(v)
    if t is dict or t is list or t is tuple:
        return None
    raise _Unusual


def _value(v: Any, depth: int) -> str:
    text = _scalar(v)
    if text is not None:
        return text
    if type(v) is dict:
        return _object(v, depth)
    return _array(v, depth)


def _array(items: list[Any] | tuple[Any, ...], depth: int) -> str:
    if not items:
        return "[]"
    inner = "\n" + _INDENT * (depth + 1)
    body = ("," + inner).join([_value(v, depth + 1) for v in items])
    return "[" + inner + body + "\n" + _INDENT * depth + "]"


def _object(d: dict[Any, Any], depth: int) -> str:
    if not d:
        return "{}"
    inner = "\n" + _INDENT * (depth + 1)
    parts = []
    for k, v in d.items():
        if type(k) is not str:
            raise _Unusual
        t = type(v)  # strings and integers inline: most of a manifest
        if t is str:
            text = encode_basestring(v)
        elif t is int:
            text = int.__repr__(v)
        else:
            text = _value(v, depth + 1)
        parts.append(encode_basestring(k) + ": " + text)
    return "{" + inner + ("," + inner).join(parts) + "\n" + _INDENT * depth + "}"
