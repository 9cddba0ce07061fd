"""datom_core: versioned, content-addressed, lineage-aware tables.

A project is a git repository of metadata plus a data store of parquet bytes. Every table
version has three SHA-256 names: ``data_sha`` (the values), ``metadata_sha`` (the version)
and ``parquet_sha`` (the stored bytes), byte-compatible with the R package ``datom``.

* Identity: :func:`hash_table`, :func:`check_hashable`, :func:`prepare_table`,
  :func:`canonical_json`, :func:`metadata_sha`, :func:`file_sha`.
* Stores: :class:`LocalStore`, :class:`S3Store`, :class:`FsspecStore`, :func:`store_from_url`.
* Projects: :func:`init_repo`, :func:`connect`, :func:`clone` and :class:`Connection`
  (``write``, ``read``, ``version``, ``diff``, ``history``, ``tables``, ``parent``,
  ``lineage``, ``status``, ``validate``, ``scan_inbox``, ``sync``).
* Documents (format 2, shared with R datom 0.2.0): :class:`TableMetadata`,
  :class:`HistoryEntry`, :class:`Manifest`, :class:`ManifestEntry`, :class:`ProjectConfig`,
  :class:`TableDiff`; :data:`WRITER_FORMAT_VERSION` is the R release whose formats this
  build writes.
* Sets (datom-sv1, see the docs page "Sets"): :func:`hash_set`, ``Connection.member`` / ``write_set`` /
  ``get_set`` / ``add_members`` / ``remove_members`` / ``update_members`` /
  ``diff_sets`` / ``verify_set``; :class:`SetMember`, :class:`SetVersion`,
  :class:`SetWriteResult`, :class:`SetDiff`, :func:`diff_sets`, :func:`verify_set`.
* Onboarding formats: :data:`SUPPORTED_FORMATS`, :func:`detect_format`, :func:`read_extract`;
  column labels kept from SAS/SPSS/Stata files: :func:`column_labels`, :class:`ColumnLabels`.
* Errors: :class:`DatomError` and its subclasses (see ``datom_core._errors``).
"""

from datom_core._connection import Connection
from datom_core._errors import (
    AmbiguousVersionError,
    DatomError,
    FormatError,
    GitError,
    IntegrityError,
    InvalidArgumentError,
    InvalidNameError,
    NotFoundError,
    OnboardingError,
    OnboardingWarning,
    ProjectConfigError,
    ProjectExistsError,
    PushRejectedError,
    ReadOnlyError,
    StoreContendedError,
    StoreError,
    UnhashableColumnsError,
    UnsupportedInputError,
)
from datom_core._identity import (
    ColumnHash,
    ColumnReport,
    HashabilityReport,
    TableHash,
    check_hashable,
    file_sha,
    hash_table,
    prepare_table,
)
from datom_core._identity._canonical import canonical_json, metadata_sha
from datom_core._labels import ColumnLabels, column_labels
from datom_core._names import validate_table_name, validate_version
from datom_core._onboard import ScanRow, SyncRow
from datom_core._onboard._readers import SUPPORTED_FORMATS, detect_format
from datom_core._onboard._readers import read_file as read_extract
from datom_core._open import clone, connect, init_repo
from datom_core._project._context import ProjectContext
from datom_core._project._diff import TableDiff
from datom_core._project._model import (
    HistoryEntry,
    Manifest,
    ManifestEntry,
    ParentRef,
    ProjectConfig,
    SourceRef,
    TableMetadata,
)
from datom_core._project._records import (
    LineageNode,
    Problem,
    ProjectStatus,
    TableInfo,
    ValidationReport,
    VersionInfo,
    WriteResult,
)
from datom_core._sets import (
    ArtifactKindError,
    ConflictingMemberError,
    EmptySetError,
    InconsistentParentsError,
    InvalidLabelError,
    InvalidMemberError,
    InvalidSetError,
    MalformedSetError,
    MemberCheck,
    MemberMove,
    MissingDocumentShaError,
    NotProductRepoError,
    SelfReferenceError,
    SetCheck,
    SetDiff,
    SetEdit,
    SetMember,
    SetNameMismatchError,
    SetVersion,
    SetWriteResult,
    UnresolvableMemberError,
    diff_sets,
    hash_set,
    verify_set,
)
from datom_core._store import FsspecStore, LocalStore, S3Store, Store, store_from_url
from datom_core._version import WRITER_FORMAT_VERSION, __version__

__all__ = [
    "ArtifactKindError",
    "ConflictingMemberError",
    "EmptySetError",
    "InconsistentParentsError",
    "InvalidLabelError",
    "InvalidMemberError",
    "InvalidSetError",
    "MalformedSetError",
    "MemberCheck",
    "MemberMove",
    "MissingDocumentShaError",
    "NotProductRepoError",
    "SelfReferenceError",
    "SetCheck",
    "SetDiff",
    "SetEdit",
    "SetMember",
    "SetNameMismatchError",
    "SetVersion",
    "SetWriteResult",
    "UnresolvableMemberError",
    "diff_sets",
    "hash_set",
    "verify_set",
    "WRITER_FORMAT_VERSION",
    "__version__",
    "HistoryEntry",
    "Manifest",
    "ManifestEntry",
    "ProjectConfig",
    "ProjectContext",
    "TableDiff",
    "TableMetadata",
    "FormatError",
    "InvalidArgumentError",
    "ProjectConfigError",
    "ProjectExistsError",
    "UnsupportedInputError",
    "SUPPORTED_FORMATS",
    "ScanRow",
    "SyncRow",
    "detect_format",
    "read_extract",
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
    "validate_table_name",
    "validate_version",
    "ColumnHash",
    "ColumnLabels",
    "ColumnReport",
    "HashabilityReport",
    "TableHash",
    "canonical_json",
    "check_hashable",
    "column_labels",
    "file_sha",
    "hash_table",
    "prepare_table",
    "metadata_sha",
    "AmbiguousVersionError",
    "DatomError",
    "GitError",
    "IntegrityError",
    "InvalidNameError",
    "NotFoundError",
    "OnboardingError",
    "OnboardingWarning",
    "PushRejectedError",
    "ReadOnlyError",
    "StoreContendedError",
    "StoreError",
    "UnhashableColumnsError",
]
