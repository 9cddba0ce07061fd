"""The derived analysis tables, their ``derive`` job and its daily schedule."""

from dagster import AssetSelection, ScheduleDefinition, define_asset_job
from example_project.assets import adae, adsl, lab_summary

derive_job = define_asset_job("derive", selection=AssetSelection.groups("derived"))
derive_schedule = ScheduleDefinition(job=derive_job, cron_schedule="0 6 * * *")

__all__ = ["adae", "adsl", "derive_job", "derive_schedule", "lab_summary"]
