"""The one exception tree of datom.

Every error datom raises is a :class:`DatomError`; callers can catch that alone, or a
specific subclass when they want to react to one situation::

    DatomError
    ├── UnhashableColumnsError   a table holds columns datom-cv1 cannot encode (lists each one)
    ├── InvalidNameError         a table name or version argument is malformed (refused before any path)
    ├── NotFoundError            a table or version does not exist
    │   └── AmbiguousVersionError  a version prefix matches several versions (names them)
    ├── IntegrityError           stored bytes or documents do not match their recorded hash
    ├── StoreError               the data store is unreachable, refuses access, or is inconsistent
    ├── GitError                 the metadata repository or its remote failed
    │   └── PushRejectedError      the remote refused the push after every retry
    ├── ReadOnlyError            a reader connection (store only) was asked to write
    └── OnboardingError          an inbox file cannot be onboarded (format, corrupt file)

Third-party errors are translated where the dependency is used (``raise ... from e``) so
that the original traceback is kept as ``__cause__``. Messages name the table, the key
and what to do next.
"""

from __future__ import annotations

__all__ = [
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


class DatomError(Exception):
    """Base class of every error raised by datom."""


class UnhashableColumnsError(DatomError, TypeError):
    """A table holds columns that datom-cv1 cannot encode.

    ``report`` is the full :class:`~datom_core.HashabilityReport`; the message lists every
    offending column with its recourse, all at once.
    """

    def __init__(self, message: str, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class InvalidNameError(DatomError, ValueError):
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


class GitError(DatomError):
    """The metadata repository or its remote failed."""


class PushRejectedError(GitError):
    """The remote kept rejecting the push after every retry."""


class ReadOnlyError(DatomError, PermissionError):
    """A reader connection (store only, no git) was asked to change the project."""


class OnboardingError(DatomError):
    """An inbox file cannot be onboarded (unsupported format, corrupt or unreadable file)."""
