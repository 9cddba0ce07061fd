"""Deterministic raw data for STUDY-001, a made-up 12-month clinical trial.

The study's EDC system exports SDTM-like domains at the end of every month. Each export
is cumulative: it holds everything entered up to that cut-off. :func:`study_tables` gives
the export of one month as DataFrames, :func:`drop_month` writes it into an inbox folder
as files, the way the EDC would deliver them::

    python -m example_project.generator drop --month 3 --inbox ./inbox
    python -m example_project.generator show --month 3

How the story is built, so that each month's delivery means something downstream:

* 48 subjects enrol over months 1-3 (16 a month), so ``dm`` grows until month 3 and is
  identical from then on; the other domains keep growing.
* The whole study (months 1-12) is generated once from fixed seeds; a month's export is
  the rows dated on or before its cut-off. Rows already delivered therefore never change,
  with one exception a real EDC would also produce: an ALT result of month 1 was entered
  with a decimal slip and is corrected in the month-3 export (:func:`lb_correction`).
* Adverse events either resolve within the month they start or stay ongoing (no
  ``AEENDTC``) to the end of the study, so an event's row is complete when first exported.

Determinism: no wall clock, no global random state; the same numpy version gives the
same frames and files (numpy does not promise identical random streams across versions).
"""

from __future__ import annotations

import argparse
import calendar
import datetime as dt
import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from example_project._extract_files import EXTENSIONS, write_extract

__all__ = [
    "DEFAULT_FORMATS",
    "DOMAINS",
    "MONTHS",
    "STUDYID",
    "SUBJECTS",
    "LabCorrection",
    "cutoff_date",
    "drop_month",
    "lb_correction",
    "main",
    "study_tables",
]

STUDYID = "STUDY-001"
SUBJECTS = 48
DOMAINS = ("dm", "ex", "lb", "ae")
#: Number of monthly cut-offs; month ``m`` ends on the last day of month ``m`` of 2024.
MONTHS = 12
#: File format of each domain's extract when :func:`drop_month` is given none.
DEFAULT_FORMATS: Mapping[str, str] = {"dm": "csv", "ex": "csv", "lb": "xpt", "ae": "sav"}

_YEAR = 2024
_ENROL_MONTHS = 3
_SEED = 20240101
# Country-prefixed so CSV readers keep them as text (a bare "101" would become an int).
_SITES = ("US01", "US02", "DE01", "FR01")
_ARMS = (("Placebo", "PLACEBO", 0.0), ("Drug 10mg", "DRUGX", 10.0), ("Drug 20mg", "DRUGX", 20.0))
_RACES = ("WHITE", "BLACK OR AFRICAN AMERICAN", "ASIAN", "AMERICAN INDIAN OR ALASKA NATIVE")
# testcd: (name, unit, mean, sd); ALT and AST also rise with dose (see _lab_table).
_LAB_TESTS = {
    "ALT": ("Alanine Aminotransferase", "U/L", 24.0, 6.0),
    "AST": ("Aspartate Aminotransferase", "U/L", 23.0, 5.0),
    "HGB": ("Hemoglobin", "g/dL", 14.0, 1.1),
    "GLUC": ("Glucose", "mg/dL", 95.0, 9.0),
}
# (verbatim term, dictionary-derived term, relative frequency)
_AE_TERMS = (
    ("HEADACHE", "Headache", 5),
    ("NAUSEA", "Nausea", 4),
    ("FEELING TIRED", "Fatigue", 3),
    ("DIZZY", "Dizziness", 2),
    ("RASH ON FOREARMS", "Rash", 2),
    ("DIARRHOEA", "Diarrhoea", 2),
    ("COMMON COLD", "Nasopharyngitis", 3),
    ("ELEVATED LIVER ENZYMES", "Alanine aminotransferase increased", 1),
)
_CORRECTED_IN_MONTH = 3


@dataclass(frozen=True)
class LabCorrection:
    """The one result the EDC corrects: wrong in exports before ``month``, right from it on."""

    usubjid: str
    visitnum: int
    lbtestcd: str
    erroneous: float
    corrected: float
    month: int


def cutoff_date(month: int) -> dt.date:
    """The data cut-off of a monthly export: the last day of ``month`` (1-12) of 2024."""
    _check_month(month)
    return dt.date(_YEAR, month, calendar.monthrange(_YEAR, month)[1])


def study_tables(month: int) -> dict[str, pd.DataFrame]:
    """The cumulative export at cut-off ``month`` (1-12): one fresh DataFrame per domain.

    Keys are :data:`DOMAINS`. Date columns hold ``datetime.date`` objects (``None`` where
    missing); numeric columns are int64 or float64; text columns are strings.
    """
    cutoff = cutoff_date(month)
    full = _full_study()
    dm = full["dm"]
    tables = {
        "dm": dm[dm["RFSTDTC"] <= cutoff],
        "ex": full["ex"][full["ex"]["EXSTDTC"] <= cutoff],
        "lb": full["lb"][full["lb"]["LBDTC"] <= cutoff],
        "ae": full["ae"][full["ae"]["AESTDTC"] <= cutoff],
    }
    tables = {name: frame.reset_index(drop=True).copy() for name, frame in tables.items()}
    fix = lb_correction()
    if month < fix.month:
        lb = tables["lb"]
        row = (
            (lb["USUBJID"] == fix.usubjid)
            & (lb["VISITNUM"] == fix.visitnum)
            & (lb["LBTESTCD"] == fix.lbtestcd)
        )
        lb.loc[row, "LBSTRESN"] = fix.erroneous
    return tables


@functools.cache
def lb_correction() -> LabCorrection:
    """The documented lab correction: first subject's baseline ALT, a decimal slip (x10)."""
    lb = _full_study()["lb"]
    first = lb[(lb["VISITNUM"] == 1) & (lb["LBTESTCD"] == "ALT")].iloc[0]
    corrected = float(first["LBSTRESN"])
    return LabCorrection(
        usubjid=str(first["USUBJID"]),
        visitnum=1,
        lbtestcd="ALT",
        erroneous=round(corrected * 10, 1),
        corrected=corrected,
        month=_CORRECTED_IN_MONTH,
    )


def drop_month(
    month: int, inbox: str | Path, *, formats: Mapping[str, str] | None = None
) -> list[Path]:
    """Write the export of ``month`` into ``inbox`` (created if missing), one file a domain.

    Files are named ``<domain>.<ext>``; ``formats`` maps domains to extensions
    (``csv``, ``xpt``, ``sav``) and overrides :data:`DEFAULT_FORMATS` per domain. Each file
    replaces the domain's file of the previous month, including one written in another of
    those formats. The same month always gives the same bytes. Returns the written paths,
    in :data:`DOMAINS` order.
    """
    chosen = {**DEFAULT_FORMATS, **(formats or {})}
    unknown = sorted(set(chosen) - set(DOMAINS))
    if unknown:
        raise ValueError(f"formats names unknown domains {unknown}; domains are {DOMAINS}")
    for domain, ext in chosen.items():
        if ext not in EXTENSIONS:
            raise ValueError(f"format {ext!r} for {domain} is not one of {sorted(EXTENSIONS)}")
    tables = study_tables(month)
    folder = Path(inbox)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for domain in DOMAINS:
        path = folder / f"{domain}.{chosen[domain]}"
        write_extract(tables[domain], path, domain=domain)
        for other in EXTENSIONS - {chosen[domain]}:
            (folder / f"{domain}.{other}").unlink(missing_ok=True)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``drop --month N --inbox PATH [--format DOMAIN=EXT ...]``, ``show --month N``."""
    parser = argparse.ArgumentParser(
        prog="python -m example_project.generator",
        description=f"Monthly EDC exports of {STUDYID} (deterministic demo data).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    drop = commands.add_parser("drop", help="write month N's extracts into an inbox folder")
    drop.add_argument("--month", type=int, required=True, choices=range(1, MONTHS + 1))
    drop.add_argument("--inbox", type=Path, required=True)
    drop.add_argument(
        "--format",
        action="append",
        default=[],
        metavar="DOMAIN=EXT",
        help=f"file format of one domain (default {dict(DEFAULT_FORMATS)})",
    )
    show = commands.add_parser("show", help="print the row counts of month N's extracts")
    show.add_argument("--month", type=int, required=True, choices=range(1, MONTHS + 1))
    args = parser.parse_args(argv)

    if args.command == "show":
        print(f"{STUDYID} export, cut-off {cutoff_date(args.month).isoformat()}")
        for domain, frame in study_tables(args.month).items():
            print(f"{domain:<4}{len(frame):>6} rows")
        return 0
    formats: dict[str, str] = {}
    for item in args.format:
        domain, sep, ext = item.partition("=")
        if not sep:
            parser.error(f"--format wants DOMAIN=EXT, got {item!r}")
        formats[domain.strip().lower()] = ext.strip().lower().lstrip(".")
    try:
        paths = drop_month(args.month, args.inbox, formats=formats)
    except ValueError as e:
        parser.error(str(e))
    for path in paths:
        print(path)
    return 0


def _check_month(month: int) -> None:
    if isinstance(month, bool) or not isinstance(month, int) or not 1 <= month <= MONTHS:
        raise ValueError(f"month must be an integer from 1 to {MONTHS}, got {month!r}")


def _rng(domain: str) -> np.random.Generator:
    # One independent stream per domain: changing how one domain draws leaves the others as is.
    return np.random.default_rng([_SEED, DOMAINS.index(domain)])


def _month_end(month: int) -> dt.date:
    return dt.date(_YEAR, month, calendar.monthrange(_YEAR, month)[1])


@functools.cache
def _full_study() -> dict[str, pd.DataFrame]:
    # Cached and never handed out: study_tables copies what it returns.
    dm, last_month = _demographics()
    ex = _exposure(dm, last_month)
    return {"dm": dm, "ex": ex, "lb": _lab_table(dm, last_month), "ae": _adverse_events(dm)}


def _demographics() -> tuple[pd.DataFrame, dict[str, int]]:
    """All 48 subjects, and the last month each one is on treatment."""
    rng = _rng("dm")
    per_month = SUBJECTS // _ENROL_MONTHS
    enrol_month = np.repeat(np.arange(1, _ENROL_MONTHS + 1), per_month)
    days = np.concatenate([np.sort(rng.choice(np.arange(1, 29), per_month)) for _ in range(3)])
    arms = rng.permutation(np.repeat(np.arange(len(_ARMS)), SUBJECTS // len(_ARMS)))
    sites = rng.choice(len(_SITES), SUBJECTS, p=[0.35, 0.25, 0.2, 0.2])
    usubjid = [f"{STUDYID}-{_SITES[s]}-{i + 1:03d}" for i, s in enumerate(sites)]
    dm = pd.DataFrame(
        {
            "STUDYID": [STUDYID] * SUBJECTS,
            "USUBJID": usubjid,
            "SITEID": [_SITES[s] for s in sites],
            "AGE": rng.integers(18, 76, SUBJECTS).astype("int64"),
            "SEX": rng.choice(["F", "M"], SUBJECTS).tolist(),
            "RACE": rng.choice(_RACES, SUBJECTS, p=[0.6, 0.2, 0.15, 0.05]).tolist(),
            "ARM": [_ARMS[a][0] for a in arms],
            "RFSTDTC": [dt.date(_YEAR, m, d) for m, d in zip(enrol_month, days, strict=True)],
        }
    )
    # A few subjects stop treatment early; everyone else stays on it to the end of the study.
    last_month = dict.fromkeys(usubjid, MONTHS)
    for i in rng.choice(SUBJECTS, 5, replace=False):
        last_month[usubjid[i]] = int(rng.integers(enrol_month[i] + 2, MONTHS))
    return dm, last_month


def _arm(arm_name: str) -> tuple[str, str, float]:
    return next(arm for arm in _ARMS if arm[0] == arm_name)


def _exposure(dm: pd.DataFrame, last_month: dict[str, int]) -> pd.DataFrame:
    """One row per subject per calendar month on treatment."""
    rows = []
    for subj in dm.itertuples(index=False):
        _, extrt, dose = _arm(subj.ARM)
        for seq, month in enumerate(range(subj.RFSTDTC.month, last_month[subj.USUBJID] + 1), 1):
            start = subj.RFSTDTC if seq == 1 else dt.date(_YEAR, month, 1)
            rows.append((STUDYID, subj.USUBJID, seq, extrt, dose, "mg", start, _month_end(month)))
    columns = ["STUDYID", "USUBJID", "EXSEQ", "EXTRT", "EXDOSE", "EXDOSU", "EXSTDTC", "EXENDTC"]
    return pd.DataFrame(rows, columns=columns).astype({"EXSEQ": "int64", "EXDOSE": "float64"})


def _lab_table(dm: pd.DataFrame, last_month: dict[str, int]) -> pd.DataFrame:
    """Four tests at baseline and at each monthly visit while on treatment."""
    rng = _rng("lb")
    rows = []
    for subj in dm.itertuples(index=False):
        dose = _arm(subj.ARM)[2]
        # Each subject has their own normal level; visits scatter around it.
        level = {cd: rng.normal(mean, sd) for cd, (_, _, mean, sd) in _LAB_TESTS.items()}
        if subj.SEX == "F":
            level["HGB"] -= 1.2
        first, last = subj.RFSTDTC.month, last_month[subj.USUBJID]
        for visitnum, month in enumerate(range(first, last + 1), 1):
            when = dt.date(_YEAR, month, subj.RFSTDTC.day)
            for cd, (name, unit, _, sd) in _LAB_TESTS.items():
                value = level[cd] + rng.normal(0.0, sd / 3)
                if cd in ("ALT", "AST"):
                    value += 0.08 * dose * (visitnum - 1)  # the drug strains the liver a bit
                # About 2% of samples are unusable (haemolysed, lost); never the baseline ALT
                # of the first subject, which is the corrected value of the story.
                missing = rng.random() < 0.02 and not (visitnum == 1 and cd == "ALT")
                result = np.nan if missing else round(float(value), 1)
                rows.append((STUDYID, subj.USUBJID, cd, name, result, unit, visitnum, when))
    columns = ["STUDYID", "USUBJID", "LBTESTCD", "LBTEST", "LBSTRESN", "LBSTRESU"]
    columns += ["VISITNUM", "LBDTC"]
    return pd.DataFrame(rows, columns=columns).astype({"LBSTRESN": "float64", "VISITNUM": "int64"})


def _adverse_events(dm: pd.DataFrame) -> pd.DataFrame:
    """Random events; each resolves within its start month or stays ongoing (no end date)."""
    rng = _rng("ae")
    weights = np.array([w for _, _, w in _AE_TERMS], dtype=float)
    rows = []
    for subj in dm.itertuples(index=False):
        events = []
        for month in range(subj.RFSTDTC.month, MONTHS + 1):
            month_end = _month_end(month)
            first_day = subj.RFSTDTC.day if month == subj.RFSTDTC.month else 1
            for _ in range(rng.poisson(0.3)):
                term, decod, _ = _AE_TERMS[rng.choice(len(_AE_TERMS), p=weights / weights.sum())]
                start = dt.date(_YEAR, month, int(rng.integers(first_day, month_end.day + 1)))
                sev = str(rng.choice(["MILD", "MODERATE", "SEVERE"], p=[0.6, 0.3, 0.1]))
                serious = "Y" if rng.random() < (0.4 if sev == "SEVERE" else 0.02) else "N"
                ongoing = rng.random() < 0.1
                # Up to two weeks, but never past the month end (see the module docstring).
                days = int(rng.integers(0, min(14, month_end.day - start.day + 1)))
                end = None if ongoing else start + dt.timedelta(days=days)
                events.append((start, term, decod, sev, serious, end))
        events.sort(key=lambda e: e[0])  # stable: same-day events keep their draw order
        for seq, (start, term, decod, sev, serious, end) in enumerate(events, 1):
            rows.append((STUDYID, subj.USUBJID, seq, term, decod, sev, serious, start, end))
    columns = ["STUDYID", "USUBJID", "AESEQ", "AETERM", "AEDECOD", "AESEV", "AESER"]
    columns += ["AESTDTC", "AEENDTC"]
    frame = pd.DataFrame(rows, columns=columns).astype({"AESEQ": "int64"})
    frame["AEENDTC"] = frame["AEENDTC"].astype(object).where(frame["AEENDTC"].notna(), None)
    return frame


if __name__ == "__main__":
    sys.exit(main())
