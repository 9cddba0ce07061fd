"""The full lifecycle of a table, on every store backend, and what a reader sees."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import datom_core as dc
from datom_core._project import _layout as L
from tests.core.projects import frame, new_project


def test_lifecycle_on_every_backend(tmp_path, store: dc.Store) -> None:
    conn = new_project(tmp_path, store)
    v1 = conn.write("dm", frame(), message="first extract")
    assert (v1.change, v1.uploaded) == ("full", True)
    head = conn.repo.head()
    objects = set(store.list(""))

    same = conn.write("dm", frame())
    # A "none" write reports the commit that recorded the current version.
    assert same.change == "none" and same.commit == v1.commit and same.version == v1.version
    assert same.metadata is not None and same.metadata.version == v1.version
    assert conn.repo.head() == head and set(store.list("")) == objects  # no commit, no upload

    meta = conn.write("dm", frame(), metadata={"note": "reviewed"})
    assert meta.change == "metadata_only" and not meta.uploaded
    assert meta.parquet_sha == v1.parquet_sha and meta.data_sha == v1.data_sha
    assert {k for k in store.list("") if k.endswith(".parquet")} == {
        k for k in objects if k.endswith(".parquet")
    }

    v3 = conn.write("dm", frame(seed=1))
    assert v3.change == "full" and v3.uploaded and v3.data_sha != v1.data_sha

    parquet_before = {k for k in store.list("") if k.endswith(".parquet")}
    revert = conn.write("dm", frame(), metadata={"note": "reverted"})
    assert revert.change == "full" and not revert.uploaded
    assert revert.parquet_sha == v1.parquet_sha
    assert {k for k in store.list("") if k.endswith(".parquet")} == parquet_before

    versions = [h.version for h in conn.history("dm")]
    assert versions == [revert.version, v3.version, meta.version, v1.version]
    for result, expected in [
        (v1, frame()),
        (meta, frame()),
        (v3, frame(seed=1)),
        (revert, frame()),
    ]:
        for ref in (result.version, result.version[:10]):
            back = conn.read("dm", ref)
            assert back.equals(expected)
            assert dc.hash_table(back).data_sha == result.data_sha
    assert conn.validate().ok


def _colliding_custom_metadata() -> tuple[dict, dict]:
    """Two custom-metadata dicts whose versions of frame() share a 6-hex-character prefix."""
    from datom_core._project._documents import build_metadata

    th = dc.hash_table(frame())
    seen: dict[str, dict] = {}
    for i in range(200_000):
        custom = {"n": i}
        doc = build_metadata(
            table_hash=th, colnames=list(frame().columns), parquet_sha="", table_type="derived",
            datom_version="any", project="STUDY_001", custom=custom,
        )  # fmt: skip
        prefix = dc.metadata_sha(doc)[:6]
        if prefix in seen:
            return seen[prefix], custom
        seen[prefix] = custom
    raise AssertionError("no 6-character collision found")  # pragma: no cover


def test_ambiguous_prefix_names_the_candidates(tmp_path) -> None:
    conn = new_project(tmp_path)
    first, second = _colliding_custom_metadata()
    a = conn.write("dm", frame(), metadata=first)
    b = conn.write("dm", frame(), metadata=second)
    assert a.version[:6] == b.version[:6] and a.version != b.version
    with pytest.raises(dc.AmbiguousVersionError) as info:
        conn.read("dm", a.version[:6])
    assert set(info.value.candidates) == {a.version, b.version}
    assert a.version in str(info.value) and b.version in str(info.value)
    assert conn.read("dm", a.version[:20]).equals(frame())  # a longer prefix is unique
    with pytest.raises(dc.NotFoundError):
        conn.read("dm", "abcdef0123")


def test_reader_from_the_store_alone(tmp_path, store: dc.Store) -> None:
    conn = new_project(tmp_path, store)
    written = {}
    for table in ("dm", "ae"):
        for seed in range(3):
            written.setdefault(table, []).append(conn.write(table, frame(seed=seed)))
    reader = dc.connect(store=store, project_name="STUDY_001")
    assert reader.role == "reader"
    assert [t.name for t in reader.tables()] == ["ae", "dm"]
    for table, results in written.items():
        history = reader.history(table)
        assert [h.version for h in history] == [r.version for r in reversed(results)]
        for result in results:
            assert (
                dc.hash_table(reader.read(table, result.version, as_="arrow")).data_sha
                == result.data_sha
            )
    # git history agrees with the store: one commit per recorded version
    commits = conn.repo.log(L.git_history("dm"))
    assert len(commits) == len(written["dm"])
    with pytest.raises(dc.ReadOnlyError, match="reader"):
        reader.write("dm", frame())
    # What needs git and changes nothing is named as what it is, with the same remedy.
    for check, named in ((reader.validate, "validate"), (lambda: reader.commit_of("dm"), "commit")):
        with pytest.raises(dc.ReadOnlyError, match=f"reader.*{named}.*git repository") as refused:
            check()
        assert "change" not in str(refused.value) and "clone()" in str(refused.value)


def test_reads_as_pandas_arrow_and_polars_with_columns(tmp_path) -> None:
    import polars as pl

    conn = new_project(tmp_path)
    conn.write("dm", frame())
    assert isinstance(conn.read("dm", as_="arrow"), pa.Table)
    assert isinstance(conn.read("dm", as_="polars"), pl.DataFrame)
    assert list(conn.read("dm", columns=["AGE"]).columns) == ["AGE"]
    with pytest.raises(dc.NotFoundError, match="NOPE"):
        conn.read("dm", columns=["NOPE"])


def test_lineage_across_tables_and_projects(tmp_path) -> None:
    raw = new_project(tmp_path / "raw", name="RAW")
    raw.write("dm", frame())
    conn = new_project(tmp_path / "analysis", name="ANALYSIS")
    ext = raw.parent("dm")
    adsl = conn.write("adsl", frame(seed=3), parents=[ext])
    adae = conn.write("adae", frame(seed=4), parents=["adsl"])
    meta = conn.metadata("adae", adae.version)
    assert meta["parents"] == [
        {"source": "ANALYSIS", "table": "adsl", "version": adsl.version, "data_sha": adsl.data_sha}
    ]
    tree = conn.lineage("adae", depth="parents")
    assert tree.parents[0].table == "adsl"
    assert tree.parents[0].parents[0].project == "RAW" and not tree.parents[0].parents[0].resolved


def test_layout_matches_format2(tmp_path) -> None:
    # FORMAT2.md / STORE.md key for key, in R's order.
    conn = new_project(tmp_path)
    result = conn.write("dm", frame(), metadata={"study": "STUDY-001"})
    repo, store = conn.repo.path, conn.store
    project = yaml.safe_load((repo / ".datom/project.yaml").read_text())
    assert list(project) == [
        "project_name", "project_description", "created_at", "datom_version", "schema_version",
        "storage", "repos", "sync", "renv",
    ]  # fmt: skip
    assert project["project_name"] == "STUDY_001" and project["schema_version"] == 1
    assert list(project["storage"]["data"])[:3] == ["type", "root", "prefix"]
    assert project["storage"]["data"]["type"] == "local"
    assert project["repos"]["data"]["remote_url"] == conn.repo.remote_url
    assert "input_files/" in (repo / ".gitignore").read_text() and (repo / "input_files").is_dir()
    metadata = json.loads((repo / "dm/metadata.json").read_text())
    assert list(metadata) == [
        "schema_version", "kind", "data_sha", "hash_algo", "parquet_sha", "table_type", "nrow",
        "ncol", "colnames", "created_at", "datom_version", "project", "size_bytes", "custom",
    ]  # fmt: skip
    assert metadata["schema_version"] == 2 and metadata["kind"] == "table"
    assert metadata["hash_algo"] == "datom-cv1" and metadata["table_type"] == "derived"
    assert metadata["project"] == "STUDY_001" and metadata["datom_version"].startswith("py-")
    assert dc.metadata_sha(metadata) == result.version
    history = json.loads((repo / "dm/version_history.json").read_text())
    assert list(history[0]) == [
        "version", "data_sha", "timestamp", "author", "commit_message", "parquet_sha"
    ]  # fmt: skip
    assert set(history[0]["author"]) == {"name", "email"}
    manifest = json.loads((repo / ".datom/manifest.json").read_text())
    assert list(manifest) == [
        "schema_version",
        "project_name",
        "artifacts",
        "summary",
        "updated_at",
    ]
    assert manifest["schema_version"] == 2
    assert list(manifest["artifacts"]["dm"]) == [
        "kind", "current_version", "current_data_sha", "last_updated", "size_bytes",
        "version_count",
    ]  # fmt: skip
    assert manifest["summary"] == {
        "total_tables": 1,
        "total_size_bytes": metadata["size_bytes"],
        "total_versions": 1,
        "total_sets": 0,
    }
    # Store: content-addressed parquet with the column digests in its footer, mirrors
    # byte-identical to git (the history adds commit_sha), one self-certifying snapshot.
    key = f"dm/{result.data_sha}.parquet"
    assert store.sha256(key) == result.parquet_sha
    footer = pq.ParquetFile(store.open_read(key)).metadata.metadata
    digests = json.loads(footer[b"datom.column_hashes"])
    assert digests == [{"name": c.name, "sha": c.sha} for c in dc.hash_table(frame()).column_hashes]
    assert (
        store.read_bytes("dm/.metadata/metadata.json") == (repo / "dm/metadata.json").read_bytes()
    )
    stored_history = json.loads(store.read_bytes("dm/.metadata/version_history.json"))
    assert [h.pop("commit_sha") for h in stored_history] == [result.commit]
    assert stored_history == history
    assert (
        store.read_bytes(".metadata/manifest.json") == (repo / ".datom/manifest.json").read_bytes()
    )
    snapshot = json.loads(store.read_bytes(f"dm/.metadata/{result.version}.json"))
    assert dc.metadata_sha(snapshot) == result.version
    assert not any(p.suffix == ".parquet" for p in repo.rglob("*"))  # data never in git
    assert not any("column_hashes" in p.read_text() for p in repo.rglob("*.json"))


def test_second_developer_clones_and_pulls(tmp_path) -> None:
    first = new_project(tmp_path)
    first.write("dm", frame())
    second = dc.clone(first.repo.remote_url, tmp_path / "second", store=first.store)
    assert second.read("dm").equals(frame())
    r = second.write("dm", frame(seed=2))
    first.pull()
    assert json.loads((first.path / "dm/metadata.json").read_text())["data_sha"] == r.data_sha
    assert first.write("ae", frame()).change == "full"  # on top of the second developer's commit
    assert [h.version for h in first.history("dm")][0] == r.version
    assert first.validate().ok


def test_none_rewrite_repairs_a_stale_mirror(tmp_path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.store.delete("dm/.metadata/metadata.json")
    assert conn.write("dm", frame()).change == "none"
    assert conn.validate().ok


def test_parquet_key_and_commit_of_a_version(tmp_path) -> None:
    conn = new_project(tmp_path)
    v1 = conn.write("dm", frame())
    v2 = conn.write("dm", frame(seed=1))
    assert conn.store.sha256(conn.parquet_key("dm", v1.data_sha)) == v1.parquet_sha
    assert conn.commit_of("dm") == v2.commit
    assert conn.commit_of("dm", v1.version[:8]) == v1.commit
    with pytest.raises(dc.InvalidNameError):
        conn.parquet_key("../x", v1.data_sha)


def test_parquet_is_serialised_only_for_new_data(tmp_path, monkeypatch) -> None:
    from datom_core._project import _parquet

    started: list[str] = []
    real = _parquet._encoded

    def counting(sink, table, digests):
        started.append("x")
        return real(sink, table, digests)

    monkeypatch.setattr(_parquet, "_encoded", counting)
    conn = new_project(tmp_path)
    conn.write("dm", frame())  # a new table: new data
    assert len(started) == 1
    conn.write("dm", frame())  # none: hashing alone decides
    conn.write("dm", frame(), metadata={"n": 1})  # metadata_only: same data
    assert len(started) == 1
    changed = frame()
    changed.loc[2, "WEIGHT"] = 99.5  # same shape, one column differs
    assert conn.write("dm", changed).change == "full"
    assert len(started) == 2
    assert conn.read("dm").equals(changed)
