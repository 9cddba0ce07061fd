"""The STUDY-001 generator: deterministic, cumulative, and its files read back as written."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.csv as pa_csv
import pyreadstat
import pytest

from example_project import generator as gen
from example_project._extract_files import FILE_TIMESTAMP

_KEYS = {
    "dm": ["USUBJID"],
    "ex": ["USUBJID", "EXSEQ"],
    "lb": ["USUBJID", "VISITNUM", "LBTESTCD"],
    "ae": ["USUBJID", "AESEQ"],
}
_DATE_COLUMNS = {
    "dm": ["RFSTDTC"],
    "ex": ["EXSTDTC", "EXENDTC"],
    "lb": ["LBDTC"],
    "ae": ["AESTDTC", "AEENDTC"],
}


@pytest.fixture(scope="module")
def months() -> dict[int, dict[str, pd.DataFrame]]:
    return {m: gen.study_tables(m) for m in range(1, gen.MONTHS + 1)}


def test_same_month_gives_equal_frames_and_callers_cannot_disturb_them() -> None:
    first = gen.study_tables(5)
    first["lb"].loc[:, "LBSTRESN"] = -1.0
    first["dm"].loc[0, "AGE"] = 999
    again = gen.study_tables(5)
    assert 999 not in set(again["dm"]["AGE"])
    assert (again["lb"]["LBSTRESN"].dropna() > 0).all()
    for name in gen.DOMAINS:
        pd.testing.assert_frame_equal(again[name], gen.study_tables(5)[name])


def test_dm_grows_over_three_months_then_stays_identical(months: dict) -> None:
    assert [len(months[m]["dm"]) for m in (1, 2, 3)] == [16, 32, 48]
    for m in range(4, gen.MONTHS + 1):
        pd.testing.assert_frame_equal(months[m]["dm"], months[3]["dm"])
    assert set(months[3]["dm"]["ARM"]) == {"Placebo", "Drug 10mg", "Drug 20mg"}
    assert months[3]["dm"]["AGE"].dtype == "int64"


def test_ex_grows_every_month(months: dict) -> None:
    sizes = [len(months[m]["ex"]) for m in range(1, gen.MONTHS + 1)]
    assert all(a < b for a, b in zip(sizes, sizes[1:], strict=False)), sizes


def test_delivered_rows_never_change_except_the_one_lb_correction(months: dict) -> None:
    fix = gen.lb_correction()
    changes = []
    for m in range(1, gen.MONTHS):
        for name, keys in _KEYS.items():
            before = months[m][name].set_index(keys)
            after = months[m + 1][name].set_index(keys)
            assert after.index.is_unique
            assert before.index.isin(after.index).all(), (name, m)
            kept = after.loc[before.index]
            differs = ~((kept == before) | (kept.isna() & before.isna()))
            for row, column in zip(*differs.to_numpy().nonzero(), strict=True):
                changes.append((m + 1, name, before.index[row], before.columns[column]))
    key = (fix.usubjid, fix.visitnum, fix.lbtestcd)
    assert changes == [(fix.month, "lb", key, "LBSTRESN")]


def test_lb_correction_fixes_a_month_one_value_at_month_three(months: dict) -> None:
    fix = gen.lb_correction()
    assert fix.month == 3 and fix.erroneous != fix.corrected

    def value(m: int) -> float:
        lb = months[m]["lb"].set_index(_KEYS["lb"])
        return float(lb.loc[(fix.usubjid, fix.visitnum, fix.lbtestcd), "LBSTRESN"])

    assert [value(m) for m in (1, 2, 3, 12)] == [fix.erroneous] * 2 + [fix.corrected] * 2
    assert months[1]["lb"]["LBDTC"].max() <= gen.cutoff_date(1)


def test_every_row_belongs_to_one_of_the_48_subjects_and_is_dated_by_the_cutoff(
    months: dict,
) -> None:
    subjects = set(months[gen.MONTHS]["dm"]["USUBJID"])
    assert len(subjects) == gen.SUBJECTS
    for m, tables in months.items():
        for name, frame in tables.items():
            assert set(frame["USUBJID"]) <= subjects, (name, m)
            assert (frame["STUDYID"] == gen.STUDYID).all()
            for column in _DATE_COLUMNS[name]:
                dates = [d for d in frame[column] if d is not None]
                assert all(type(d) is dt.date for d in dates), (name, column)
                if column != "EXENDTC":
                    assert max(dates, default=dt.date.min) <= gen.cutoff_date(m)
    ae = months[gen.MONTHS]["ae"]
    assert ae["AEENDTC"].isna().any() and ae["AEENDTC"].notna().any()
    assert set(ae["AESER"]) == {"Y", "N"}
    assert months[gen.MONTHS]["lb"]["LBSTRESN"].isna().any()


def _records(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows with missing values as None and numbers as float (SAS/SPSS store doubles)."""

    def cell(value: Any) -> Any:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        if isinstance(value, int | float):
            return float(value)
        return value

    return [tuple(cell(v) for v in row) for row in frame.itertuples(index=False)]


def test_dropped_files_read_back_with_the_same_values_and_dates(tmp_path: Path) -> None:
    month = 2  # before the lb correction, so the erroneous value must survive the trip
    paths = gen.drop_month(month, tmp_path / "inbox")
    assert [p.name for p in paths] == ["dm.csv", "ex.csv", "lb.xpt", "ae.sav"]
    assert sorted(p.name for p in (tmp_path / "inbox").iterdir()) == sorted(p.name for p in paths)
    expected = gen.study_tables(month)
    for path, name in zip(paths, gen.DOMAINS, strict=True):
        if path.suffix == ".csv":
            table = pa_csv.read_csv(path)
            for column in _DATE_COLUMNS[name]:
                assert str(table.schema.field(column).type) == "date32[day]"
            got = pd.DataFrame(table.to_pylist(), columns=table.column_names, dtype=object)
        else:
            read = pyreadstat.read_xport if path.suffix == ".xpt" else pyreadstat.read_sav
            got, meta = read(path)
            assert meta.creation_time == FILE_TIMESTAMP == meta.modification_time
        assert list(got.columns) == list(expected[name].columns)
        assert _records(got) == _records(expected[name]), name
        for column in _DATE_COLUMNS[name]:
            assert all(type(d) is dt.date for d in got[column].dropna())


def test_same_month_gives_identical_bytes(tmp_path: Path) -> None:
    first = gen.drop_month(4, tmp_path / "a")
    second = gen.drop_month(4, tmp_path / "b")
    for one, two in zip(first, second, strict=True):
        assert one.read_bytes() == two.read_bytes(), one.name


def test_next_month_replaces_files_even_in_another_format(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    gen.drop_month(1, inbox, formats={"lb": "csv", "dm": "sav"})
    gen.drop_month(2, inbox)
    assert sorted(p.name for p in inbox.iterdir()) == ["ae.sav", "dm.csv", "ex.csv", "lb.xpt"]
    assert pa_csv.read_csv(inbox / "dm.csv").num_rows == 32


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    for month in (0, 13, 2.0, True):
        with pytest.raises(ValueError, match="month"):
            gen.study_tables(month)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parquet"):
        gen.drop_month(1, tmp_path, formats={"lb": "parquet"})
    with pytest.raises(ValueError, match="vs"):
        gen.drop_month(1, tmp_path, formats={"vs": "csv"})
    assert list(tmp_path.iterdir()) == []


def test_command_line_drops_and_shows(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert gen.main(["drop", "--month", "3", "--inbox", str(tmp_path), "--format", "ae=csv"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ae.csv", "dm.csv", "ex.csv", "lb.xpt"]
    capsys.readouterr()
    assert gen.main(["show", "--month", "3"]) == 0
    out = capsys.readouterr().out
    for name, frame in gen.study_tables(3).items():
        assert f"{name:<4}{len(frame):>6} rows" in out
    with pytest.raises(SystemExit):
        gen.main(["drop", "--month", "13", "--inbox", str(tmp_path)])
