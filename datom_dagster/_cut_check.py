"""The check of a data cut: do the members of its latest version still resolve and verify?

:func:`datom_data_cut_check` checks, for every member of the cut's current set version,
that its snapshot resolves in the source project's store and that the stored parquet
still hashes to the recorded ``parquet_sha`` (bytes); with ``content=True`` (here, or in
the check's run config) it also reads the data and re-hashes it to its ``data_sha``. It
fails naming each member that does not verify.
"""

from collections.abc import Sequence

import datom_core as dc
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetKey,
    Config,
    MetadataValue,
    asset_check,
)
from datom_dagster._config import DatomResource
from datom_dagster._data_cut import cut_key, source_connection
from datom_dagster._product import default_product, product_connection

__all__ = ["CUT_CHECK_NAME", "datom_data_cut_check"]

CUT_CHECK_NAME = "datom_cut_verified"
"""Name of the asset check :func:`datom_data_cut_check` adds to a data cut's asset."""


class CutCheckConfig(Config):
    """Run config of the check: ``content`` re-hashes every member's data as well."""

    content: bool = False


def datom_data_cut_check(
    name: str,
    *,
    project: DatomResource | None = None,
    source: str = "io_manager",
    key: AssetKey | str | Sequence[str] | None = None,
    content: bool = False,
    blocking: bool = False,
) -> AssetChecksDefinition:
    """The check of the cut ``name`` (give the same ``project``, ``source`` and ``key`` as
    to :func:`~datom_dagster.datom_data_cut`)."""
    dc.validate_table_name(name)
    product = project if project is not None else default_product(name)
    asset_key = AssetKey.from_coercible(key) if key is not None else cut_key(name)

    @asset_check(
        asset=asset_key,
        name=CUT_CHECK_NAME,
        required_resource_keys={source},
        blocking=blocking,
        description=f"Every member of the data cut {name!r} resolves and verifies.",
    )
    def _check(context: AssetCheckExecutionContext, config: CutCheckConfig) -> AssetCheckResult:
        src = source_connection(context, source)
        conn = product_connection(product, name)
        deep = content or config.content
        check = conn.verify_set(stores={src.project_name: src.store}, content=deep)
        failed = [f"{c.member.project}:{c.member.name}@{c.member.version[:12]}: {c.problem}"
                  for c in check.members if c.status != "ok"]  # fmt: skip
        return AssetCheckResult(
            passed=check.ok,
            metadata={
                "datom/set_version": check.version,
                "datom/members_checked": MetadataValue.int(len(check.members)),
                "datom/content": deep,
                "datom/problems": MetadataValue.md("\n".join(f"- {p}" for p in failed) or "none"),
            },
        )

    return _check
