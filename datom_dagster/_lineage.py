"""Lineage: the exact versions a step's output was derived from.

Every version ``load_input`` hands to a step is recorded against that step (exact pins,
including an older version pinned through ``datom_version``, and versions of another
datom project, whose ``source`` is that project). ``handle_output`` turns them into the
``parents`` of the version it writes. Upstream dependencies the step did not load
(``deps=[...]``) are recorded at their current version (in a run as of a set, the
run tag ``datom/as_of_set``: at the version the set pins), in the project of the IO manager
that stores them. The ``source_lineage`` that datom derives from the parents follows.

The record lives in a weak dictionary keyed by the step's execution context, which the
``InputContext`` and ``OutputContext`` of one step share: nothing outlives the step, and
steps running in the same process (the in-process executor) do not see each other's.
"""

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import datom_core as dc
from dagster import AssetKey, InputContext, OutputContext
from datom_dagster import _dagster_internals as internals
from datom_dagster._config import DatomProject
from datom_dagster._naming import TABLE_METADATA_KEY, table_name
from datom_dagster._set_pins import run_set_versions

__all__ = ["Loaded", "output_parents", "record_loaded"]


@dataclass(frozen=True)
class Loaded:
    """One version a step loaded, and the asset it was loaded for."""

    asset_key: AssetKey
    ref: dc.ParentRef


_LOADED: "weakref.WeakKeyDictionary[Any, list[Loaded]]" = weakref.WeakKeyDictionary()


def record_loaded(context: InputContext, refs: Iterable[dc.ParentRef]) -> None:
    """Remember that this step loaded ``refs`` for the input's upstream asset."""
    step = internals.step_context_or_none(context)
    if step is None:  # a hand-built context: there is no step to attach lineage to
        return
    _LOADED.setdefault(step, []).extend(Loaded(context.asset_key, ref) for ref in refs)


def output_parents(context: OutputContext, own: DatomProject) -> list[Loaded]:
    """The parents of the version this output is about to become, each with the asset it
    was loaded for (see the module docstring).

    ``own`` is the IO manager storing the output: it also stores dependencies that are
    not defined in this code location.
    """
    step = internals.step_context_or_none(context)
    loaded = list(_LOADED.get(step, ())) if step is not None else []
    deps = _dep_keys(context)
    if deps is not None:  # a multi-asset output: keep what its own dependencies loaded
        loaded = [item for item in loaded if item.asset_key in deps]
    parents: dict[tuple[str, str, str], Loaded] = {}
    for item in loaded:
        parents.setdefault((item.ref.source, item.ref.table, item.ref.version), item)
    seen = {item.asset_key for item in loaded}
    for dep in deps or ():
        if dep in seen:
            continue
        for ref in _current_versions(context, dep, own):
            parents.setdefault((ref.source, ref.table, ref.version), Loaded(dep, ref))
    return list(parents.values())


def _dep_keys(context: OutputContext) -> list[AssetKey] | None:
    try:
        return [d.asset_key for d in context.asset_spec.deps]
    except Exception:  # a hand-built context has no asset spec; then every load counts
        return None


def _current_versions(
    context: OutputContext, dep: AssetKey, own: DatomProject
) -> list[dc.ParentRef]:
    """Current versions of an upstream dependency the step did not load."""
    try:
        manager = internals.dep_io_manager(context, dep, default=own)
        override = internals.dep_metadata(context, dep).get(TABLE_METADATA_KEY)
        partitions_def = internals.dep_partitions_def(context, dep)
        keys = internals.dep_partition_keys(context, dep) if partitions_def else [None]
    except Exception as e:  # Dagster internals moved: lineage is incomplete, say so
        context.log.warning(
            f"datom: cannot resolve upstream {dep.to_user_string()} ({type(e).__name__}: {e}); "
            "it is not recorded as a parent"
        )
        return []
    if not isinstance(manager, DatomProject):
        context.log.debug(f"datom: upstream {dep.to_user_string()} is not stored by datom")
        return []
    conn = manager.connection()
    as_of = run_set_versions(context, conn, manager)  # a run as of a set: its versions
    refs, missing = [], []
    for key in keys or ():
        name = table_name(dep, key, partitions_def=partitions_def, override=override)
        if as_of is not None and name not in as_of:
            continue  # the set leaves this partition out, as load_input does
        try:
            refs.append(conn.parent(name, as_of.get(name) if as_of else None))
        except dc.NotFoundError:
            missing.append(name)
    if missing:
        context.log.warning(
            f"datom: upstream {dep.to_user_string()} has no table {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''} in project {conn.project_name!r}; "
            f"{len(missing)} table(s) not recorded as parents"
        )
    return refs
