"""Concurrent writers lose nothing: one clone shared by processes, and two clones of one remote."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from dulwich.repo import Repo

import datom_core as dc
from tests.core.projects import frame, new_project

pytestmark = pytest.mark.timeout(300)

VERSIONS = 10


def _writer(clone: str, table: str, seeds: list[int]) -> list[tuple[str, str]]:
    conn = dc.connect(clone)
    out = []
    for seed in seeds:
        result = conn.write(table, frame(seed=seed))
        assert result.change == "full"
        out.append((result.version, result.data_sha))
    return out


def _run(jobs: list[tuple[str, str, list[int]]]) -> list[list[tuple[str, str]]]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool:
        futures = [pool.submit(_writer, *job) for job in jobs]
        return [f.result() for f in futures]


def _assert_linear(remote: str) -> int:
    with Repo(remote) as r:
        head = r.refs[b"refs/heads/main"]
        count = 0
        for entry in r.get_walker(include=[head]):
            assert len(entry.commit.parents) <= 1, "history must stay linear"
            count += 1
    return count


def _assert_recorded_once(conn: dc.Connection, table: str, results: list[tuple[str, str]]) -> None:
    history = [h.version for h in conn.history(table)]
    assert len(history) == len(set(history)), "a version appears twice"
    assert sorted(history) == sorted(v for v, _ in results)


def test_eight_processes_share_one_clone(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    own = [(str(conn.path), f"t{i}", [100 * i + k for k in range(VERSIONS)]) for i in range(4)]
    shared = [
        (str(conn.path), "shared", [1000 + 100 * i + k for k in range(VERSIONS)]) for i in range(4)
    ]
    results = _run(own + shared)
    for (_, table, _), res in zip(own, results[:4], strict=True):
        _assert_recorded_once(conn, table, res)
    _assert_recorded_once(conn, "shared", [r for res in results[4:] for r in res])
    assert _assert_linear(conn.repo.remote_url) == 1 + 8 * VERSIONS
    tables = {t.name: t for t in conn.tables()}
    assert tables["shared"].version_count == 4 * VERSIONS
    assert all(tables[f"t{i}"].version_count == VERSIONS for i in range(4))
    assert conn.validate().ok


def test_two_clones_of_one_remote_write_at_once(tmp_path: Path) -> None:
    first = new_project(tmp_path)
    second = dc.clone(first.repo.remote_url, tmp_path / "second", store=first.store)
    jobs = [
        (str(first.path), "dm", [k for k in range(VERSIONS)]),
        (str(second.path), "dm", [500 + k for k in range(VERSIONS)]),
        (str(first.path), "ae", [900 + k for k in range(VERSIONS)]),
        (str(second.path), "lb", [1300 + k for k in range(VERSIONS)]),
    ]
    results = _run(jobs)
    _assert_recorded_once(first, "dm", results[0] + results[1])
    _assert_recorded_once(first, "ae", results[2])
    _assert_recorded_once(first, "lb", results[3])
    assert _assert_linear(first.repo.remote_url) == 1 + 4 * VERSIONS
    for conn in (first, second):
        conn.pull()
        assert conn.validate().ok
    reader = dc.connect(store=first.store, project_name="STUDY_001")
    assert {t.name: t.version_count for t in reader.tables()} == {"dm": 20, "ae": 10, "lb": 10}
