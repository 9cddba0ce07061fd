"""Definitions for the locked-cut test on the multiprocess executor.

A module of its own so that the executor's child processes can import the jobs by name.
``raw`` takes its month from run config; ``derived`` is built from it; ``lock`` is a locked
data cut of both and ``cut`` an ordinary one, each in the zero-configuration project and
product repos under ``$DATOM_HOME``.
"""

import pandas as pd

from dagster import (
    Config,
    Definitions,
    JobDefinition,
    asset,
    define_asset_job,
    multiprocess_executor,
)
from datom_dagster import DatomIOManager, datom_data_cut


class Month(Config):
    """The monthly extract to build ``raw`` from."""

    month: int = 1


@asset
def raw(config: Month) -> pd.DataFrame:
    return pd.DataFrame({"id": range(config.month * 2), "month": [config.month] * config.month * 2})


@asset
def derived(raw: pd.DataFrame) -> pd.DataFrame:
    return raw.groupby("month", as_index=False).size()


lock = datom_data_cut("Test lock", [raw, derived], locked=True, tags={"milestone": "lock"})
cut = datom_data_cut("Test cut", [raw, derived])

defs = Definitions(
    assets=[raw, derived, lock, cut],
    jobs=[
        define_asset_job("data", selection=[raw, derived]),
        define_asset_job("lock", selection=[lock]),
        define_asset_job("cut", selection=[cut]),
    ],
    resources={"io_manager": DatomIOManager()},
    # Spawned, not forked from a forkserver: the steps find the project through
    # $DATOM_HOME, which each test sets, and a forkserver another test of this process
    # started earlier would hand its children that test's environment.
    executor=multiprocess_executor.configured({"start_method": {"spawn": {}}}),
)


def data_job() -> JobDefinition:
    """``raw`` and ``derived``, for ``reconstructable``."""
    return defs.resolve_job_def("data")


def lock_job() -> JobDefinition:
    """The locked cut, for ``reconstructable``."""
    return defs.resolve_job_def("lock")


def cut_job() -> JobDefinition:
    """The ordinary cut, for ``reconstructable``."""
    return defs.resolve_job_def("cut")
