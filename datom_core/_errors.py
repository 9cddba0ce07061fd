"""The one exception tree of datom.

Every error datom raises is a :class:`DatomError`; callers can catch that alone, or a
specific subclass when they want to react to one situation::

    DatomError
    ├── InvalidArgumentError     an argument has a wrong value or type (says what is expected)
    │   └── InvalidNameError       a table name or version argument is malformed (refused before any path)
    ├── UnsupportedInputError    data of a kind datom cannot version (not a table)
    │   └── UnhashableColumnsError  a table holds columns datom-cv1 cannot encode (lists each one)
    ├── NotFoundError            a table or version does not exist
    │   └── AmbiguousVersionError  a version prefix matches several versions (names them)
    ├── IntegrityError           stored bytes or documents do not match their recorded hash
    ├── StoreError               the data store is unreachable, refuses access, or is inconsistent
    │   └── StoreContendedError    other writers kept replacing a document (names the key)
    ├── GitError                 the metadata repository or its remote failed
    │   └── PushRejectedError      the remote refused the push after every retry
    ├── ReadOnlyError            a reader connection (store only) was asked to write
    ├── OnboardingError          an inbox file cannot be onboarded (format, corrupt file)
    ├── ProjectExistsError       a new project would overwrite an existing one
    ├── ProjectConfigError       ``.datom/project.yaml`` is missing, malformed or refuses the action
    ├── FormatError              the project was written in a format newer than this datom
    │                            (the write door: "upgrade datom"; names the field and the file)
    │
    │   the refusals of sets (SETS.md):
    ├── InvalidSetError (ValueError)   a payload SETS.md refuses, before anything changes
    │   ├── EmptySetError                no members
    │   ├── ConflictingMemberError       the same id twice with different tags
    │   ├── SelfReferenceError           a member that is the set itself
    │   ├── InvalidLabelError            a blank, duplicate or non-text tag key or value
    │   ├── InvalidMemberError           an id without exactly project, name, kind, version
    │   └── InconsistentParentsError     an output pinned beside an input it was not built from
    ├── NotProductRepoError          a set write into a repo not in ``mode: product``
    └── ArtifactKindError            a name that holds the other kind of artifact
    (and under the classes above: NotFoundError > UnresolvableMemberError, a member version
    that resolves to no snapshot; InvalidNameError > SetNameMismatchError, a set name or
    project that project.yaml does not declare; IntegrityError > MissingDocumentShaError, a
    set version without ``document_sha``, and MalformedSetError, a stored payload that is
    not a set payload)

Third-party errors are translated where the dependency is used (``raise ... from e``) so
that the original traceback is kept as ``__cause__``. Messages name the table, the key
and what to do next.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousVersionError",
    "ArtifactKindError",
    "ConflictingMemberError",
    "DatomError",
    "EmptySetError",
    "FormatError",
    "GitError",
    "InconsistentParentsError",
    "IntegrityError",
    "InvalidArgumentError",
    "InvalidLabelError",
    "InvalidMemberError",
    "InvalidNameError",
    "InvalidSetError",
    "MalformedSetError",
    "MissingDocumentShaError",
    "NotFoundError",
    "NotProductRepoError",
    "OnboardingError",
    "ProjectConfigError",
    "ProjectExistsError",
    "PushRejectedError",
    "ReadOnlyError",
    "SelfReferenceError",
    "SetNameMismatchError",
    "StoreError",
    "UnhashableColumnsError",
    "UnresolvableMemberError",
    "UnsupportedInputError",
]


_PUSH_SENT = "_datom_push_sent"


def mark_push_sent(error: BaseException) -> None:
    """Record on ``error`` that it interrupted a push already on its way to the remote:
    the remote may have applied it (its answer is what was lost)."""
    try:
        setattr(error, _PUSH_SENT, True)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass


def push_was_sent(error: BaseException) -> bool:
    """Whether :func:`mark_push_sent` marked ``error`` (or an error it was raised from)."""
    seen: BaseException | None = error
    while seen is not None:
        if getattr(seen, _PUSH_SENT, False):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class DatomError(Exception):
    """Base class of every error raised by datom."""


class InvalidArgumentError(DatomError, ValueError):
    """An argument has a wrong value or type; the message says what is expected."""


class UnsupportedInputError(DatomError, TypeError):
    """Data of a kind datom cannot version (not a pandas/polars DataFrame or Arrow table)."""


class UnhashableColumnsError(UnsupportedInputError):
    """A table holds columns that datom-cv1 cannot encode.

    ``report`` is the full :class:`~datom_core.HashabilityReport`; the message lists every
    offending column with its recourse, all at once.
    """

    def __init__(self, message: str, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class InvalidNameError(InvalidArgumentError):
    """A table name or a version argument is malformed."""


class NotFoundError(DatomError, LookupError):
    """A table, version or object does not exist."""


class AmbiguousVersionError(NotFoundError):
    """A version prefix matches more than one version."""

    def __init__(self, message: str, candidates: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.candidates = candidates


class IntegrityError(DatomError):
    """Stored bytes or documents do not match the hash recorded for them."""

    def __init__(self, message: str, key: str = "", expected: str = "", actual: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.expected = expected
        self.actual = actual


class StoreError(DatomError, OSError):
    """The data store is unreachable, refuses access, or holds inconsistent state."""


class StoreContendedError(StoreError):
    """Other writers kept replacing a store document between each look and conditional
    PUT; :attr:`key` names it. The version is recorded in git: the next write of the
    table, or ``validate(fix=True)``, brings the store's copy up to date."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class GitError(DatomError):
    """The metadata repository or its remote failed."""


class PushRejectedError(GitError):
    """The remote kept rejecting the push after every retry."""


class ReadOnlyError(DatomError, PermissionError):
    """A reader connection (store only, no git) was asked to change the project."""


class OnboardingError(DatomError):
    """An inbox file cannot be onboarded (unsupported format, corrupt or unreadable file)."""


class OnboardingWarning(UserWarning):
    """A file was onboarded, with a caveat the caller should see (e.g. the encoding used
    when the file's text was not valid in the one it declares)."""


class ProjectExistsError(DatomError):
    """A new project would overwrite an existing one (its store or its remote is taken)."""


class ProjectConfigError(DatomError):
    """``.datom/project.yaml`` is missing or malformed, or its settings refuse the action."""


class FormatError(DatomError):
    """The project holds documents of a format newer than this datom writes.

    Raised by every writing route before anything changes (reads still work). ``field``
    and ``file`` name what was refused; the remedy is to upgrade datom.
    """

    def __init__(self, message: str, *, field: str = "", file: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.file = file


# -- sets (SETS.md) ---------------------------------------------------------------------


class InvalidSetError(DatomError, ValueError):
    """A set payload that the set format refuses; raised before anything is hashed or written."""


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
