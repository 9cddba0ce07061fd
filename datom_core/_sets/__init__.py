"""Sets: named, versioned lists of exact versions of other artifacts (SETS.md, datom-sv1).

* Identity and bytes: :func:`hash_set` (datom-sv1 ``data_sha``), :func:`normalise_payload`,
  :func:`serialise_payload` (the ``set.json`` bytes R writes), :func:`document_sha`.
* Reading from the store alone: :func:`get_set`, :func:`read_set`, :func:`declare_member`,
  :func:`set_names`.
* Writing in a product repo: :func:`write_set` (and :func:`declared_set`, the gates).
* Records and editing: :class:`SetMember`, :class:`SetVersion`, :class:`SetWriteResult`,
  :func:`diff_sets` / :class:`SetDiff`, :func:`add_members`, :func:`remove_members`,
  :func:`update_members` / :class:`SetEdit` / :class:`MemberMove`.
* Checking a cut: :func:`verify_set` (members resolve; bytes, and content on request).
* Errors: the sets part of the tree in ``datom_core._errors``.
"""

from datom_core._errors import (
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
from datom_core._sets._edit import SetEdit, add_members, remove_members, update_members
from datom_core._sets._gates import declared_set
from datom_core._sets._json import document_sha, serialise_payload
from datom_core._sets._payload import normalise_payload
from datom_core._sets._read import current_versions, declare_member, get_set, read_set, set_names
from datom_core._sets._records import (
    MemberMove,
    SetDiff,
    SetMember,
    SetVersion,
    SetWriteResult,
    diff_sets,
)
from datom_core._sets._sv1 import hash_set
from datom_core._sets._verify import MemberCheck, SetCheck, verify_set
from datom_core._sets._write import write_set

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
    "add_members",
    "current_versions",
    "declare_member",
    "declared_set",
    "diff_sets",
    "document_sha",
    "get_set",
    "hash_set",
    "normalise_payload",
    "read_set",
    "remove_members",
    "serialise_payload",
    "set_names",
    "update_members",
    "verify_set",
    "write_set",
]
