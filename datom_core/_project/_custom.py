"""Checking custom metadata (``metadata=``) before anything is hashed or written.

It must be a JSON object of standard JSON values: R cannot read ``NaN`` or ``Infinity``
either, so they are refused with the recourse, as are values too deep or too large for
canonical JSON and text that is not valid Unicode.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from datom_core._errors import InvalidArgumentError
from datom_core._identity._canonical import canonical_json

__all__ = ["check_custom"]

_MAX_DEPTH = 200


def check_custom(table: str, custom: Any) -> None:
    """Refuse ``custom`` (:class:`InvalidArgumentError`) unless it is a dict of JSON values."""
    if custom is None:
        return
    where = f"table {table!r}: metadata="
    if not isinstance(custom, Mapping):
        raise InvalidArgumentError(
            f"{where} must be a dict of JSON values, not {type(custom).__name__}"
        )
    problem = _problem(custom, "metadata", 0)
    if problem:
        raise InvalidArgumentError(f"{where} {problem}; nothing was written")
    try:
        canonical_json({"custom": custom}).encode("utf-8")
    except (TypeError, ValueError, OverflowError, RecursionError, UnicodeEncodeError) as e:
        raise InvalidArgumentError(f"{where} is not JSON ({type(e).__name__}: {e})") from e


def _problem(value: Any, path: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return f"nests deeper than {_MAX_DEPTH} levels at {path}: flatten it"
    if isinstance(value, float) and not math.isfinite(value):
        return (
            f"holds {value!r} at {path}, which is not standard JSON (R cannot read it either): "
            'store it as text (e.g. "NaN") or as null'
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"has a non-text key {key!r} at {path}: keys must be text"
            found = _problem(item, f"{path}.{key}", depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _problem(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"holds text at {path} that is not valid Unicode (a lone surrogate)"
    return None
