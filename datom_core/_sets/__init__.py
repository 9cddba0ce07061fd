"""Sets: named, versioned lists of exact versions of other artifacts (SETS.md, datom-sv1)."""

from datom_core._sets._errors import (
    ArtifactKindError,
    ConflictingMemberError,
    EmptySetError,
    InconsistentParentsError,
    InvalidLabelError,
    InvalidMemberError,
    InvalidSetError,
    MalformedSetError,
    MissingDocumentShaError,
    NotProductRepoError,
    SelfReferenceError,
    SetNameMismatchError,
    UnresolvableMemberError,
)
from datom_core._sets._json import document_sha, serialise_payload
from datom_core._sets._payload import normalise_payload
from datom_core._sets._sv1 import hash_set

__all__ = [
    "ArtifactKindError",
    "ConflictingMemberError",
    "EmptySetError",
    "InconsistentParentsError",
    "InvalidLabelError",
    "InvalidMemberError",
    "InvalidSetError",
    "MalformedSetError",
    "MissingDocumentShaError",
    "NotProductRepoError",
    "SelfReferenceError",
    "SetNameMismatchError",
    "UnresolvableMemberError",
    "document_sha",
    "hash_set",
    "normalise_payload",
    "serialise_payload",
]
