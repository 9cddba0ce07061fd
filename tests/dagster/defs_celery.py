"""The example pipeline on Dagster's celery executor (for ``test_celery.py``).

A module of its own so that the celery workers can rebuild the job by name. The assets
are ``example_project``'s: the raw domains onboarded from an inbox, the derived tables
and their datom checks. Where the inbox is comes from the environment, the way a
deployed code location is configured: ``STUDY_INBOX`` (a folder or ``s3://`` URL) and,
for an S3 inbox off AWS, ``STUDY_S3_ENDPOINT``. The datom resources are configured at
launch, so that the run configuration names the project and each worker's
``$DATOM_HOME`` decides where its own clone lives.
"""

import functools
import os

from dagster_celery import celery_executor

from dagster import (
    AssetSelection,
    Definitions,
    JobDefinition,
    define_asset_job,
)
from datom_dagster import (
    DatomIOManager,
    DatomResource,
    build_datom_asset_checks,
    datom_inbox_assets,
)
from example_project.assets import adae, adsl, lab_summary
from example_project.generator import DOMAINS

JOB = "study"


@functools.cache
def definitions() -> Definitions:
    """The pipeline, its inbox read from the environment (once per process)."""
    endpoint = os.environ.get("STUDY_S3_ENDPOINT")
    raw = datom_inbox_assets(
        DOMAINS,
        inbox=os.environ["STUDY_INBOX"],
        inbox_storage_options={"endpoint_url": endpoint} if endpoint else None,
        group_name="raw",
        name="onboard_raw_domains",
    )
    derived = [adsl, adae, lab_summary]
    return Definitions(
        assets=[raw, *derived],
        asset_checks=build_datom_asset_checks(derived),
        jobs=[define_asset_job(JOB, selection=AssetSelection.all(), executor_def=celery_executor)],
        resources={
            "datom": DatomResource.configure_at_launch(),
            "io_manager": DatomIOManager.configure_at_launch(),
        },
    )


def celery_job() -> JobDefinition:
    """The whole pipeline as one job on the celery executor (for ``reconstructable``)."""
    return definitions().resolve_job_def(JOB)
