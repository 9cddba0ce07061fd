"""Version strings: this package's own, and the formats it implements.

A leaf module, and the one source of the package version: ``pyproject.toml`` reads
:data:`__version__` from here (setuptools' dynamic version), documents record it through
:data:`WRITTEN_BY`, and the write door compares a project's ``min_writer_version`` with
:data:`WRITER_FORMAT_VERSION`.
"""

from __future__ import annotations

__all__ = ["DATOM_VERSION", "WRITER_FORMAT_VERSION", "WRITTEN_BY", "__version__"]

__version__ = "0.1.0"
"""This package's version (the distribution ``datom-py``); the only place it is written."""

DATOM_VERSION: str = __version__
"""The same string, under the name the rest of the package uses."""

WRITER_FORMAT_VERSION = "0.2.0"
"""The R datom release whose document formats (format 2) this build reads and writes."""

WRITTEN_BY = f"py-{DATOM_VERSION}"
"""What ``datom_version`` records in a document this package writes (R never parses it)."""
