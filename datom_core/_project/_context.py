"""What every project operation needs to know: the project, its store, its clone.

Operations take a :class:`ProjectContext` rather than a connection, so that the
connection facade sits above them and nothing below imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from datom_core._errors import ReadOnlyError
from datom_core._git import MetadataRepo
from datom_core._store import Store

__all__ = ["HasContext", "ProjectContext", "Role"]

Role = Literal["developer", "reader"]


@dataclass(frozen=True)
class ProjectContext:
    """One project as an operation sees it: its name, its store and, for a developer, its
    git clone (``repo`` is None for a reader, who has the store alone)."""

    project_name: str
    store: Store
    repo: MetadataRepo | None = None

    @property
    def role(self) -> Role:
        """``"developer"`` with a clone, ``"reader"`` without one."""
        return "developer" if self.repo is not None else "reader"

    def require_repo(self, doing: str = "changing the project") -> MetadataRepo:
        """The clone, or :class:`ReadOnlyError` for a reader (before any work is done);
        ``doing`` names what needs the git repository, for the message."""
        if self.repo is None:
            raise ReadOnlyError(
                f"this connection to {self.project_name!r} is a reader (store only): {doing} "
                "needs the project's git repository, which only a clone has. Open a clone "
                "(connect(<clone path>) / datom --repo <clone>), or make one with clone() / "
                "datom clone."
            )
        return self.repo


class HasContext(Protocol):
    """Anything that carries a project context (a connection does)."""

    @property
    def context(self) -> ProjectContext: ...
