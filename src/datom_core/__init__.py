"""datom_core: versioned, content-addressed, lineage-aware tables.

(Public API is assembled here; see ``__all__``.)
"""

from datom_core._canonical import canonical_json, metadata_sha
from datom_core._errors import (
    AmbiguousVersionError,
    DatomError,
    GitError,
    IntegrityError,
    InvalidNameError,
    NotFoundError,
    OnboardingError,
    PushRejectedError,
    ReadOnlyError,
    StoreError,
    UnhashableColumnsError,
)
from datom_core._identity import (
    ColumnHash,
    ColumnReport,
    HashabilityReport,
    TableHash,
    check_hashable,
    file_sha,
    hash_table,
)

__all__ = [
    "ColumnHash",
    "ColumnReport",
    "HashabilityReport",
    "TableHash",
    "canonical_json",
    "check_hashable",
    "file_sha",
    "hash_table",
    "metadata_sha",
    "AmbiguousVersionError",
    "DatomError",
    "GitError",
    "IntegrityError",
    "InvalidNameError",
    "NotFoundError",
    "OnboardingError",
    "PushRejectedError",
    "ReadOnlyError",
    "StoreError",
    "UnhashableColumnsError",
]
