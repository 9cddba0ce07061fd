"""The refusals of sets (SETS.md), each its own class under the one exception tree.

::

    DatomError
    ├── InvalidSetError (ValueError)      a payload SETS.md refuses, before anything changes
    │   ├── EmptySetError                 no members
    │   ├── ConflictingMemberError        the same id twice with different tags
    │   ├── SelfReferenceError            a member that is the set itself
    │   ├── InvalidLabelError             a blank, duplicate or non-text tag key or value
    │   ├── InvalidMemberError            an id without exactly project, name, kind, version
    │   └── InconsistentParentsError      an output pinned beside an input it was not built from
    ├── NotFoundError
    │   └── UnresolvableMemberError       a member version that resolves to no snapshot
    ├── InvalidNameError
    │   └── SetNameMismatchError          a set name or project that project.yaml does not declare
    ├── NotProductRepoError               a set write into a repo not in ``mode: product``
    ├── ArtifactKindError                 a name that holds the other kind of artifact
    └── IntegrityError
        ├── MissingDocumentShaError       a set version that records no ``document_sha``
        └── MalformedSetError             a stored payload that is not a set payload
"""

from __future__ import annotations

from datom_core._errors import DatomError, IntegrityError, InvalidNameError, NotFoundError

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
]


class InvalidSetError(DatomError, ValueError):
    """A set payload that SETS.md refuses; raised before anything is hashed or written."""


class EmptySetError(InvalidSetError):
    """A set with no members: it has no content to identify."""


class ConflictingMemberError(InvalidSetError):
    """The same member ``id`` listed twice with different tags."""


class SelfReferenceError(InvalidSetError):
    """A member that is the set itself (at any version)."""


class InvalidLabelError(InvalidSetError, TypeError):
    """A tag key or value that is blank, duplicated, or not text."""


class InvalidMemberError(InvalidSetError):
    """A member record that is not exactly an ``id`` (four non-empty strings) plus tags."""


class InconsistentParentsError(InvalidSetError):
    """A member built from a version of another member that the set pins differently."""


class UnresolvableMemberError(NotFoundError):
    """A member version that resolves to no snapshot in its project's store."""


class SetNameMismatchError(InvalidNameError):
    """A set name or project that differs from what ``.datom/project.yaml`` declares."""


class NotProductRepoError(DatomError):
    """A set write into a repo whose ``.datom/project.yaml`` is not ``mode: product``."""


class ArtifactKindError(DatomError):
    """A name that already holds the other kind of artifact (a table read as a set...)."""


class MissingDocumentShaError(IntegrityError):
    """A set version whose documents record no ``document_sha``: it cannot be verified."""


class MalformedSetError(IntegrityError):
    """A stored set payload (or its documents) that is not what a set write produces."""
