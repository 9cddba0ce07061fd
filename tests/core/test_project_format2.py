"""Format 2 (FORMAT2.md) end to end: migration, the write door, manifests, history, lineage."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
import yaml

import datom_core as dc
from datom_core._project import _layout as L
from tests.core.projects import as_previous_release, fingerprint, frame, new_project


def _reader(conn: dc.Connection) -> dc.Connection:
    return dc.connect(store=conn.store, project_name=conn.project_name)


def _commit(conn: dc.Connection, path: str, doc: object) -> None:
    conn.repo.commit({path: (json.dumps(doc, indent=2) + "\n").encode()}, f"edit {path}")
    conn.repo.push()


# -- migration of a previous-release project -------------------------------------------------


def test_a_previous_release_project_converts_on_its_first_write(tmp_path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.write("ae", frame(seed=2))
    as_previous_release(conn)
    old_ids = {t.name: t.current_version for t in conn.tables()}
    assert conn.validate().ok  # clean before
    assert {t.name for t in _reader(conn).tables()} == {"dm", "ae"}  # format 1 is read
    assert _reader(conn).read("dm", old_ids["dm"]).equals(frame())

    with pytest.warns(UserWarning, match="manifest format moved from v1 to v2"):
        result = conn.write("dm", frame())
    # `kind` is in the identity now: one metadata_only version, nothing uploaded.
    assert (result.change, result.uploaded) == ("metadata_only", False)
    manifest = json.loads((conn.path / L.MANIFEST).read_text())
    assert manifest["schema_version"] == 2 and "tables" not in manifest
    assert manifest["artifacts"]["ae"]["kind"] == "table"  # the other table survives
    assert manifest["artifacts"]["ae"]["current_version"] == old_ids["ae"]
    assert conn.history("dm")[1].version == old_ids["dm"]  # nothing lost
    assert conn.history("dm")[1].author == "Old Writer <old@example.org>"
    config = yaml.safe_load((conn.path / L.PROJECT_YAML).read_text())
    assert config["storage"]["data"]["type"] == "local" and config["schema_version"] == 1
    assert conn.validate().ok  # clean after
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converted once: no second warning
        assert conn.write("dm", frame()).change == "none"
    assert conn.write("ae", frame(seed=2)).change == "metadata_only"
    assert dc.connect(conn.path).tables()[0].name == "ae"  # the R-shaped yaml opens


def test_the_store_history_records_the_producing_commit(tmp_path) -> None:
    conn = new_project(tmp_path)
    first = conn.write("dm", frame())
    second = conn.write("dm", frame(seed=1))
    stored = json.loads(conn.store.read_bytes(L.store_history("dm")))
    assert [h["commit_sha"] for h in stored] == [second.commit, first.commit]
    assert "commit_sha" not in (conn.path / L.git_history("dm")).read_text()
    assert [v.commit_sha for v in _reader(conn).history("dm")] == [second.commit, first.commit]
    # A value the store records is never repointed, not even by validate(fix=True).
    stored[1]["commit_sha"] = "f" * 40
    conn.store.write_bytes(L.store_history("dm"), (json.dumps(stored, indent=2) + "\n").encode())
    assert conn.validate().ok  # compared modulo commit_sha
    conn.write("dm", frame(seed=2))
    again = json.loads(conn.store.read_bytes(L.store_history("dm")))
    assert again[2]["commit_sha"] == "f" * 40
    # A gap (a previous release's store copy has none) is derived from git at the next
    # mirroring; validate does not call a missing commit_sha stale.
    del again[2]["commit_sha"]
    conn.store.write_bytes(L.store_history("dm"), json.dumps(again).encode())
    assert conn.validate().ok
    conn.write("dm", frame(seed=3))
    repaired = json.loads(conn.store.read_bytes(L.store_history("dm")))
    assert repaired[3]["commit_sha"] == first.commit


# -- the write door ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "edit", "field"),
    [
        (L.MANIFEST, lambda d: d.update(schema_version=3), "schema_version"),
        (L.MANIFEST, lambda d: d.update(future_thing=1), "future_thing"),
        (L.MANIFEST, lambda d: d["artifacts"]["dm"].update(shiny=True), "artifacts.dm.shiny"),
        ("dm/metadata.json", lambda d: d.update(some_future_field="x"), "some_future_field"),
        ("dm/metadata.json", lambda d: d.update(kind="set"), "kind"),
    ],
)
def test_the_write_door_refuses_before_anything_changes(tmp_path, path, edit, field) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    doc = json.loads((conn.path / path).read_text())
    edit(doc)
    _commit(conn, path, doc)
    conn.validate(fix=False)
    before = fingerprint(conn)
    for attempt in (
        lambda: conn.write("dm", frame(seed=3)),
        lambda: conn.validate(fix=True),
    ):
        with pytest.raises(dc.FormatError) as info:
            attempt()
        assert info.value.field == field and info.value.file in str(info.value)
        assert fingerprint(conn) == before
    if field != "schema_version":
        assert _reader(conn).read("dm").equals(frame())  # reads limp


@pytest.mark.parametrize("minimum", ["9.9.9", "soon"])
def test_min_writer_version_stops_writes_not_reads(tmp_path, minimum) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    config = yaml.safe_load((conn.path / L.PROJECT_YAML).read_text())
    config["min_writer_version"] = minimum
    conn.repo.commit({L.PROJECT_YAML: yaml.safe_dump(config).encode()}, "raise the floor")
    conn.repo.push()
    before = fingerprint(conn)
    with pytest.raises(dc.FormatError, match="upgrade datom") as info:
        conn.write("dm", frame(seed=1))
    assert info.value.field == "min_writer_version"
    assert fingerprint(conn) == before
    assert conn.read("dm").equals(frame()) and dc.WRITER_FORMAT_VERSION == "0.2.0"


def test_a_newer_project_yaml_is_refused_even_to_open(tmp_path) -> None:
    conn = new_project(tmp_path)
    config = yaml.safe_load((conn.path / L.PROJECT_YAML).read_text())
    config["schema_version"] = 2  # committed by a newer datom, and pulled
    conn.repo.commit({L.PROJECT_YAML: yaml.safe_dump(config).encode()}, "newer")
    with pytest.raises(dc.FormatError, match="schema_version"):
        dc.connect(conn.path)


def test_a_reader_rebuilds_an_unreachable_manifest_and_writes_nothing(tmp_path) -> None:
    conn = new_project(tmp_path)
    dm = conn.write("dm", frame())
    conn.write("ae", frame(seed=1))
    doc = json.loads(conn.store.read_bytes(L.STORE_MANIFEST))
    doc["schema_version"] = 3
    conn.store.write_bytes(L.STORE_MANIFEST, json.dumps(doc).encode())
    objects = {k: conn.store.read_bytes(k) for k in conn.store.list("")}
    with pytest.warns(UserWarning, match="unreachable"):
        tables = _reader(conn).tables()
    assert {(t.name, t.version_count) for t in tables} == {("dm", 1), ("ae", 1)}
    assert next(t for t in tables if t.name == "dm").current_version == dm.version
    assert {k: conn.store.read_bytes(k) for k in conn.store.list("")} == objects


# -- documents --------------------------------------------------------------------------------


def test_derived_tables_record_an_empty_source_lineage(tmp_path) -> None:
    conn = new_project(tmp_path)
    base = conn.write("base", frame())
    child = conn.write("child", frame(seed=1), parents=["base"])
    assert conn.version("child").source_lineage == ()  # written as []: R does
    assert json.loads((conn.path / "child/metadata.json").read_text())["source_lineage"] == []
    assert "source_lineage" not in json.loads((conn.path / "base/metadata.json").read_text())
    assert conn.version("child").parents[0].source == "STUDY_001"
    assert conn.version("child").parents[0].version == base.version
    assert child.metadata is not None and child.metadata.version == child.version


def test_an_r_written_project_yaml_and_one_element_arrays_are_read(tmp_path) -> None:
    conn = new_project(tmp_path)
    conn.write("one", pd.DataFrame({"x": [1, 2]}))
    md = json.loads((conn.path / "one/metadata.json").read_text())
    md["colnames"] = "x"  # jsonlite writes a one-element vector as a scalar
    _commit(conn, "one/metadata.json", md)
    assert dc.connect(conn.path).version  # opens
    record = conn.validate()
    assert record.ok or {p.kind for p in record.problems} <= {"stale_mirror", "manifest_drift"}
    conn.validate(fix=True)
    assert _reader(conn).version("one").colnames == ("x",)


@pytest.mark.parametrize(
    ("key", "doc"),
    [
        ("dm/.metadata/version_history.json", "hello"),
        ("dm/.metadata/version_history.json", {"version": 5}),
        ("dm/.metadata/metadata.json", []),
        (".metadata/manifest.json", [1, 2, 3]),
    ],
)
def test_wrong_shape_documents_raise_integrity_errors(tmp_path, key, doc) -> None:
    conn = new_project(tmp_path)
    v1 = conn.write("dm", frame())
    conn.store.write_bytes(key, json.dumps(doc).encode())
    reader = _reader(conn) if not key.startswith(".metadata") else None
    with pytest.raises(dc.IntegrityError) as info:
        if key.startswith(".metadata"):
            dc.connect(store=conn.store, project_name="STUDY_001")
        elif "history" in key:
            reader.read("dm", v1.version[:10])  # type: ignore[union-attr]
        else:
            reader.read("dm")  # type: ignore[union-attr]
    assert info.value.key == key and "expected" in str(info.value)
    assert conn.validate(fix=True).ok
    assert _reader(conn).read("dm").equals(frame())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"deep": [float("-inf")]}])
def test_non_standard_json_in_custom_metadata_is_refused(tmp_path, bad) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    before = fingerprint(conn)
    with pytest.raises(dc.InvalidArgumentError, match="not standard JSON"):
        conn.write("dm", frame(seed=1), metadata={"x": bad})
    assert fingerprint(conn) == before


def test_custom_metadata_too_deep_or_not_unicode_is_a_datom_error(tmp_path) -> None:
    conn = new_project(tmp_path)
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    for custom in (deep, {"s": "\ud800"}, {1: "non-text key"}):
        with pytest.raises(dc.InvalidArgumentError):
            conn.write("dm", frame(), metadata=custom)


# -- diff and resolving ---------------------------------------------------------------------


class CountingStore(dc.LocalStore):
    """A real local store that counts whole-object reads and footer opens."""

    reads: list[str]

    def read_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().read_bytes(key)

    def read_verified(self, key: str, expected_sha: str) -> memoryview:
        self.reads.append(key)
        return super().read_verified(key, expected_sha)

    def open_read(self, key: str):  # type: ignore[no-untyped-def]
        self.reads.append("open:" + key)
        return super().open_read(key)


def test_diff_from_footers_and_by_key(tmp_path) -> None:
    store = CountingStore(tmp_path / "store")
    store.reads = []
    conn = new_project(tmp_path, store)
    v1 = conn.write("dm", frame())
    changed = frame(n=6)
    changed.loc[0, "AGE"] = 99
    changed = changed.drop(columns=["WEIGHT"]).assign(SEX="F")
    v2 = conn.write("dm", changed)
    store.reads.clear()
    d = conn.diff("dm")
    assert (d.before, d.after) == (v1.version, v2.version)
    assert (d.rows_before, d.rows_after) == (5, 6)
    assert (d.columns_added, d.columns_removed, d.columns_changed) == (
        ("SEX",),
        ("WEIGHT",),
        ("USUBJID", "AGE"),
    )
    assert d.rows_added is None and d.key is None
    assert not any(k.endswith(".parquet") for k in store.reads if not k.startswith("open:"))
    keyed = conn.diff("dm", v1.version[:8], v2.version, key="USUBJID")
    assert (keyed.rows_added, keyed.rows_removed, keyed.rows_changed) == (1, 0, 5)
    assert "USUBJID" in keyed.to_markdown() and "`SEX`" in d.to_markdown()
    first = conn.diff("dm", v2=v1.version)
    assert first.before is None and first.columns_added == ("USUBJID", "AGE", "WEIGHT")
    with pytest.raises(dc.InvalidArgumentError):
        conn.diff("dm", key=[])


def test_resolving_a_version_costs_at_most_two_reads(tmp_path) -> None:
    store = CountingStore(tmp_path / "store")
    store.reads = []
    conn = new_project(tmp_path, store)
    v1 = conn.write("dm", frame())
    reader = dc.connect(store=store, project_name="STUDY_001")
    for version, expected in ((None, 1), (v1.version, 1), (v1.version[:10], 2)):
        store.reads.clear()
        md = reader.version("dm", version)
        assert len(store.reads) == expected and md.version == v1.version
        store.reads.clear()
        assert reader.read("dm", md).equals(frame()) and len(store.reads) == 1
        assert reader.parent("dm", md).version == v1.version and store.reads == [store.reads[0]]


def test_a_product_project_refuses_file_onboarding(tmp_path) -> None:
    conn = new_project(tmp_path)
    config = yaml.safe_load((conn.path / L.PROJECT_YAML).read_text())
    config.update(mode="product", set="lock")
    conn.repo.commit({L.PROJECT_YAML: yaml.safe_dump(config).encode()}, "product")
    conn.repo.push()
    (conn.path / L.INBOX / "dm.csv").write_text("a,b\n1,2\n")
    before = fingerprint(conn)
    with pytest.raises(dc.ProjectConfigError, match="product mode"):
        conn.sync()
    assert fingerprint(conn) == before


def test_wrong_shape_documents_in_git_are_reported_and_refused(tmp_path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.write("ae", frame(seed=1))
    conn.repo.commit({"dm/metadata.json": b"[1]\n"}, "damage")
    conn.repo.push()
    (conn.path / "ae/version_history.json").unlink()
    conn.repo.commit({"ae/version_history.json": b'"hello"\n'}, "damage")
    conn.repo.push()
    report = conn.validate()
    assert {(p.kind, p.table) for p in report.problems} >= {
        ("corrupt_git_document", "dm"),
        ("corrupt_git_document", "ae"),
    }
    before = fingerprint(conn)
    with pytest.raises(dc.IntegrityError, match="dm/metadata.json"):
        conn.write("dm", frame(seed=5))
    assert fingerprint(conn) == before
    conn.validate(fix=True)
    manifest = json.loads((conn.path / L.MANIFEST).read_text())
    assert set(manifest["artifacts"]) == {"dm", "ae"}  # nothing dropped, nothing null
    assert b"null" not in conn.store.read_bytes(L.store_metadata("dm"))
    assert _reader(conn).read("dm").equals(frame())
