"""The write path under concurrency: a writer that loses the race to another clone rebuilds
its documents on the new remote tip without hashing or uploading again, and eight clones
writing through ``Connection.write`` at once lose nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Commit
from dulwich.repo import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._project._pretty import pretty_json
from tests.core.projects import frame, new_project


class InterruptingStore(dc.LocalStore):
    """A real local store that, on the first upload of a parquet, lets another writer in
    first (``before_upload`` runs once), and counts the parquet uploads."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.uploads: list[str] = []
        self.before_upload: Callable[[], object] | None = None

    def put_if_absent(self, key: str, data: bytes | str | os.PathLike[str]) -> bool:
        if key.endswith(".parquet"):
            self.uploads.append(key)
            interloper, self.before_upload = self.before_upload, None
            if interloper is not None:
                interloper()
        return super().put_if_absent(key, data)


def _objects(store: dc.Store, suffix: str) -> list[str]:
    return sorted(k for k in store.list("") if k.endswith(suffix))


def _contents(store: dc.Store) -> dict[str, bytes]:
    return {k: store.read_bytes(k) for k in store.list("")}


@pytest.mark.parametrize("same_table", [True, False], ids=["same table", "another table"])
def test_a_writer_beaten_mid_write_records_on_the_new_tip_without_re_uploading(
    tmp_path: Path, same_table: bool
) -> None:
    store = InterruptingStore(tmp_path / "store")
    mine = new_project(tmp_path, store)
    first = mine.write("dm", frame())
    theirs = dc.clone(mine.repo.remote_url, tmp_path / "theirs", store=store)
    other_table = "dm" if same_table else "ae"
    landed: list[dc.WriteResult] = []
    store.before_upload = lambda: landed.append(theirs.write(other_table, frame(seed=50)))
    parquets_before = len(_objects(store, ".parquet"))
    store.uploads.clear()

    result = mine.write("dm", frame(seed=7), message="mine")

    assert result.change == "full" and result.uploaded
    (interloper,) = landed
    # Mine was classified on a tip without theirs and recorded on the tip with it: each
    # parquet was sent once (mine, theirs), and the store holds exactly those two more.
    assert sorted(store.uploads) == sorted(
        [L.store_parquet("dm", result.data_sha), L.store_parquet(other_table, interloper.data_sha)]
    )
    assert len(_objects(store, ".parquet")) == parquets_before + 2
    history = [h.version for h in mine.history("dm")]
    expected = [result.version, interloper.version, first.version] if same_table else [
        result.version, first.version
    ]  # fmt: skip
    assert history == expected, "every version once, newest first"
    # What it replaced is what the tip it was committed on held, not what it classified on.
    assert first.replaced is None, "a new table replaces nothing"
    assert result.replaced is not None
    assert result.replaced.version == (interloper.version if same_table else first.version)
    log = mine.repo.log()
    assert [c.id for c in log[:2]] == [result.commit, interloper.commit]
    assert result.commit is not None and interloper.commit is not None
    with closing(Repo(str(mine.path))) as r:
        commit = r[result.commit.encode()]
        assert isinstance(commit, Commit)
    assert commit.parents == [interloper.commit.encode()], "mine was committed on top of theirs"
    assert not mine.repo.has_unpushed_commits()
    manifest = json.loads(mine.store.read_bytes(L.STORE_MANIFEST))
    assert manifest["artifacts"]["dm"]["current_version"] == result.version
    assert manifest["artifacts"][other_table]["current_version"] in {
        interloper.version,
        result.version,
    }
    assert manifest["artifacts"]["dm"]["version_count"] == len(expected)
    assert mine.validate().ok
    theirs.pull()
    assert theirs.validate().ok
    assert mine.commit_of("dm") == result.commit


def test_the_same_version_written_by_two_clones_at_once_is_recorded_once(tmp_path: Path) -> None:
    store = InterruptingStore(tmp_path / "store")
    mine = new_project(tmp_path, store)
    mine.write("dm", frame())
    theirs = dc.clone(mine.repo.remote_url, tmp_path / "theirs", store=store)
    landed: list[dc.WriteResult] = []
    store.before_upload = lambda: landed.append(theirs.write("dm", frame(seed=7), message="x"))

    result = mine.write("dm", frame(seed=7), message="x")

    (twin,) = landed
    assert twin.change == "full"
    # Same data, same metadata (the message is not part of the version): the tip holds it
    # already, so this write records nothing and reports the commit that did.
    assert (result.change, result.version, result.commit) == ("none", twin.version, twin.commit)
    assert [h.version for h in mine.history("dm")].count(result.version) == 1
    assert mine.validate().ok


def test_a_write_refused_by_the_remote_leaves_nothing_behind(tmp_path: Path) -> None:
    store = InterruptingStore(tmp_path / "store")
    mine = new_project(tmp_path, store)
    mine.write("dm", frame())
    bare = Path(mine.repo.remote_url.removeprefix("file://"))
    before = (_contents(store), mine.repo.head())

    def break_the_remote() -> None:
        bare.rename(bare.with_name("away"))

    store.before_upload = break_the_remote
    with pytest.raises(dc.GitError):
        mine.write("dm", frame(seed=9))
    bare.with_name("away").rename(bare)
    assert (_contents(store), mine.repo.head()) == before  # no parquet, no snapshot
    assert mine.validate().ok


# -- eight clones at once ------------------------------------------------------------------

WRITERS, WRITES = 8, 6


def _writer(clone: str, store: str, table: str, seeds: list[int]) -> list[tuple[str, str]]:
    conn = dc.connect(clone, store=dc.LocalStore(store))
    return [(table, conn.write(table, frame(seed=s)).version) for s in seeds]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("shared", [False, True], ids=["distinct tables", "one shared table"])
def test_eight_clones_write_at_once_through_connection_write(tmp_path: Path, shared: bool) -> None:
    origin = new_project(tmp_path)
    store = str(tmp_path / "store")
    clones = [tmp_path / f"clone{w}" for w in range(WRITERS)]
    for c in clones:
        dc.clone(origin.repo.remote_url, c, store=dc.LocalStore(store))
    jobs = [
        (str(c), store, "shared" if shared else f"t{w}", [1000 * w + k for k in range(WRITES)])
        for w, c in enumerate(clones)
    ]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=ctx) as pool:
        results = [r for f in [pool.submit(_writer, *job) for job in jobs] for r in f.result()]

    assert len(results) == WRITERS * WRITES, "no write failed"
    origin.pull()
    for table in {t for t, _ in results}:
        recorded = Counter(v.version for v in origin.history(table))
        wanted = [v for t, v in results if t == table]
        assert sorted(recorded) == sorted(wanted) and set(recorded.values()) == {1}
    assert origin.validate().ok
    reader = dc.connect(store=origin.store, project_name=origin.project_name)
    counts = {t.name: t.version_count for t in reader.tables()}
    assert counts == ({"shared": WRITERS * WRITES} if shared else {j[2]: WRITES for j in jobs})


# -- the documents' text -------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_documents = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_documents)
def test_documents_are_serialised_exactly_as_json_dumps_does(doc: object) -> None:
    assert pretty_json(doc) == json.dumps(doc, indent=2, ensure_ascii=False)


def test_unusual_values_fall_back_to_json_dumps() -> None:
    class Name(str):
        pass

    for doc in [{1: "a"}, {Name("k"): [Name("v"), (1, 2.5)]}, {"a": True, "b": 1, "c": 1.0}]:
        assert pretty_json(doc) == json.dumps(doc, indent=2, ensure_ascii=False)
    with pytest.raises(TypeError):
        pretty_json({"a": {1, 2}})


def _write_in_child(conn: dc.Connection, out: Any) -> None:
    out.put(conn.write("dm", frame(seed=12)).change)


def test_a_forked_child_writes_with_its_own_worker_threads(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=11))  # the parent's mirror (and parquet) threads exist now
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_write_in_child, args=(conn, out))
    child.start()
    child.join(60)
    assert child.exitcode == 0, "the child's write hung or failed"
    assert out.get(timeout=5) == "full"
    assert conn.history("dm")[0].data_sha == conn.metadata("dm")["data_sha"]
