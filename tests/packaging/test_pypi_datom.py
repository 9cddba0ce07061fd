"""PyPI's ``datom`` (0.1.0: the R datom author's read-only Python reader, import name
``datom``) reads what this package writes: tables at every version, histories, the
listing, and a set with its members. Installed into a fresh virtual environment, as a
colleague would, and driven through its own public API."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import datom_core as dc
from tests.packaging.venvs import make_venv, pip_install, run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

PYPI_DATOM = "datom==0.1.0"

_READER = """
import json, sys
import datom

root, cuts_root = sys.argv[1], sys.argv[2]
study = datom.get_conn(datom.store_local(root), project_name="STUDY_001")
cuts = datom.get_conn(datom.store_local(cuts_root), project_name="STUDY_001_CUTS")

def frame(df):
    return {c: [None if v is None or v != v else v for v in df[c].tolist()] for c in df.columns}

listing = datom.list_artifacts(study, short_hash=False)
out = {
    "listing": sorted(zip(listing["name"], listing["current_version"])),
    "history": datom.history(study, "dm")["version"].tolist(),
    "dm_current": frame(datom.read(study, "dm")),
    "dm_first": frame(datom.read(study, "dm", version=sys.argv[3][:8])),
    "adsl": frame(datom.read(study, "adsl")),
}
s = datom.get_set(cuts, "db_lock")
out["set"] = {"version": s.version, "data_sha": s.data_sha, "tags": s.tags,
              "members": sorted([m.id.project, m.id.name, m.id.kind, m.id.version]
                                for m in s.members)}
out["member_dm"] = frame(datom.fetch_member(study, s, "dm"))
print(json.dumps(out, default=str))
"""


def _plain(df: pd.DataFrame) -> dict[str, list]:
    return {c: [None if pd.isna(v) else v for v in df[c].tolist()] for c in df.columns}


def test_pypi_datom_reads_what_this_package_writes(tmp_path: Path) -> None:
    bin_dir = make_venv(tmp_path / "venv")
    pip_install(bin_dir, PYPI_DATOM, cwd=tmp_path)

    store = dc.LocalStore(tmp_path / "store")
    study = dc.init_repo(tmp_path / "study", "STUDY_001", store)
    january = pd.DataFrame({"USUBJID": ["S1", "S2"], "AGE": [34, 51], "ARM": ["A", None]})
    first = study.write("dm", january, message="January extract")
    february = pd.concat(
        [january, pd.DataFrame({"USUBJID": ["S3"], "AGE": [29], "ARM": ["B"]})],
        ignore_index=True,
    )
    study.write("dm", february, message="February extract")
    adsl = pd.DataFrame(
        {"USUBJID": ["S1", "S2", "S3"], "SAFFL": ["Y", "Y", "N"], "W": [1.5, None, 2.25]}
    )
    study.write("adsl", adsl, parents=["dm"])

    cuts_store = dc.LocalStore(tmp_path / "cuts-store")
    cuts = dc.init_repo(
        tmp_path / "cuts", "STUDY_001_CUTS", cuts_store, mode="product", set="db_lock"
    )
    cut = cuts.write_set(
        [study.member("dm", tags={"role": "raw"}), study.member("adsl")],
        tags={"milestone": "DB lock"},
        message="DB lock",
    )

    script = tmp_path / "read_with_pypi_datom.py"
    script.write_text(_READER)
    out = run(
        [str(bin_dir / "python"), str(script), str(tmp_path / "store"),
         str(tmp_path / "cuts-store"), first.version],
        cwd=tmp_path,
    ).stdout  # fmt: skip
    seen = json.loads(out.strip().splitlines()[-1])

    assert seen["listing"] == sorted([t.name, t.current_version] for t in study.tables())
    assert seen["history"] == [h.version for h in study.history("dm")]
    assert seen["dm_current"] == _plain(study.read("dm"))
    assert seen["dm_first"] == _plain(january)
    assert seen["adsl"] == _plain(adsl)
    mine = cuts.get_set()
    assert seen["set"]["version"] == cut.version == mine.version
    assert seen["set"]["data_sha"] == cut.data_sha
    assert seen["set"]["tags"] == {"milestone": ["DB lock"]}
    assert seen["set"]["members"] == sorted(
        [m.project, m.name, "table", m.version] for m in mine.members
    )
    assert seen["member_dm"] == _plain(february)
