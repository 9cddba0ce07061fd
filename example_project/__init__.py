"""STUDY-001: an example clinical-trial project on datom and Dagster."""
