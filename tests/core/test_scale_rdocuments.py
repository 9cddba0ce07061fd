"""Documents R datom 0.2.0 wrote are the one text form, so writes here splice onto them, and
the result is byte for byte the full re-print (runs the real R package; skipped without it
unless ``DATOM_REQUIRE_R=1``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._history_text import history_text
from tests.rdatom.frames import frame
from tests.rdatom.rsession import RSession, missing_r
from tests.rdatom.scenarios import STANDARD_TABLES, r_standard_project

pytestmark = pytest.mark.xdist_group("rdatom-scale")


@pytest.fixture(scope="module")
def r020(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RSession]:
    why = missing_r()
    if why is not None:
        message = f"R datom is not installed ({why}): run `make rdatom`"
        if os.environ.get("DATOM_REQUIRE_R") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    session = RSession("0.2.0", Path(tmp_path_factory.mktemp("r020")))
    try:
        yield session
    finally:
        session.close()


def test_r_documents_are_spliced_onto_exactly(r020: RSession, tmp_path: Path) -> None:
    p = r_standard_project(r020, tmp_path)
    py = dc.clone(p.remote, tmp_path / "py")
    for table in STANDARD_TABLES:
        raw = py.repo.read(L.git_history(table))
        assert raw is not None
        assert history_text(raw, key=table).canonical, table  # jsonlite's text is ours
    manifest = py.repo.read(L.MANIFEST)
    assert manifest is not None and dump(json.loads(manifest)) == manifest
    for i, table in enumerate(("dm", "lb", "dm")):
        before, old_manifest = py.repo.read(L.git_history(table)), py.repo.read(L.MANIFEST)
        assert before is not None and old_manifest is not None
        result = py.write(table, frame("dm_v2" if table == "dm" else "lb"), metadata={"i": i})
        assert result.change in ("full", "metadata_only")
        after, new_manifest = py.repo.read(L.git_history(table)), py.repo.read(L.MANIFEST)
        assert after is not None and new_manifest is not None
        assert after == dump([json.loads(after)[0]] + json.loads(before))
        doc, new = json.loads(old_manifest), json.loads(new_manifest)
        merged = {**doc["artifacts"], table: new["artifacts"][table]}
        full = assemble_manifest(p.name, merged, base=doc, updated_at=new["updated_at"])
        assert new_manifest == dump(full)
    assert py.validate().ok
    r020.call("r_pull", **p.r_conn())
    assert r020.call("r_current", conn=p.r_conn(), name="dm") == py.resolve("dm")
