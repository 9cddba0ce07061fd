"""datom_core: versioned, content-addressed, lineage-aware tables.

(Public API is assembled here; see ``__all__``.)
"""

from datom_core._canonical import canonical_json, metadata_sha
from datom_core._documents import ParentRef, SourceRef
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
from datom_core._project import Connection, clone, connect, init_repo
from datom_core._records import (
    LineageNode,
    Problem,
    ProjectStatus,
    TableInfo,
    ValidationReport,
    VersionInfo,
    WriteResult,
)
from datom_core._store import FsspecStore, LocalStore, S3Store, Store, store_from_url

__all__ = [
    "Connection",
    "FsspecStore",
    "LineageNode",
    "LocalStore",
    "ParentRef",
    "Problem",
    "ProjectStatus",
    "S3Store",
    "SourceRef",
    "Store",
    "TableInfo",
    "ValidationReport",
    "VersionInfo",
    "WriteResult",
    "clone",
    "connect",
    "init_repo",
    "store_from_url",
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
