"""STUDY-001 in Dagster (loaded by ``dg dev`` through the checkout's ``dg.toml``, or by
``workspace.yaml``), built from its dg project.

* ``defs/study001/defs.yaml``: a :class:`datom_dagster.DatomComponent` — project
  ``STUDY_001`` under ``$DATOM_HOME`` (``make demo`` uses ``.demo/datom``), the raw domains
  ``dm``, ``ex``, ``lb``, ``ae`` onboarded from the inbox by ``datom_inbox_sensor`` (one run
  per new or changed extract), the ``datom`` resource and the IO manager, and the checks of
  the derived tables.
* ``defs/derived.py``: ``adsl``, ``adae``, ``lab_summary``, stored through the datom IO
  manager; the ``derive`` job rebuilds them (scheduled daily).

``dg.toml`` tells ``load_from_defs_folder`` where the defs folder is; every datom option on
the definitions is checked as they load.
"""

from pathlib import Path

from dagster import load_from_defs_folder
from datom_dagster import validate_datom_definitions

PROJECT = "STUDY_001"

defs = validate_datom_definitions(load_from_defs_folder(path_within_project=Path(__file__).parent))
