"""Content verification: the decoded data of a version hashes to its recorded ``data_sha``.

A bytes check (``parquet_sha``) proves the object is the one the documents name, but
``parquet_sha`` is outside the version id: whoever can write the store can swap the
parquet and edit ``parquet_sha`` to match while every snapshot still certifies itself.
``data_sha`` is inside the version id, so re-hashing the decoded table makes a pinned
read tamper-evident end to end.

R datom hashes a missing double's bits as they are in memory (FORMAT2.md §8): the
``data_sha`` of an R-written version whose table has missing doubles may be impossible to
reproduce from any stored data, R included. Such a mismatch is reported as possibly that
quirk, not as tampering.
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa

from datom_core._errors import IntegrityError, InvalidArgumentError
from datom_core._identity import hash_table
from datom_core._project._model import TableMetadata

__all__ = ["Verify", "check_content", "check_verify", "content_mismatch"]

Verify = Literal["bytes", "content"]


def check_verify(verify: object) -> Verify:
    """``verify`` if it is one of the two levels, else :class:`InvalidArgumentError`."""
    if verify not in ("bytes", "content"):
        raise InvalidArgumentError(
            f'verify= must be "bytes" (the stored object against parquet_sha) or "content" '
            f"(also the decoded table against data_sha), not {verify!r}"
        )
    return verify


def content_mismatch(table: str, metadata: TableMetadata, key: str, data: pa.Table) -> str | None:
    """Why ``data`` (decoded from ``key``) is not the version's content, or None if it is."""
    return _mismatch(table, metadata, key, data, hash_table(data).data_sha)


def check_content(table: str, metadata: TableMetadata, key: str, data: pa.Table) -> None:
    """:class:`IntegrityError` (see :func:`content_mismatch`) unless ``data`` is the content."""
    actual = hash_table(data).data_sha
    why = _mismatch(table, metadata, key, data, actual)
    if why is not None:
        raise IntegrityError(why, key=key, expected=metadata.data_sha, actual=actual)


def _mismatch(
    table: str, metadata: TableMetadata, key: str, data: pa.Table, actual: str
) -> str | None:
    expected = metadata.data_sha
    if actual == expected:
        return None
    where = f"table {table!r} version {metadata.version[:12]}: the data in {key} hashes to"
    quirky = _missing_doubles(data) if metadata.written_by_r else []
    if quirky:
        return (
            f"{where} data_sha {actual}, not the recorded {expected}. R datom "
            f"{metadata.datom_version} wrote this version and column(s) {', '.join(quirky)} "
            "hold missing doubles: R hashes the bits of an NA as computed (an NA that went "
            "through arithmetic hashes differently, FORMAT2.md §8), so this may be that quirk "
            "rather than altered data. Compare with the R session's data, or rewrite the "
            "version from Python (this package always hashes the pinned NA)"
        )
    return (
        f"{where} data_sha {actual}, not the recorded {expected}: the stored data is not what "
        "the version recorded (swapped or altered, with its parquet_sha edited to match). "
        "Do not use it; a developer can see the damage with validate() / datom validate"
    )


def _missing_doubles(data: pa.Table) -> list[str]:
    return [
        field.name
        for field, column in zip(data.schema, data.columns, strict=True)
        if pa.types.is_floating(field.type) and column.null_count
    ]
