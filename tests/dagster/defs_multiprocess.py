"""Definitions for the multiprocess-executor test.

A module of its own so that the executor's child processes can import the job by name.
Eight independent assets (materialised concurrently) and one that loads them all.
"""

import time
from pathlib import Path

import pandas as pd

from dagster import (
    AssetIn,
    AssetsDefinition,
    AssetSelection,
    Config,
    Definitions,
    JobDefinition,
    asset,
    define_asset_job,
    multiprocess_executor,
)
from datom_dagster import DatomIOManager, DatomResource

WIDTH = 8


class Barrier(Config):
    """A directory where each part announces itself, then waits for all the others."""

    directory: str


def _part(i: int) -> AssetsDefinition:
    @asset(name=f"part_{i}")
    def _asset(config: Barrier) -> pd.DataFrame:
        # All parts are running at once before any returns: their writes really race.
        Path(config.directory, str(i)).touch()
        deadline = time.monotonic() + 120
        while len(list(Path(config.directory).iterdir())) < WIDTH:
            assert time.monotonic() < deadline, "the other parts never started"
            time.sleep(0.02)
        return pd.DataFrame({"part": [i] * 50, "row": range(50)})

    return _asset


PARTS = [_part(i) for i in range(WIDTH)]


@asset(ins={f"part_{i}": AssetIn() for i in range(WIDTH)})
def combined(**parts: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([parts[f"part_{i}"] for i in range(WIDTH)], ignore_index=True)


ASSETS = [*PARTS, combined]

_project = DatomResource.configure_at_launch()

defs = Definitions(
    assets=ASSETS,
    jobs=[define_asset_job("all_assets", selection=AssetSelection.all())],
    resources={"datom": _project, "io_manager": DatomIOManager(datom=_project)},
    executor=multiprocess_executor.configured(
        {
            "max_concurrent": WIDTH,
            # Children fork from a server that has imported this module (and so dagster,
            # pandas and datom) once: far cheaper than a fresh interpreter per step.
            "start_method": {"forkserver": {"preload_modules": [__name__]}},
        }
    ),
)


def mp_job() -> JobDefinition:
    """The job, for ``reconstructable``."""
    return defs.resolve_job_def("all_assets")
