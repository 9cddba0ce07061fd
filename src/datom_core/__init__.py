"""datom_core: versioned, content-addressed, lineage-aware tables.

(Public API is assembled here; see ``__all__``.)
"""

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
