"""The tables of ``r/lib_data.R``, built independently in Python (pyarrow).

Missing values are nulls from the start, as R's are literal ``NA``: both sides encode the
pinned missing pattern, so both compute the same ``data_sha`` from scratch.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa


def _dates(*values: str | None) -> pa.Array:
    return pa.array([dt.date.fromisoformat(v) if v else None for v in values], pa.date32())


def frame(name: str) -> pa.Table:
    if name == "dm_v1":
        return pa.table(
            {
                "USUBJID": ["S1", "S2", "S3"],
                "AGE": pa.array([34, None, 51], pa.int32()),
                "WEIGHT": pa.array([70.5, None, 88.25], pa.float64()),
                "SEX": ["F", None, "M"],
                "ENROLLED": pa.array([True, False, None], pa.bool_()),
                "RFSTDTC": _dates("2026-01-05", None, "2026-02-11"),
            }
        )
    if name == "dm_v2":
        return pa.table(
            {
                "USUBJID": ["S1", "S2", "S3", "S4"],
                "AGE": pa.array([34, None, 51, 47], pa.int32()),
                "WEIGHT": pa.array([70.5, None, 88.25, 61.0], pa.float64()),
                "SEX": ["F", None, "M", "F"],
                "ENROLLED": pa.array([True, False, None, True], pa.bool_()),
                "RFSTDTC": _dates("2026-01-05", None, "2026-02-11", "2026-03-02"),
            }
        )
    if name == "adsl":
        return pa.table(
            {
                "USUBJID": ["S1", "S2", "S3"],
                "AGEGR": ["<50", None, ">=50"],
                "SAFFL": [True, True, False],
            }
        )
    if name == "adae":
        return pa.table({"USUBJID": ["S1", "S2"], "AESEVN": pa.array([1, 2], pa.int32())})
    if name == "lb":
        return pa.table({"PARAM": ["ALT", "AST", "ALT"], "AVAL": [21.5, None, 40.0]})
    if name == "lb_v2":
        return pa.table({"PARAM": ["ALT", "AST", "ALT", "AST"], "AVAL": [21.5, None, 40.0, 33.25]})
    if name == "lb_v3":
        return pa.table({"PARAM": ["ALT", "ALT"], "AVAL": [None, 19.0]})
    raise KeyError(name)


CSV = {
    "ae": b"USUBJID,AETERM,AESEV,AESTDY\nS1,Headache,MILD,3\nS2,Nausea,,\nS3,Rash,SEVERE,12\n",
}
