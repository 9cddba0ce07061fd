"""STUDY-001's derived analysis tables, computed from the onboarded raw domains.

Plain pandas functions: datom versions every output through the IO manager and records
the exact raw versions each one read as its lineage parents. Each declares its key, so
every materialization says how many rows were added, removed and changed by key.
"""

import pandas as pd

from dagster import asset
from datom_dagster import datom_annotations

GROUP = "derived"


@asset(group_name=GROUP, kinds={"pandas", "datom"}, metadata=datom_annotations(key=["USUBJID"]))
def adsl(dm: pd.DataFrame, ex: pd.DataFrame) -> pd.DataFrame:
    """Subject-level analysis dataset: demographics plus treatment start, end and total dose."""
    exposure = (
        ex.groupby("USUBJID")
        .agg(TRTSDT=("EXSTDTC", "min"), TRTEDT=("EXENDTC", "max"), TOTDOSE=("EXDOSE", "sum"))
        .reset_index()
    )
    out = dm.merge(exposure, on="USUBJID", how="left")
    out["SAFFL"] = out["TRTSDT"].notna().map({True: "Y", False: "N"})
    out["AGEGR1"] = pd.cut(
        out["AGE"], [0, 40, 65, 200], labels=["<40", "40-64", ">=65"], right=False
    ).astype(str)
    columns = ["STUDYID", "USUBJID", "SITEID", "AGE", "AGEGR1", "SEX", "RACE", "ARM"]
    return out[columns + ["TRTSDT", "TRTEDT", "TOTDOSE", "SAFFL"]].sort_values(
        "USUBJID", ignore_index=True
    )


@asset(
    group_name=GROUP,
    kinds={"pandas", "datom"},
    metadata=datom_annotations(key=["USUBJID", "AESEQ"]),
)
def adae(ae: pd.DataFrame, adsl: pd.DataFrame) -> pd.DataFrame:
    """Adverse events with treatment arm, study day and the treatment-emergent flag."""
    out = ae.merge(adsl[["USUBJID", "ARM", "TRTSDT"]], on="USUBJID", how="left")
    start = pd.to_datetime(out["AESTDTC"])
    first_dose = pd.to_datetime(out["TRTSDT"])
    out["ASTDY"] = (start - first_dose).dt.days + 1
    out["TRTEMFL"] = (start >= first_dose).map({True: "Y", False: "N"})
    columns = [
        "USUBJID",
        "AESEQ",
        "AEDECOD",
        "AESEV",
        "AESER",
        "AESTDTC",
        "ARM",
        "ASTDY",
        "TRTEMFL",
    ]
    return out[columns].sort_values(["USUBJID", "AESEQ"], ignore_index=True)


@asset(
    group_name=GROUP,
    kinds={"pandas", "datom"},
    metadata=datom_annotations(key=["ARM", "LBTESTCD", "VISITNUM"]),
)
def lab_summary(lb: pd.DataFrame, adsl: pd.DataFrame) -> pd.DataFrame:
    """Lab results summarised by arm, test and visit: n, mean and standard deviation."""
    data = lb.merge(adsl[["USUBJID", "ARM"]], on="USUBJID", how="inner")
    summary = (
        data.groupby(["ARM", "LBTESTCD", "VISITNUM"])["LBSTRESN"]
        .agg(N="count", MEAN="mean", SD="std")
        .reset_index()
    )
    return summary.sort_values(["ARM", "LBTESTCD", "VISITNUM"], ignore_index=True)
