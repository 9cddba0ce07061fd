"""Column labels from SAS/SPSS/Stata files: kept beside the data, never identity.

A labelled extract keeps its variable labels, display formats, value labels and declared
widths in the Arrow field metadata, through ``write`` into the parquet and back out of
``read``; any parquet reader still reads the file; the same data with or without labels
has one ``data_sha`` and one version; R gets the attributes ``rio::import`` gives the
file's columns through R arrow's ``r`` schema key; ``datom show`` prints them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest

import datom_core as dc
from datom_core._labels import R_METADATA_KEY
from tests.core.cli_helpers import run
from tests.core.projects import new_project

CDISC = Path("/work/shared/cdisc")
RSCRIPT = shutil.which("Rscript") or ""

FRAME = pd.DataFrame(
    {
        "SEX": [1.0, 2.0, None],
        "NAME": ["a", "b", "c"],
        "WEIGHT": [61.5, 72.25, 80.0],
        "VISITDT": [pd.Timestamp("2020-01-02").date()] * 3,
    }
)
LABELS: dict[str, str | None] = {
    "SEX": "Sex of subject",
    "NAME": 'Name, "quoted"',
    "WEIGHT": "Weight (kg) – ä",
}


def _sav(tmp_path: Path) -> Path:
    path = tmp_path / "dm.sav"
    pyreadstat.write_sav(
        FRAME,
        path,
        column_labels=LABELS,
        variable_value_labels={"SEX": {1.0: "Male", 2.0: "Female"}, "NAME": {"a": "Alpha"}},  # type: ignore[dict-item]
        variable_format={"WEIGHT": "F8.2"},
    )
    return path


def _dta(tmp_path: Path) -> Path:
    path = tmp_path / "dm.dta"
    pyreadstat.write_dta(
        FRAME.drop(columns="NAME"),
        path,
        column_labels={k: v for k, v in LABELS.items() if k != "NAME"},
        variable_value_labels={"SEX": {1: "Male", 2: "Female"}},
    )
    return path


def _xpt(tmp_path: Path) -> Path:
    path = tmp_path / "dm.xpt"
    pyreadstat.write_xport(
        FRAME, path, column_labels=LABELS, variable_format={"WEIGHT": "8.2", "VISITDT": "DATE9."}
    )
    return path


def test_sas_labels_formats_and_widths_are_field_metadata(tmp_path: Path) -> None:
    table = dc.read_extract(_xpt(tmp_path))
    labels = dc.column_labels(table.schema)
    assert labels["SEX"] == dc.ColumnLabels(label="Sex of subject", width=8)
    assert labels["NAME"].label == 'Name, "quoted"' and labels["NAME"].width == 1
    assert (labels["WEIGHT"].format, labels["WEIGHT"].family) == ("8.2", "sas")
    assert labels["VISITDT"].format == "DATE9"  # as haven spells it: no trailing period
    field = table.schema.field("WEIGHT")
    assert field.metadata == {
        b"label": "Weight (kg) – ä".encode(),
        b"format.sas": b"8.2",
        b"width": b"8",
    }


def test_spss_and_stata_value_labels_are_kept(tmp_path: Path) -> None:
    sav = dc.column_labels(dc.read_extract(_sav(tmp_path)).schema)
    assert sav["SEX"].value_labels == ((1.0, "Male"), (2.0, "Female"))
    assert sav["NAME"].value_labels == (("a", "Alpha"),)
    assert (sav["WEIGHT"].format, sav["WEIGHT"].family) == ("F8.2", "spss")
    assert sav["SEX"].describe() == "Sex of subject [format F8.2; 1 = Male, 2 = Female; width 8]"
    dta = dc.column_labels(dc.read_extract(_dta(tmp_path)).schema)
    assert dta["SEX"].value_labels == ((1.0, "Male"), (2.0, "Female"))
    assert dta["SEX"].family == "stata" and dta["VISITDT"].format == "%td"


@pytest.mark.parametrize("make", [_sav, _dta, _xpt])
def test_labels_are_not_identity(tmp_path: Path, make) -> None:
    labelled = dc.read_extract(make(tmp_path))
    plain = pa.Table.from_arrays(labelled.columns, names=labelled.column_names)
    assert plain.schema.field(0).metadata is None
    assert dc.hash_table(labelled) == dc.hash_table(plain)
    one = new_project(tmp_path / "one").write("DM", labelled)
    other = new_project(tmp_path / "other").write("DM", plain)
    assert (one.data_sha, one.version) == (other.data_sha, other.version)
    assert one.parquet_sha != other.parquet_sha  # the labels are in the file, not the identity


def test_labels_survive_a_write_and_any_parquet_reader_reads_it(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    table = dc.read_extract(_sav(tmp_path))
    written = conn.write("DM", table)
    back = conn.read("DM", as_="arrow")
    assert dc.column_labels(back.schema) == dc.column_labels(table.schema)
    assert dc.hash_table(back).data_sha == written.data_sha
    raw = conn.store.read_bytes(conn.parquet_key("DM", written.data_sha))
    (tmp_path / "dm.parquet").write_bytes(raw)
    path = tmp_path / "dm.parquet"
    assert pq.read_table(path).select(table.column_names).equals(table)
    assert pq.read_schema(path).field("SEX").metadata[b"label"] == b"Sex of subject"
    assert pd.read_parquet(path)["NAME"].tolist() == ["a", "b", "c"]
    assert pl.read_parquet(path)["WEIGHT"].to_list() == [61.5, 72.25, 80.0]
    assert R_METADATA_KEY in pq.read_schema(path).metadata


def test_only_label_keys_are_kept_from_an_arrow_input(tmp_path: Path) -> None:
    field = pa.field(
        "x",
        pa.float64(),
        metadata={"label": "An x", "PARQUET:field_id": "7", "ARROW:extension:name": "bogus"},
    )
    table = pa.table({"x": [1.0]}, schema=pa.schema([field], metadata={"pandas": "{}"}))
    prepared = dc.prepare_table(table)
    assert prepared.schema.field("x").metadata == {b"label": b"An x"}
    assert prepared.schema.metadata is None
    assert dc.hash_table(table) == dc.hash_table(pa.table({"x": [1.0]}))


def test_unlabelled_tables_get_no_r_key(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    written = conn.write("T", pa.table({"x": [1.0]}))
    raw = conn.store.read_bytes(conn.parquet_key("T", written.data_sha))
    meta = pq.read_schema(pa.BufferReader(raw)).metadata or {}
    assert R_METADATA_KEY not in meta


def test_show_prints_the_labels(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("DM", dc.read_extract(_sav(tmp_path)))
    out = run("--repo", conn.path, "show", "DM").stdout
    assert "Sex of subject [format F8.2; 1 = Male, 2 = Female; width 8]" in out
    assert "label" in out
    conn.write("PLAIN", pa.table({"x": [1.0]}))
    assert "label" not in run("--repo", conn.path, "show", "PLAIN").stdout


# -- R ---------------------------------------------------------------------------------

# What R arrow's arrow_attributes() (r/R/metadata.R) keeps of a data.frame's columns,
# applied to what rio::import (R datom's reader) makes of the same file.
_R_EXPECTED = r"""
args <- commandArgs(TRUE)
removed <- function(x) {
  if (inherits(x, "POSIXct")) return(c("class", "tzone"))
  if (inherits(x, c("hms", "difftime"))) return(c("class", "units"))
  if (inherits(x, "factor")) return(c("class", "levels"))
  if (inherits(x, c("integer64", "Date"))) return("class")
  character()
}
for (i in seq(1, length(args), by = 2)) {
  df <- rio::import(args[i])
  cols <- lapply(df, function(x) {
    a <- attributes(x)
    a <- a[setdiff(names(a), removed(x))]
    if (length(a)) list(attributes = a, columns = NULL)
  })
  expected <- list(columns = cols)
  got <- unserialize(readBin(args[i + 1], "raw", file.size(args[i + 1])))
  if (!identical(got, expected)) {
    cat("MISMATCH", args[i], "\n"); str(got); str(expected)
  } else cat("OK", args[i], "\n")
}
"""


@pytest.mark.skipif(not RSCRIPT, reason="R is not installed")
def test_r_gets_the_attributes_rio_gives_the_file(tmp_path: Path) -> None:
    files = [_sav(tmp_path), _dta(tmp_path), _xpt(tmp_path)]
    files += [CDISC / f"{n}.xpt" for n in ("adsl", "dm", "ae", "ds", "ex")]
    conn = new_project(tmp_path / "p")
    args: list[str] = []
    for i, path in enumerate(files):
        if not path.exists():
            continue
        written = conn.write(f"T{i}", dc.read_extract(path))
        raw = conn.store.read_bytes(conn.parquet_key(f"T{i}", written.data_sha))
        r_text = pq.read_schema(pa.BufferReader(raw)).metadata[R_METADATA_KEY]
        (tmp_path / f"r{i}.txt").write_bytes(r_text)
        args += [str(path), str(tmp_path / f"r{i}.txt")]
    script = tmp_path / "check.R"
    script.write_text(_R_EXPECTED)
    out = subprocess.run(
        [RSCRIPT, "--vanilla", str(script), *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines if line[:2] in ("OK", "MI")] == ["OK"] * (
        len(args) // 2
    ), out.stdout


def test_value_labels_json_is_value_label_pairs(tmp_path: Path) -> None:
    table = dc.read_extract(_sav(tmp_path))
    assert json.loads(table.schema.field("SEX").metadata[b"labels"]) == [
        [1.0, "Male"],
        [2.0, "Female"],
    ]
