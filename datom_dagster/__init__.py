"""datom_dagster: every Dagster asset output becomes a datom version.

Change one line to get content-addressed, pinned, lineage-aware versions of your assets::

    from dagster import Definitions
    from datom_dagster import DatomIOManager

    defs = Definitions(assets=[...], resources={"io_manager": DatomIOManager()})

* :class:`DatomIOManager` stores pandas, polars and pyarrow outputs as datom versions and
  loads inputs (current, or pinned with ``AssetIn(metadata={"datom_version": ...})``);
  each materialization shows ``datom/*`` metadata, and its Dagster data version is the
  table's ``data_sha``.
* :class:`DatomResource` is the same project description as a resource, for asset bodies
  and ops that use datom directly (``datom.connection()``).
* :func:`build_datom_asset_checks` adds integrity and lineage checks to chosen assets.
* :func:`datom_inbox_assets` and :func:`datom_inbox_sensor` onboard extracts dropped into
  an inbox folder (one run per new or changed file).
* :func:`datom_data_cut` pins the exact current versions of chosen assets as a set (a
  data cut, e.g. a database lock); inputs load as of a cut with ``datom_pin(set=...)`` or
  the run tag :data:`AS_OF_SET_TAG`; :func:`datom_data_cut_check` verifies its members.
* :func:`table_name` is the documented mapping from asset key and partition to table name.

With no configuration the project lives under ``$DATOM_HOME`` (default ``~/.datom``).
"""

from datom_dagster._annotations import datom_annotations, datom_pin, validate_datom_definitions
from datom_dagster._change_checks import ROW_COUNT_CHECK_NAME, SCHEMA_CHECK_NAME
from datom_dagster._checks import DATOM_CHECK_NAME, build_datom_asset_checks
from datom_dagster._component import DatomComponent
from datom_dagster._config import (
    DEFAULT_HOME,
    DEFAULT_PROJECT,
    DatomProject,
    DatomResource,
    datom_home,
)
from datom_dagster._cut_check import CUT_CHECK_NAME, datom_data_cut_check
from datom_dagster._data_cut import datom_data_cut
from datom_dagster._inbox import datom_inbox_assets, datom_inbox_sensor
from datom_dagster._io_manager import DatomIOManager
from datom_dagster._naming import TABLE_METADATA_KEY, table_name
from datom_dagster._set_pins import AS_OF_SET_TAG
from datom_dagster._storage import DefaultStorage, LocalStorage, S3Storage, UrlStorage

__all__ = [
    "AS_OF_SET_TAG",
    "CUT_CHECK_NAME",
    "datom_data_cut",
    "datom_data_cut_check",
    "DATOM_CHECK_NAME",
    "DEFAULT_HOME",
    "ROW_COUNT_CHECK_NAME",
    "SCHEMA_CHECK_NAME",
    "DEFAULT_PROJECT",
    "TABLE_METADATA_KEY",
    "DatomComponent",
    "DatomIOManager",
    "DatomProject",
    "DefaultStorage",
    "LocalStorage",
    "S3Storage",
    "UrlStorage",
    "DatomResource",
    "build_datom_asset_checks",
    "datom_annotations",
    "datom_pin",
    "validate_datom_definitions",
    "datom_home",
    "datom_inbox_assets",
    "datom_inbox_sensor",
    "table_name",
]
