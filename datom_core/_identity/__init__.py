"""Identity: ``data_sha`` (datom-cv1), the hashability report and file digests.

A table is checked completely before anything is hashed, so a refusal names every
offending column at once and nothing downstream (git, store, manifest) is touched.
"""

from __future__ import annotations

from datom_core._identity._cv1 import ColumnHash, TableHash
from datom_core._identity._hashing import (
    ColumnReport,
    HashabilityReport,
    check_hashable,
    file_sha,
    hash_table,
    prepare_table,
)

__all__ = [
    "ColumnHash",
    "ColumnReport",
    "HashabilityReport",
    "TableHash",
    "check_hashable",
    "file_sha",
    "hash_table",
    "prepare_table",
]
