"""STUDY-001's database lock: the data as of month 3, pinned as one citable set.

``db_lock`` writes the set ``STUDY-001 DB lock`` (its own product repo, next to the study's
project under ``$DATOM_HOME``) of the exact current versions of every raw and derived
table. It is locked: once recorded, materializing it again fails rather than move any
member to newer data, and it is never shown as stale. ``db_lock_check`` verifies that its members still resolve and match their bytes.
Re-run the derivations as of the lock with the run tag ``datom/as_of_set``.
"""

from datom_dagster import datom_data_cut, datom_data_cut_check

LOCK = "STUDY-001 DB lock"
LOCKED_TABLES = ["dm", "ex", "lb", "ae", "adsl", "adae", "lab_summary"]

db_lock = datom_data_cut(
    LOCK, LOCKED_TABLES, tags={"milestone": "database lock", "study": "STUDY-001"}, locked=True
)
db_lock_check = datom_data_cut_check(LOCK)

__all__ = ["LOCK", "LOCKED_TABLES", "db_lock", "db_lock_check"]
