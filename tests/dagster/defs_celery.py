"""The example pipeline on Dagster's celery executor (for ``test_celery.py``).

A module of its own so that the celery workers can rebuild the job by name. The assets
are ``example_project``'s: the raw domains onboarded from an inbox, the derived tables
and their datom checks. The deployment is described by the environment, as a code
location's would be, and every process (the run's and each worker's) resolves it itself:

* ``STUDY_BUCKET``, ``STUDY_S3_ENDPOINT``: the shared S3 store (prefix ``studies/s001``);
* ``STUDY_GIT_REMOTE``: the metadata's git remote (its token in ``DATOM_GIT_TOKEN``);
* ``STUDY_INBOX``: the folder or ``s3://`` URL the extracts are dropped into.

Each worker's ``$DATOM_HOME`` decides where its own clone lives.
"""

import functools
import os

from dagster_celery import celery_executor

from dagster import (
    AssetSelection,
    Definitions,
    EnvVar,
    JobDefinition,
    define_asset_job,
)
from datom_dagster import (
    DatomIOManager,
    DatomResource,
    S3Storage,
    build_datom_asset_checks,
    datom_inbox_assets,
)
from example_project.assets import adae, adsl, lab_summary
from example_project.generator import DOMAINS

JOB = "study"
PROJECT = "STUDY_001"
PREFIX = "studies/s001"


@functools.cache
def definitions() -> Definitions:
    """The pipeline, its inbox read from the environment (once per process)."""
    raw = datom_inbox_assets(
        DOMAINS,
        inbox=os.environ["STUDY_INBOX"],
        inbox_storage_options={"endpoint_url": os.environ["STUDY_S3_ENDPOINT"]},
        group_name="raw",
        name="onboard_raw_domains",
    )
    derived = [adsl, adae, lab_summary]
    storage = S3Storage(
        bucket=EnvVar("STUDY_BUCKET"), prefix=PREFIX, endpoint_url=EnvVar("STUDY_S3_ENDPOINT")
    )
    datom = DatomResource(project_name=PROJECT, storage=storage, remote=EnvVar("STUDY_GIT_REMOTE"))
    return Definitions(
        assets=[raw, *derived],
        asset_checks=build_datom_asset_checks(derived),
        jobs=[define_asset_job(JOB, selection=AssetSelection.all(), executor_def=celery_executor)],
        resources={"datom": datom, "io_manager": DatomIOManager(datom=datom)},
    )


def celery_job() -> JobDefinition:
    """The whole pipeline as one job on the celery executor (for ``reconstructable``)."""
    return definitions().resolve_job_def(JOB)
