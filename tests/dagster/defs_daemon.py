"""Definitions the real `dagster-daemon` loads in test_daemon.py (project under $DATOM_HOME)."""

import os

from dagster import DefaultSensorStatus, Definitions
from datom_dagster import DatomResource, datom_inbox_assets, datom_inbox_sensor

raw = datom_inbox_assets(["dm"])
sensor = datom_inbox_sensor(
    raw, minimum_interval_seconds=1, default_status=DefaultSensorStatus.RUNNING
)
defs = Definitions(
    assets=[raw],
    sensors=[sensor],
    resources={"datom": DatomResource(project_name="STUDY_001", home=os.environ["DATOM_HOME"])},
)
