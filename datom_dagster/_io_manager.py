"""``DatomIOManager``: every asset output becomes a content-addressed, pinned datom version.

What it records and how to use it is in the docstring of :class:`DatomIOManager`.
"""

from collections.abc import Mapping
from typing import Any

import datom_core as dc
from dagster import (
    ConfigurableIOManager,
    DagsterInvariantViolationError,
    Failure,
    InputContext,
    OutputContext,
)
from datom_dagster import _dagster_internals as internals
from datom_dagster._annotations import asset_option_problems, input_option_problems, plain
from datom_dagster._config import DatomResource, datom_home
from datom_dagster._lineage import output_parents, record_loaded
from datom_dagster._metadata import Written, materialization_metadata, written_line
from datom_dagster._naming import KEY_METADATA_KEY, TABLE_METADATA_KEY, table_name
from datom_dagster._set_pins import open_pinned_set, set_pin_of, set_pins
from datom_dagster._type_handlers import (
    InputSpec,
    concat,
    from_read,
    input_spec,
    output_table,
    read_kind,
)

__all__ = ["DatomIOManager"]

_NO_RETRY = (dc.UnsupportedInputError, dc.InvalidNameError, dc.InvalidArgumentError)


class DatomIOManager(ConfigurableIOManager):
    """Stores asset outputs as datom versions and loads inputs from datom.

    Storing (``handle_output``): the output is written with :meth:`datom_core.Connection.write`
    to the table :func:`~datom_dagster.table_name` names; the commit message and the version's
    history entry name the asset, the partition and the run. The materialization carries
    ``datom/version``, ``datom/data_sha``, ``datom/parquet_sha``, ``datom/change``, the
    parents, the change summary against the previous version and Dagster's row count, column
    schema and URI (the user guide lists them), and its Dagster data version is the table's
    ``data_sha``: an identical result leaves downstream assets fresh, a changed one marks them
    stale. One INFO line per written table names the table, its version and the change (the
    materialization's ``datom/summary``), so the run log alone says what a run wrote. A step that materialises several partitions at
    once (a single-run backfill) must return a dict ``{partition_key: table}``; each partition
    gets its own metadata, and Dagster computes the data version as usual (its data-version
    record is per asset, not per partition). Unsupported outputs and unhashable tables fail
    the step with the recourse, without retries, and nothing is written.

    Loading (``load_input``): the current version by default. Input metadata
    (``AssetIn(metadata={...})``) refines it:

    * ``datom_version``: a version id or unique prefix to pin (for several partitions, a dict
      ``{partition_key: version}``);
    * ``datom_set``: ``"<project>/<set>[@<version>]"``, the versions a set (a data cut) pins;
      the run tag ``datom/as_of_set`` (:data:`~datom_dagster.AS_OF_SET_TAG`) pins every input
      of a run so;
    * ``columns``: the columns to read;
    * ``datom_concat``: ``True`` to get several partitions as one concatenated table;
    * ``allow_missing_partitions``: ``True`` to skip partitions that were never stored.

    The value has the type the input is annotated with: ``pd.DataFrame`` (also when not
    annotated), ``pl.DataFrame``, ``pl.LazyFrame`` or ``pa.Table``.
    Several partitions come as a dict keyed by partition key, unless the input is annotated
    with a table type or ``datom_concat`` is set: then as one table, partitions in order.

    ``DatomIOManager()`` works with no configuration (a local project under
    ``$DATOM_HOME``); ``DatomIOManager(datom=DatomResource(...))`` points it at any project,
    the same one the resource gives asset bodies.
    """

    datom: DatomResource

    def __init__(self, **data: Any) -> None:
        # A nested resource cannot have a Dagster default: supply the zero-config project
        # (only when none is given: Dagster builds this object again for every run).
        if "datom" not in data:
            data["datom"] = DatomResource()
        super().__init__(**data)

    def connection(self) -> dc.Connection:
        """The developer connection of the configured project."""
        return self.datom.connection()

    # -- storing ----------------------------------------------------------------------------

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        """Write ``obj`` as the new version of the asset's table (one per partition)."""
        label = _asset_label(context)
        problems = asset_option_problems(context.definition_metadata or {})
        if problems:  # definitions not checked at load: refuse before anything is written
            raise Failure(description=f"asset {label}: " + "; ".join(problems), allow_retries=False)
        try:
            tables = _output_tables(context, obj, label)
        except dc.DatomError as e:
            raise Failure(description=str(e), allow_retries=False) from e
        conn = self.connection()
        loaded = output_parents(context, self)
        names = {pk: self._output_table_name(context, pk) for pk in tables}
        key = _key_option(context)
        single = len(tables) == 1
        for pk, table in tables.items():
            try:
                # Converted once: the write and the column schema shown use the same table.
                stored = dc.prepare_table(table, table=names[pk])
                result = conn.write(
                    names[pk],
                    stored,
                    message=_commit_message(context, label, pk),
                    parents=[item.ref for item in loaded],
                    metadata=_custom(context),
                    history_extra=_history_extra(context, label, pk),
                )
            except _NO_RETRY as e:
                raise Failure(description=str(e), allow_retries=False) from e
            written = Written(
                result.table,
                result.version,
                result.change,
                result.commit,
                result.metadata,
                result.replaced,
            )
            metadata = materialization_metadata(
                conn,
                written,
                stored.schema,
                key=key,
                parent_assets=[item.asset_key for item in loaded],
            )
            context.log.info(written_line(result.table, result.version, metadata))
            if single:
                internals.add_materialization_metadata(context, metadata)
                internals.set_data_version(context, result.data_sha)
            else:
                internals.add_materialization_metadata(context, metadata, str(pk))

    def _output_table_name(self, context: OutputContext, partition_key: str | None) -> str:
        try:
            return table_name(
                context.asset_key,
                partition_key,
                partitions_def=context.asset_partitions_def if partition_key is not None else None,
                override=plain((context.definition_metadata or {}).get(TABLE_METADATA_KEY)),
            )
        except dc.InvalidNameError as e:
            raise Failure(description=str(e), allow_retries=False) from e

    # -- loading ----------------------------------------------------------------------------

    def load_input(self, context: InputContext) -> Any:
        """The upstream asset's table(s): current versions unless pinned (see the class)."""
        if not context.has_asset_key:
            raise dc.UnsupportedInputError(
                f"input {context.name!r}: DatomIOManager loads asset inputs only; give the "
                "upstream output an asset key, or load it with another IO manager"
            )
        label = context.asset_key.to_user_string()
        options = {k: plain(v) for k, v in (context.definition_metadata or {}).items()}
        problems = input_option_problems(options)
        if problems:
            raise dc.InvalidArgumentError(f"input {label}: " + "; ".join(problems))
        spec = input_spec(_annotation(context), label)
        partitioned = context.has_asset_partitions
        keys: list[str | None] = list(context.asset_partition_keys) if partitioned else [None]
        pins = _pins(options.get("datom_version"), keys, label)
        upstream = context.upstream_output
        override = (
            (upstream.definition_metadata or {}).get(TABLE_METADATA_KEY) if upstream else None
        )
        conn = self.connection()
        names = {
            pk: table_name(
                context.asset_key,
                pk,
                partitions_def=context.asset_partitions_def if partitioned else None,
                override=override,
            )
            for pk in keys
        }
        several = len(keys) > 1
        set_pin = None if "datom_version" in options else set_pin_of(context, options)
        if set_pin is not None:  # as of a set: the versions (and partitions) it lists
            cut = open_pinned_set(set_pin, conn, datom_home(self.datom.home))
            pins = set_pins(cut, conn.project_name, names, label)
            keys = [pk for pk in keys if pk in pins]
        loaded: dict[str | None, Any] = {}
        refs = []
        for pk in keys:
            name = names[pk]
            try:
                # Resolved once: the record serves the read and the parent (2 store reads).
                version = conn.version(name, pins.get(pk))
            except dc.NotFoundError:
                if partitioned and options.get("allow_missing_partitions"):
                    continue
                raise
            data = conn.read(
                name, version, columns=options.get("columns"), as_=read_kind(spec.kind)
            )
            loaded[pk] = from_read(data, spec.kind)
            refs.append(conn.parent(name, version))
        record_loaded(context, refs)
        return _shape(loaded, spec, several, partitioned, bool(options.get("datom_concat")), label)


def _asset_label(context: OutputContext) -> str:
    if not context.has_asset_key:
        raise Failure(
            description=(
                f"output {context.name!r}: DatomIOManager stores asset outputs only; give the "
                "output an asset key (define it as an asset), or use another IO manager"
            ),
            allow_retries=False,
        )
    return context.asset_key.to_user_string()


def _output_tables(context: OutputContext, obj: Any, label: str) -> dict[str | None, Any]:
    """The table to write per partition (None: unpartitioned), all checked before any write."""
    if not context.has_asset_partitions:
        return {None: output_table(obj, label)}
    keys = list(context.asset_partition_keys)
    if len(keys) == 1 and not isinstance(obj, Mapping):
        return {keys[0]: output_table(obj, label)}
    if not isinstance(obj, Mapping) or set(map(str, obj)) != set(map(str, keys)):
        got = sorted(map(str, obj)) if isinstance(obj, Mapping) else type(obj).__qualname__
        raise dc.InvalidArgumentError(
            f"asset {label}: this step materialises {len(keys)} partition(s) "
            f"({keys[0]} ... {keys[-1]}); return a dict {{partition_key: table}} with one "
            f"table per partition (got {got}). Nothing was written."
        )
    by_key = {str(k): v for k, v in obj.items()}
    tables: dict[str | None, Any] = {
        k: output_table(by_key[str(k)], f"{label} [{k}]") for k in keys
    }
    reports = {k: dc.check_hashable(t) for k, t in tables.items()}
    bad = {k: r for k, r in reports.items() if not r.ok}
    if bad:
        details = "\n".join(f"partition {k}:\n{r}" for k, r in bad.items())
        raise dc.UnhashableColumnsError(
            f"asset {label}: datom cannot hash {len(bad)} partition(s); nothing was written. "
            f"Fix each column marked unsupported:\n{details}"
        )
    return tables


def _key_option(context: OutputContext) -> list[str] | None:
    value = plain((context.definition_metadata or {}).get(KEY_METADATA_KEY))
    return [str(v) for v in value] if value else None


def _custom(context: OutputContext) -> dict[str, Any] | None:
    description = plain((context.definition_metadata or {}).get("datom_description"))
    return {"description": description} if description else None


def _annotation(context: InputContext) -> Any:
    try:
        return context.dagster_type.typing_type
    except DagsterInvariantViolationError:  # a hand-built context without a type: pandas
        return Any


def _pins(version: Any, keys: list[str | None], label: str) -> dict[str | None, str | None]:
    if version is None:
        return {}
    if isinstance(version, Mapping):
        return {k: version.get(k) for k in keys}
    if len(keys) > 1:
        raise dc.InvalidArgumentError(
            f"input {label}: datom_version pins one version but {len(keys)} partitions are "
            "loaded; give a dict {partition_key: version} instead"
        )
    return {keys[0]: str(version)}


def _shape(
    loaded: dict[str | None, Any],
    spec: InputSpec,
    several: bool,
    partitioned: bool,
    concat_requested: bool,
    label: str,
) -> Any:
    if not partitioned:
        if spec.as_dict:
            raise dc.InvalidArgumentError(
                f"input {label}: a dict annotation asks for several partitions, but "
                f"{label} is not partitioned; annotate the input with a table type"
            )
        return loaded[None]
    if spec.as_dict:
        if concat_requested:
            raise dc.InvalidArgumentError(
                f"input {label}: datom_concat asks for one table but the input is annotated "
                "as a dict; choose one"
            )
        return {str(k): v for k, v in loaded.items()}
    if not loaded:
        raise dc.NotFoundError(
            f"input {label}: none of the requested partitions is stored in datom; "
            "materialize them first, or annotate the input as a dict to accept none"
        )
    if not several and not concat_requested:
        return next(iter(loaded.values()))
    # Several partitions requested: the shape depends on the request, not on how many exist.
    if concat_requested or spec.annotated:
        return concat(list(loaded.values()), spec.kind)
    return {str(k): v for k, v in loaded.items()}


def _commit_message(context: OutputContext, label: str, partition_key: str | None) -> str:
    return f"dagster: materialize {label}{_partition_note(partition_key)} (run {_run_id(context)})"


def _history_extra(context: OutputContext, label: str, partition_key: str | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"dagster_asset_key": label, "dagster_run_id": _run_id(context)}
    if partition_key is not None:
        extra["dagster_partition"] = str(partition_key)
    try:
        extra["dagster_step_key"] = context.step_key
        extra["dagster_job"] = context.job_name
    except Exception:  # hand-built contexts have neither
        pass
    return extra


def _run_id(context: OutputContext) -> str | None:
    try:
        return context.run_id
    except Exception:  # a hand-built context without a run
        return None


def _partition_note(partition_key: str | None) -> str:
    return f" [partition {partition_key}]" if partition_key is not None else ""
