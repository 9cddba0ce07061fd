"""The metadata repository: a small git layer over dulwich.

dulwich is imported only inside this package. The rest of datom sees
:class:`MetadataRepo`, :class:`TreeReader` (and :class:`TipView`, the remote's tip),
:class:`Author`, :class:`CommitInfo` and :class:`GitCredentials`, and only datom's own errors (:class:`GitError`,
:class:`PushRejectedError`, :class:`InvalidNameError`). See :mod:`._repo` for how each
operation stays proportional to what changed, and :mod:`._metadata` for remotes and tokens.
"""

from ._metadata import MetadataRepo
from ._objects import ChainItem, TreeReader
from ._remote import GitCredentials
from ._tipview import TipView
from ._types import Author, CommitInfo

__all__ = [
    "Author",
    "ChainItem",
    "CommitInfo",
    "GitCredentials",
    "MetadataRepo",
    "TipView",
    "TreeReader",
]
