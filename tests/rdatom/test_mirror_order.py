"""R datom 0.2.0 reading a store caught between two of this package's mirror PUTs: on S3
the history and ``metadata.json`` go at once, so a reader can meet the new
``metadata.json`` beside the history before it (R's own writer puts ``metadata.json``
first, then the history). R reads the current data, and every version the history
lists."""

from __future__ import annotations

from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from tests.rdatom.frames import frame
from tests.rdatom.rsession import RSession

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rdatom-mirror-order")]


def test_r_reads_a_store_whose_metadata_is_ahead_of_its_history(
    r020: RSession, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    store = dc.LocalStore(store_dir)
    py = dc.init_repo(tmp_path / "clone", "ORDER", store)
    first = py.write("dm", frame("dm_v1"))
    before = store.read_bytes(L.store_history("dm"))
    second = py.write("dm", frame("dm_v2"))
    store.write_bytes(L.store_history("dm"), before)  # metadata.json landed, history not
    reader = {"store": str(store_dir), "project": "ORDER"}
    now = r020.call("r_read_hash", conn=reader, name="dm")
    assert now["data_sha"] == second.data_sha
    pinned = r020.call("r_read_hash", conn=reader, name="dm", version=first.version)
    assert pinned["data_sha"] == first.data_sha
    assert py.read("dm").equals(py.read("dm", version=second.version))  # ours reads it too
