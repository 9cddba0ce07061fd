"""The set operations of a connection: mixed into :class:`~datom_core.Connection`.

Each method is one call into this package with the connection's project context, so the
connection facade stays thin. Members of any project are fetched through a store-only
reader of that project (:func:`open_member_reader`): no git, no token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datom_core._arrow import OutputKind
from datom_core._errors import NotProductRepoError
from datom_core._project._context import ProjectContext
from datom_core._project._read import read_table
from datom_core._project._setup import open_reader
from datom_core._sets import _manifest as M
from datom_core._sets._edit import SetEdit, add_members, remove_members, update_members
from datom_core._sets._gates import declared_set
from datom_core._sets._read import current_versions, declare_member, get_set, read_json
from datom_core._sets._records import SetDiff, SetMember, SetVersion, SetWriteResult, diff_sets
from datom_core._sets._sources import member_store_map, stored_member_stores
from datom_core._sets._verify import SetCheck, verify_set
from datom_core._sets._write import write_set
from datom_core._store import Store

__all__ = ["SetMethods", "open_member_reader"]


@dataclass(frozen=True)
class _MemberReader:
    """A store-only reader of one project, enough to fetch a pinned table version."""

    ctx: ProjectContext

    def read(
        self, name: str, version: str | None = None, columns: Any = None, as_: OutputKind = "pandas"
    ) -> Any:
        return read_table(self.ctx, name, version, columns, as_)


def open_member_reader(store: Store, project_name: str) -> _MemberReader:
    """A reader of ``project_name`` in ``store`` (the store's manifest must name it)."""
    return _MemberReader(open_reader(store, project_name))


class SetMethods:
    """Sets on a connection: declare members here, write and read this repo's set."""

    @property
    def context(self) -> ProjectContext:
        """The connection's project context (provided by :class:`Connection`)."""
        raise NotImplementedError  # provided by the connection

    def member(
        self, table: str, version: str | None = None, tags: Mapping[str, Any] | None = None
    ) -> SetMember:
        """A set member pinning ``version`` of ``table`` in this project (a version id or
        unique prefix; ``None``: the current version), with labels ``tags``."""
        ctx = self.context
        return declare_member(
            ctx.store, ctx.project_name, table, version, tags, opener=open_member_reader
        )

    def write_set(
        self,
        members: Sequence[Any] | SetVersion,
        tags: Mapping[str, Any] | None = None,
        message: str | None = None,
    ) -> SetWriteResult:
        """Record this product repo's set: ``.change`` (``none`` / ``full``), ``.version``,
        ``.data_sha``. Every refusal happens before anything changes."""
        return write_set(self.context, members, tags, message)

    def get_set(self, version: str | None = None, *, name: str | None = None) -> SetVersion:
        """A version of this project's set (current by default; an id or unique prefix).

        Members of other projects can be fetched from the stores the product repo records
        (``member_stores`` in its ``project.yaml``, written with the set; a reader of its
        store alone uses the store's copy).
        """
        ctx = self.context
        stores: dict[str, Store] = {}
        if ctx.repo is not None:
            if name is None:
                try:
                    name = declared_set(ctx.repo, ctx.project_name, None)
                except NotProductRepoError:
                    pass  # a data repo holds no set of its own: the store says which it lists
            raw = ctx.repo.read(M.PROJECT_YAML)
            stores = member_store_map(M.load_project_config(raw).raw) if raw else {}
        else:
            stores = stored_member_stores(ctx.store)  # a reader: the store's copy
        return get_set(
            ctx.store, ctx.project_name, version, name=name, opener=open_member_reader,
            stores=stores,
        )  # fmt: skip

    def set_history(self, *, name: str | None = None) -> list[dict[str, Any]]:
        """Every version of this project's set, newest first (the store's history)."""
        ctx = self.context
        name = name or self.get_set(name=name).name
        return list(read_json(ctx.store, M.store_history(name)) or [])

    def diff_sets(self, v1: str | None = None, v2: str | None = None) -> SetDiff:
        """What changed in this project's set from ``v1`` to ``v2`` (``v2``: current;
        ``v1``: the version before ``v2``)."""
        after = self.get_set(v2)
        if v1 is None:
            versions = [h.get("version") for h in self.set_history(name=after.name)]
            index = versions.index(after.version) if after.version in versions else -1
            v1 = versions[index + 1] if 0 <= index < len(versions) - 1 else None
        before = self.get_set(v1) if v1 is not None else None
        return diff_sets(before if before is not None else (), after)

    def add_members(
        self, x: SetVersion | Sequence[SetMember], members: Sequence[SetMember]
    ) -> SetEdit:
        """``x`` with ``members`` added (nothing is written: pass ``.members`` to write_set)."""
        return add_members(x, members)

    def remove_members(
        self,
        x: SetVersion | Sequence[SetMember],
        names: Sequence[str] | str,
        *,
        version: str | None = None,
    ) -> SetEdit:
        """``x`` without the members called ``names``."""
        return remove_members(x, names, version=version)

    def update_members(
        self, x: SetVersion | Sequence[SetMember], names: Sequence[str] | None = None
    ) -> SetEdit:
        """``x`` with its members of this project repointed to their current versions;
        ``.moved`` says what moved."""
        ctx = self.context
        return update_members(x, current_versions(ctx.store), project=ctx.project_name, names=names)

    def verify_set(
        self,
        version: str | None = None,
        stores: Mapping[str, Store] | None = None,
        *,
        content: bool = False,
    ) -> SetCheck:
        """Whether every member of a version of this project's set still resolves and
        verifies (stored bytes; ``content=True`` also re-hashes the data). Members of other
        projects are checked in ``stores`` (project -> store), else reported unchecked."""
        return verify_set(self.get_set(version), stores, content=content)
