"""A project at scale through the public API: 200 tables, 500 commits, compaction on the way.

The git layer packs loose objects and merges packs on a budget while the project grows
(in the clone and in the embedded remote); afterwards history, pinned reads, ``validate``
and a fresh clone must all still agree with what was written.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pyarrow as pa
import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._plain import plain

TABLES = 200
COMMITS = 500


def _data(table: int, round_: int) -> pa.Table:
    return pa.table({"USUBJID": [f"S{table}-{round_}-{k}" for k in range(3)], "N": [round_] * 3})


def _store_shape(git_dir: Path) -> tuple[int, int]:
    with closing(Repo(str(git_dir))) as r:
        return len(r.object_store.packs), r.object_store.count_loose_objects()


@pytest.mark.slow
@pytest.mark.usefixtures("accelerated")  # the remote's compaction (_git/_fast/_compact.py) too
def test_two_hundred_tables_and_five_hundred_commits_stay_correct(tmp_path: Path) -> None:
    conn = dc.init_repo(tmp_path / "repo", "SCALE", dc.LocalStore(tmp_path / "store"))
    written: dict[str, list[tuple[str, int]]] = {}  # table -> [(version, round)]
    for i in range(TABLES):
        result = conn.write(f"t{i:03d}", _data(i, 0))
        written.setdefault(result.table, []).append((result.version, 0))
    rewrites = COMMITS - 1 - TABLES  # the first commit initialises the project
    for n in range(rewrites):
        i, round_ = n % 40, 1 + n // 40
        result = conn.write(f"t{i:03d}", _data(i, round_))
        assert result.change == "full" and result.commit == conn.repo.head()
        written[result.table].append((result.version, round_))

    log = conn.repo.log()
    assert len(log) == COMMITS and len({c.id for c in log}) == COMMITS
    remote = MetadataRepo.embedded_remote_path(tmp_path / "repo")
    packs, loose = _store_shape(remote)
    assert packs >= 1, f"{remote} was never compacted"
    # checked every REMOTE_CHECK_EVERY pushes (a push adds at most one pack, or ~6 loose
    # objects), so the budgets hold up to that many pushes' worth
    assert packs <= maint.PACK_BUDGET + maint.REMOTE_CHECK_EVERY + 1
    assert loose <= maint.LOOSE_BUDGET + 8 * maint.REMOTE_CHECK_EVERY
    # the clone reads the remote's objects in place (git's alternates): it holds none but
    # the first commit's, made before it met its remote
    packs, loose = _store_shape(tmp_path / "repo" / ".git")
    assert (packs == 0 and loose < 10) or plain("share")

    assert len(conn.tables()) == TABLES
    for table, versions in written.items():
        history = conn.history(table)
        assert [v.version for v in history] == [v for v, _ in reversed(versions)]
        i = int(table[1:])
        for version, round_ in (versions[0], versions[-1]):  # the oldest and the newest pin
            got = conn.read(table, version=version, as_="arrow")
            assert got.equals(_data(i, round_))
        if len(versions) > 1:
            assert conn.commit_of(table, versions[0][0]) is not None
    report = conn.validate()
    assert report.ok, str(report)

    other = dc.clone(conn.repo.remote_url, tmp_path / "other", dc.LocalStore(tmp_path / "store"))
    assert len(other.repo.log()) == COMMITS
    assert other.read("t007", as_="arrow").equals(_data(7, written["t007"][-1][1]))
    assert other.validate().ok
    newest = other.write("t199", _data(199, 99))
    conn.pull()
    assert conn.history("t199")[0].version == newest.version
