"""Onboarding: scan an inbox of raw extracts, then sync what is new or changed.

:func:`scan_inbox` classifies every file of an inbox (one file = one table, named after
the file's stem) without writing anything:

===================  ==============================================================
``new``              no table of that name yet
``changed``          the file's bytes differ from the current version's source file
                     (an older extract dropped again is ``changed`` too: it must become
                     current again; its message names the earlier version)
``stale``            the file is an earlier version's source file, last modified before
                     the current version was recorded (by anyone, from any clone): a
                     leftover. sync leaves it; ``sync(revert=True)`` makes it current
                     again, naming both versions
``unchanged``        the file is the current version's source file (same SHA-256)
``unsupported_format``  not one of the allowlisted formats (message: the recourse)
``invalid_name``     the stem is not a valid table name (message: rename the file)
``refused``          a sub-folder, two files for one table, or a name taken by a
                     derived table (message: what to do)
``error``            the file could not be read to hash it
===================  ==============================================================

Cost: ``unchanged`` needs one manifest read for the whole scan, plus a ``stat`` per file
(the SHA cache of ``_inbox`` spares re-hashing unchanged files). Only a file whose SHA
differs from the manifest's makes the scan read that table's history.

:func:`sync` onboards the ``new`` and ``changed`` rows, one write (one commit) per table,
through the core write protocol: ``table_type = "imported"``, the file's SHA-256 as
``original_file_sha``, ``original_format`` and ``original_file`` in the history entry,
no parents and a one-entry ``source_lineage`` pointing at the table's own data. A
re-export with new bytes but the same rows is a ``metadata_only`` version (nothing
uploaded); an old extract dropped again makes its old version current again, without a
second history entry (the write protocol's dedup guard).
"""

from datom_core._onboard._scan import ScanRow, ScanStatus, scan_inbox
from datom_core._onboard._sync import SyncRow, SyncStatus, sync

__all__ = ["ScanRow", "ScanStatus", "SyncRow", "SyncStatus", "scan_inbox", "sync"]
