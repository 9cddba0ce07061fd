"""R datom 0.2.0 reads a labelled table Python wrote: same rows, same ``data_sha``.

The parquet carries column labels in its field metadata and R arrow's ``r`` schema key
(``datom_core._labels``); neither is identity, and neither stops R from reading the table.
(The arrow stand-in R runs here ignores the ``r`` key; real R arrow applies it: that
half is checked against R's own ``unserialize`` in tests/core/test_labels.py.)
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyreadstat

import datom_core as dc
from tests.rdatom.rsession import RSession


def test_r_reads_a_labelled_table_with_the_same_hash(r020: RSession, tmp_path: Path) -> None:
    frame = pd.DataFrame({"SEX": [1.0, 2.0, None], "NAME": ["a", "b", "c"]})
    sav = tmp_path / "dm.sav"
    pyreadstat.write_sav(
        frame,
        sav,
        column_labels={"SEX": "Sex", "NAME": "Name"},
        variable_value_labels={"SEX": {1.0: "Male", 2.0: "Female"}},
    )
    clone, store = tmp_path / "py-clone", tmp_path / "store"
    py = dc.init_repo(clone, "LABELS", dc.LocalStore(store))
    table = dc.read_extract(sav)
    assert dc.column_labels(table.schema)["SEX"].value_labels
    written = py.write("dm", table)
    plain = pa.Table.from_arrays(table.columns, names=table.column_names)
    assert written.data_sha == dc.hash_table(plain).data_sha

    r_clone = tmp_path / "r-clone"
    remote = Path(f"{clone}.remote.git")
    r020.call("r_clone", path=r_clone, store=store, remote=remote)
    conn = {"path": str(r_clone), "store": str(store), "remote": str(remote)}
    assert r020.call("r_read_hash", conn=conn, name="dm") == {
        "data_sha": written.data_sha,
        "nrow": 3,
    }
    # R writing back what it read records nothing new.
    assert r020.call("r_rewrite_current", conn=conn, name="dm")["action"] == "none"
