"""The ``datom`` command line.

Works as a developer, in a clone (found from the working directory, or ``--repo PATH``),
and as a reader, from the store alone (``--store URL --project NAME``, or the environment
variables ``DATOM_REPO``, ``DATOM_STORE`` and ``DATOM_PROJECT``). Storage credentials come
from the environment only (e.g. ``AWS_ACCESS_KEY_ID``), git tokens from ``DATOM_GIT_TOKEN``.

Commands: ``init``, ``clone``, ``status``, ``list``, ``history``, ``show``, ``read``,
``lineage``, ``diff``, ``scan``, ``sync``, ``validate``, ``check-hashable`` and ``set``
(``write``, ``show``, ``members``, ``diff``). Output is a human-readable table by default
and one JSON document on stdout with ``--json`` (before or after the command name), an
error included (``{"error": {"type", "message", "exit_code"}}``). Progress bars go to
stderr, only on a terminal and never with ``--json``.

What a command prints leads somewhere: a store URL ``status`` prints (``.../datom``) is
taken back by ``--store``; version ids and prefixes are taken in any case; a partitioned
asset's name (its tables are ``NAME(<key>)``) is answered with its partitions; ``read
--out -`` streams parquet or csv (``--format``) to stdout; ``read --set`` reads members of
other projects from the stores the product repo records (``--source`` otherwise), and takes
the pin ``<project>/<set>@<version>`` a data cut prints. Error remedies name commands.

``datom init PATH --project NAME`` needs no server: without ``--remote`` the git remote
is a bare repository at ``PATH.remote.git``, and without ``--store`` the data goes to a
local store at ``PATH.store``, both next to the clone (never inside it, so data never
sits in the git working tree).

Errors print one line, ``datom: error: <message>``, on stderr; ``--debug`` adds the
traceback. Exit codes:

====  ==========================================================================
0     ok
1     a finding: ``validate`` found problems, ``check-hashable`` refused the file,
      ``sync`` could not onboard a file (``diff`` exits 0 whatever it finds)
2     usage error (one line), including a malformed table name or version, or a
      ``--repo`` that is not a clone
3     not found (:class:`~datom_core.NotFoundError`: table, version, column, key
      column, project, file)
4     integrity error (:class:`~datom_core.IntegrityError`: stored bytes, or the decoded
      table with ``--verify content``, do not match their hash; a wrong-shape document)
5     any other :class:`~datom_core.DatomError` (store, git, read-only, onboarding...)
70    internal error (a bug; rerun with ``--debug`` and report the traceback)
130   interrupted (Ctrl-C)
====  ==========================================================================
"""

from datom_core.cli._main import cli, main

__all__ = ["cli", "main"]
