"""Version strings: this package's own, and the formats it implements.

A leaf module: documents record :data:`DATOM_VERSION`; the write door compares a
project's ``min_writer_version`` with :data:`WRITER_FORMAT_VERSION`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _pkg_version

__all__ = ["DATOM_VERSION", "WRITER_FORMAT_VERSION", "WRITTEN_BY"]

try:
    DATOM_VERSION: str = _pkg_version("datom")
except PackageNotFoundError:  # running from a source tree without an install
    DATOM_VERSION = "0.0.0"

#: The R datom release whose document formats (FORMAT2.md) this build reads and writes.
WRITER_FORMAT_VERSION = "0.2.0"

#: What ``datom_version`` records in a document this package writes (R never parses it).
WRITTEN_BY = f"py-{DATOM_VERSION}"
