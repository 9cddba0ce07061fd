"""Canonical JSON and ``metadata_sha``, byte-compatible with R's jsonlite.

The text hashed for a version is what ``jsonlite::toJSON(x, auto_unbox = TRUE)`` writes for
the metadata after R has read it back with ``read_json(simplifyVector = TRUE)``. R cannot
tell a length-one vector from a scalar and prints numbers its own way, so both of those
are reproduced exactly here (see IDENTITY.md, "metadata_sha").
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

from datom_core._errors import InvalidArgumentError, UnsupportedInputError

__all__ = ["IDENTITY_KEYS", "KNOWN_KEYS", "VOLATILE_KEYS", "canonical_json", "metadata_sha"]

#: The top-level keys that make a version (FORMAT2.md §1): nothing else is hashed, so a
#: field a newer writer adds can never move a version.
IDENTITY_KEYS = frozenset(
    {
        "colnames",
        "custom",
        "data_sha",
        "hash_algo",
        "kind",
        "ncol",
        "nrow",
        "original_file_sha",
        "parents",
        "source_lineage",
        "table_type",
    }
)

#: Every top-level key a metadata document may hold (the write door refuses others).
KNOWN_KEYS = IDENTITY_KEYS | frozenset(
    {
        "column_hashes",
        "created_at",
        "datom_version",
        "document_sha",
        "original_format",
        "parquet_sha",
        "project",
        "schema_version",
        "size_bytes",
    }
)

#: Known keys that describe a stored copy or a write, not the version itself.
VOLATILE_KEYS = KNOWN_KEYS - IDENTITY_KEYS

_R_INT_MAX = 2147483647
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
}


def canonical_json(metadata: Mapping[str, Any]) -> str:
    """Return the exact text whose SHA-256 is the version (``metadata_sha``).

    Only the identity allowlist (:data:`IDENTITY_KEYS`) is kept; its keys are sorted by
    their UTF-8 bytes; nested objects keep their order.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidArgumentError(
            f"metadata must be a JSON object (a dict), not {type(metadata).__name__}"
        )
    semantic = {k: v for k, v in metadata.items() if k in IDENTITY_KEYS}
    keys = sorted(semantic, key=lambda k: k.encode("utf-8"))
    return _object(keys, semantic)


def metadata_sha(metadata: Mapping[str, Any]) -> str:
    """SHA-256 (lowercase hex) of :func:`canonical_json` — the version id of a table version."""
    return hashlib.sha256(canonical_json(metadata).encode("utf-8")).hexdigest()


def _object(keys: list[str], obj: Mapping[str, Any]) -> str:
    members = []
    for key in keys:
        value = obj[key]
        # jsonlite reads a null member as an empty list and writes it back as {}.
        members.append(jsonlite_string(key) + ":" + ("{}" if value is None else _value(value)))
    return "{" + ",".join(members) + "}"


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return _object(list(value), value)
    if isinstance(value, list | tuple):
        if len(value) == 1 and not isinstance(value[0], Mapping | list | tuple):
            return _value(value[0])  # R: a length-one vector is a scalar
        return "[" + ",".join(_value(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -_R_INT_MAX <= value <= _R_INT_MAX:
            return str(value)
        return _double(float(value))
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, str):
        return jsonlite_string(value)
    raise UnsupportedInputError(
        f"metadata value {value!r} of type {type(value).__name__} is not JSON: "
        "use strings, numbers, booleans, lists and dicts"
    )


# What jsonlite_string changes: a quote, a backslash, a control character, a "/" after "<".
_TO_ESCAPE = re.compile(r'["\\\x00-\x1f]|</')


def jsonlite_string(text: str) -> str:
    """A JSON string literal exactly as R's jsonlite writes it.

    jsonlite escapes ``</`` as ``<\\/`` (so JSON can sit inside an HTML script tag); R
    hashes those bytes, so the escape is identity. Most strings (names, ids, times) need
    no escape and are quoted as they are.
    """
    if _TO_ESCAPE.search(text) is None:
        return '"' + text + '"'
    return _escaped(text)


def _escaped(text: str) -> str:
    out = []
    previous = ""
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == "/" and previous == "<":
            out.append("\\/")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
        previous = ch
    return '"' + "".join(out) + '"'


def _double(v: float) -> str:
    if math.isnan(v):
        return '"NaN"'
    if math.isinf(v):
        return '"Inf"' if v > 0 else '"-Inf"'
    a = abs(v)
    if 1e-5 < a < _R_INT_MAX:
        return _modp_dtoa2(v)
    p = 5 if v == 0 else math.ceil(min(15, max(1, math.log10(a)) + 4))
    return f"{v:.{p}g}"  # C printf("%.*g")


def _modp_dtoa2(v: float) -> str:
    """Fixed notation with at most four decimals, rounded exactly as jsonlite's modp_dtoa2."""
    a = abs(v)
    whole = math.trunc(a)
    tmp = (a - whole) * 10000.0
    frac = math.trunc(tmp)
    diff = tmp - frac
    if diff > 0.5:
        frac += 1
        if frac == 10000:
            frac = 0
            whole += 1
    elif diff == 0.5 and (frac == 0 or frac % 2 == 1):
        frac += 1
    text = ("-" if v < 0 else "") + str(whole)
    if frac:
        text += "." + f"{frac:04d}".rstrip("0")
    return text
