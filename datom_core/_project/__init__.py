"""The project layer: every operation on one project's documents and data.

Operations take a :class:`ProjectContext` (project name, store, clone or none): ``_write``
(the write protocol), ``_read`` (store-only reads), ``_mirror`` (git to store),
``_validate``, ``_lineage`` and ``_setup`` (create, open, clone). The connection facade
(``datom_core._connection``) sits above this package and onboarding.
"""

from datom_core._project._context import ProjectContext

__all__ = ["ProjectContext"]
