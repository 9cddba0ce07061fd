"""STUDY-001 in Dagster (loaded by ``workspace.yaml``).

* ``dm``, ``ex``, ``lb``, ``ae``: raw domains, onboarded from the inbox by the
  ``datom_inbox_sensor`` (one run per new or changed extract).
* ``adsl``, ``adae``, ``lab_summary``: derived tables, stored through the datom IO manager,
  with integrity and lineage checks; the ``derive`` job rebuilds them (scheduled daily).

The project is ``STUDY_001`` under ``$DATOM_HOME`` (``make demo`` uses ``.demo/datom``).
"""

from dagster import (
    AssetSelection,
    DefaultSensorStatus,
    Definitions,
    ScheduleDefinition,
    define_asset_job,
)
from datom_dagster import (
    DatomIOManager,
    DatomResource,
    build_datom_asset_checks,
    datom_inbox_assets,
    datom_inbox_sensor,
)
from example_project.assets import adae, adsl, lab_summary
from example_project.generator import DOMAINS

PROJECT = "STUDY_001"

raw_domains = datom_inbox_assets(DOMAINS, group_name="raw", name="onboard_raw_domains")
derived = [adsl, adae, lab_summary]
derive_job = define_asset_job("derive", selection=AssetSelection.groups("derived"))

defs = Definitions(
    assets=[raw_domains, *derived],
    asset_checks=build_datom_asset_checks(derived),
    jobs=[derive_job],
    schedules=[ScheduleDefinition(job=derive_job, cron_schedule="0 6 * * *")],
    sensors=[datom_inbox_sensor(raw_domains, default_status=DefaultSensorStatus.RUNNING)],
    resources={
        "datom": DatomResource(project_name=PROJECT),
        "io_manager": DatomIOManager(datom=DatomResource(project_name=PROJECT)),
    },
)
