"""The spliced documents and patched trees of a write are byte for byte the full re-print.

The references here are the write path's previous code, kept verbatim: a history is its
entries re-printed with the new one in front; a manifest is parsed, converted, merged,
assembled and printed whole. Every input is also tried in forms the splice must refuse
(hand-edited, reformatted, R's lone entry as a bare object, format 1).
"""

from __future__ import annotations

import binascii
import json
import random
from collections.abc import Mapping
from typing import Any

import pytest
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, Tree
from hypothesis import given, settings
from hypothesis import strategies as st

from datom_core._errors import IntegrityError
from datom_core._git import _objects as O
from datom_core._git._diff import changed_paths
from datom_core._git._fast import _memo as M
from datom_core._git._fast import _tree as T
from datom_core._memory import KeyedMemory
from datom_core._project import _manifest_text
from datom_core._project._build import updated_manifest
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._history_text import history_text, prepend, printed
from datom_core._project._parse import convert_manifest_v1, parse_history
from datom_core._project._tip import load_manifest
from tests.core.trees import differing_files

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

NOW = "2030-01-02T03:04:05Z"


def _entry(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "version": f"{i:064x}",
        "data_sha": f"{i * 7:064x}",
        "timestamp": "2026-01-01T00:00:00Z",
        "author": {"name": f"Ünïcode “{i}”", "email": f"a{i}@example.org"},
        "commit_message": f'write {i}\nsecond line\t"quoted"',
        "parquet_sha": f"{i * 3:064x}",
        **extra,
    }


def _full_history(old: bytes | None, entry: Mapping[str, Any]) -> bytes:
    """The previous code of ``TableUpdate._history``."""
    history = parse_history(old, key="h") if old else ()
    entries = [dict(h.raw) for h in history]
    entries.insert(0, dict(entry))
    return dump(entries)


def _histories() -> dict[str, tuple[bytes, bool]]:
    """Old texts, and whether each is the one text form (the splice applies)."""
    many = [_entry(i, run={"id": i, "tags": ["a", None, 1.5, True]}) for i in range(40, 0, -1)]
    return {
        "canonical": (dump(many), True),
        "one entry": (dump(many[:1]), True),
        "R's lone entry as a bare object": (dump(many[0]), False),
        "indent 4": ((json.dumps(many, indent=4, ensure_ascii=False) + "\n").encode(), False),
        "ascii escapes": ((json.dumps(many, indent=2) + "\n").encode(), False),
        "one line": (json.dumps(many).encode(), False),
        "no final newline": (dump(many)[:-1], False),
        "CRLF": (dump(many).replace(b"\n", b"\r\n"), False),
        "an entry edited by hand": (
            dump(many).replace(b'"version": "0', b'"version":  "0', 1),
            False,
        ),
        "empty": (b"[]\n", False),
    }


@pytest.mark.parametrize("name", list(_histories()))
def test_a_history_grows_exactly_as_a_full_reprint(name: str) -> None:
    old, canonical = _histories()[name]
    text = history_text(old, key="h")
    assert text.canonical is canonical  # whether the splice was taken
    new = _entry(1000, extra_field={"nested": [1, {"x": "é"}]})
    grown = prepend(text, new, key="h")
    assert grown.raw == _full_history(old, new)
    assert [h.raw for h in grown.entries] == json.loads(grown.raw)
    # The result is canonical: the next write splices onto it, still exactly.
    newer = _entry(1001)
    assert prepend(grown, newer, key="h").raw == _full_history(grown.raw, newer)


def test_a_long_chain_of_spliced_histories_stays_the_full_reprint() -> None:
    raw, text = None, None
    for i in range(300):
        entry = _entry(i, note="x" * (i % 7))
        expected = _full_history(raw, entry)
        text = prepend(text, entry, key="h")
        raw = text.raw
        assert raw == expected
    assert text is not None and len(text.entries) == 300
    assert text.versions == {f"{i:064x}" for i in range(300)}
    assert text.recorded_parquet(f"{7 * 5:064x}").version == f"{5:064x}"


# -- the manifest -----------------------------------------------------------------------


def _full_manifest(raw: bytes | None, project: str, entries: Mapping[str, Any]) -> bytes:
    """The previous code of ``updated_manifest`` (the clock fixed)."""
    try:
        doc = json.loads(raw) if raw is not None else None
    except ValueError:
        doc = None
    base = convert_manifest_v1(doc) if isinstance(doc, Mapping) else {}
    artifacts = base.get("artifacts")
    merged = dict(artifacts) if isinstance(artifacts, Mapping) else {}
    merged.update(entries)
    return dump(assemble_manifest(project, merged, base=base, updated_at=NOW))


def _artifact(i: int, kind: str = "table") -> dict[str, Any]:
    if kind == "set":
        return {"kind": "set", "current_version": f"{i:064x}", "member_count": i % 5}
    entry: dict[str, Any] = {
        "kind": "table",
        "current_version": f"{i:064x}",
        "current_data_sha": f"{i:063x}1",
        "last_updated": "2026-01-01T00:00:00Z",
        "size_bytes": 1000 + i,
        "version_count": 1 + i % 4,
    }
    if i % 3 == 0:
        entry.update(original_file_sha=f"{i:064x}", original_format="csv")
    return entry


def _manifest(n: int, *, shuffled: bool = False, extra_top: bool = False) -> dict[str, Any]:
    names = [f"t{i:04d}" for i in range(n)] + ["ÄE", "ae", "Z"]
    if shuffled:
        random.Random(n).shuffle(names)
    arts = {name: _artifact(i, "set" if i % 11 == 5 else "table") for i, name in enumerate(names)}
    doc: dict[str, Any] = {"project_name": "P", "schema_version": 2, "artifacts": arts}
    if extra_top:
        doc = {"updated_at": "x", **doc, "summary": {"total_tables": -1}}
    return doc


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_manifest_text, "utc_now", lambda: NOW)
    monkeypatch.setattr("datom_core._project._documents.utc_now", lambda: NOW)


MANIFESTS = {
    "sorted": dump(_manifest(200)),
    "unsorted, other key order, stale summary": dump(_manifest(200, shuffled=True, extra_top=True)),
    "indent 4": (json.dumps(_manifest(50), indent=4) + "\n").encode(),
    "empty artifacts": dump({"schema_version": 2, "project_name": "P", "artifacts": {}}),
}
UPDATES = {
    "replace": {"t0007": _artifact(9999)},
    "insert first": {"0first": _artifact(1)},
    "insert last": {"zzz": _artifact(2)},
    "insert in the middle, and a set": {"t0007x": _artifact(3), "s": _artifact(4, "set")},
    "replace a set by a table": {"t0005": _artifact(5)},
}


@pytest.mark.parametrize("update", list(UPDATES))
@pytest.mark.parametrize("manifest", list(MANIFESTS))
def test_a_manifest_update_is_exactly_the_full_reprint(manifest: str, update: str) -> None:
    raw, entries = MANIFESTS[manifest], UPDATES[update]
    out = updated_manifest(raw, "P", entries)
    assert out == _full_manifest(raw, "P", entries)
    assert load_manifest(out) == json.loads(out)  # the document kept for the next reader


def test_a_chain_of_manifest_updates_stays_the_full_reprint() -> None:
    rng = random.Random(7)
    raw = dump(_manifest(300, shuffled=True))
    for step in range(200):
        name = rng.choice([f"t{rng.randrange(300):04d}", f"new{rng.randrange(1000)}"])
        kind = "set" if step % 17 == 0 else "table"
        entries = {name: _artifact(step, kind)}
        expected = _full_manifest(raw, "P", entries)
        raw = updated_manifest(raw, "P", entries)
        assert raw == expected, step


@pytest.mark.parametrize(
    "raw",
    [
        dump({"project_name": "P", "tables": {"a": {"current_version": "1"}}}),  # format 1
        b"{not json",
        dump([1, 2]),
        dump({"schema_version": 2, "artifacts": {"a": "not an object"}}),
        dump({"schema_version": 2, "artifacts": {"a": {"kind": "table", "size_bytes": [1]}}}),
    ],
    ids=["format 1", "corrupt", "not an object", "an entry not an object", "size not a number"],
)
def test_manifests_the_splice_refuses_take_the_full_path(raw: bytes) -> None:
    entries = {"b": _artifact(1)}
    assert _manifest_text.spliced_manifest(raw, "P", entries) is None
    try:
        expected: bytes | type[Exception] = _full_manifest(raw, "P", entries)
    except (TypeError, ValueError) as e:
        expected = type(e)
    if isinstance(expected, bytes):
        assert updated_manifest(raw, "P", entries) == expected
    else:
        with pytest.raises(expected):
            updated_manifest(raw, "P", entries)


# -- trees --------------------------------------------------------------------------------


def _serialised(tree: Tree) -> bytes:
    """The id dulwich's own serialiser gives the tree's entries (every entry re-sorted)."""
    fresh = Tree()
    for entry in tree.items():
        fresh[entry.path] = (entry.mode, entry.sha)
    return fresh.id


def test_a_patched_root_tree_is_what_git_would_write() -> None:
    store = MemoryObjectStore()
    files = {f"t{i:04d}/metadata.json": f"doc {i}".encode() for i in range(300)}
    made = O.build_commit(store, None, files, "all", b"A <a@b>", 0)
    assert made is not None
    for obj in made.objects:
        store.add_object(obj)
    tip, patched = made.id, 0
    changes = [("t0007/metadata.json", b"new"), ("t0299/metadata.json", b"z"), ("t0000/x", b"a")]
    changes += [(f"t{i:04d}/metadata.json", b"v%d" % i) for i in range(0, 300, 37)]
    for step, (path, data) in enumerate(changes):
        files = {path: data, ".datom/m": b"%d" % step}
        new = O.build_commit(store, tip, files, "w", b"A <a@b>", 0)
        assert new is not None
        for obj in new.objects:
            store.add_object(obj)
            if isinstance(obj, Tree):
                assert obj.id == _serialised(obj)  # its text is its entries' text
                parsed = Tree.from_raw_string(Tree.type_num, obj.as_raw_string())
                assert isinstance(parsed, Tree) and parsed.items() == obj.items()
                patched += isinstance(obj, T._PatchedTree)
        assert changed_paths(store, tip, new.id) == new.changes
        assert set(new.changes) == {p.encode() for p in files}
        assert O.TreeReader(store, new.id).read(path) == data
        tip = new.id
    assert patched == len(changes) - 1  # all but the commit that added .datom/ to the root
    assert O.build_commit(store, tip, files, "same", b"A <a@b>", 0) is None


@pytest.mark.parametrize("dir_mode", [b"40000", b"040000"], ids=["canonical", "zero-padded"])
def test_a_root_tree_another_tool_wrote_is_patched_at_its_own_offsets(dir_mode: bytes) -> None:
    """A root tree this process did not build (another writer's, or another tool's with
    zero-padded modes, as old tools wrote) is patched where its text holds the changed
    entry's id: only those bytes change."""
    store = MemoryObjectStore()
    text = b""
    for i in range(100):
        blob = Blob.from_string(b"doc %d" % i)
        sub = Tree()
        sub.add(b"metadata.json", 0o100644, blob.id)
        store.add_objects([(blob, None), (sub, None)])
        text += dir_mode + b" t%04d\0" % i + binascii.unhexlify(sub.id)
    root = Tree.from_raw_string(Tree.type_num, text)
    commit = Commit()
    commit.tree, commit.message = root.id, b"by another tool"
    commit.author = commit.committer = b"A <a@b>"
    commit.author_time = commit.commit_time = commit.author_timezone = commit.commit_timezone = 0
    store.add_objects([(root, None), (commit, None)])
    new = O.build_commit(store, commit.id, {"t0042/metadata.json": b"new"}, "w", b"A <a@b>", 0)
    assert new is not None
    made = next(o for o in new.objects if isinstance(o, T._PatchedTree))
    sub42 = next(o for o in new.objects if isinstance(o, Tree) and o is not made)
    at = text.index(b" t0042\0") + len(b" t0042\0")
    assert made.as_raw_string() == text[:at] + binascii.unhexlify(sub42.id) + text[at + 20 :]
    for obj in new.objects:
        store.add_object(obj)
    assert O.TreeReader(store, new.id).read("t0042/metadata.json") == b"new"
    assert O.TreeReader(store, new.id).read("t0043/metadata.json") == b"doc 43"


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(
        st.sampled_from([f"t{i}" for i in range(12)] + ["a", "a.b", "a-b", "z"]),
        min_size=1,
        max_size=10,
    ),  # fmt: skip
    edits=st.lists(
        st.tuples(st.integers(0, 20), st.sampled_from(["set", "drop", "dir"])), max_size=6
    ),
)
def test_the_paths_changed_by_another_writers_commit_are_every_differing_file(
    names: list[str], edits: list[tuple[int, str]]
) -> None:
    """Trees this process did not make (another writer's, read back cold): only entries
    that differ are looked into, and the paths are exactly the files that differ."""
    store = MemoryObjectStore()
    files = {f"{n}/metadata.json": n.encode() for n in names}
    old = O.build_commit(store, None, files, "old", b"A <a@b>", 0)
    assert old is not None
    new_files = dict(files)
    for k, what in edits:
        keys = sorted(new_files)
        key = keys[k % len(keys)] if keys else "x/metadata.json"
        if what == "set":
            new_files[key] = b"v%d" % k
        elif what == "drop" and len(new_files) > 1:
            del new_files[key]
        else:
            new_files[f"{key.split('/')[0]}/sub/f{k}"] = b"d"  # a new folder inside
    made: list[bytes] = []
    for tree_files in (files, new_files):  # both built from scratch, as elsewhere
        c = O.build_commit(store, None, tree_files, "c", b"A <a@b>", 0)
        assert c is not None
        for obj in c.objects:
            store.add_object(obj)
        made.append(c.id)
    M._TREES, T._MADE_FROM = KeyedMemory(64), KeyedMemory(256)  # nothing remembered
    assert changed_paths(store, made[0], made[1]) == differing_files(store, made[0], made[1])


@pytest.mark.parametrize(
    "front",
    ["as printed here", "indent 4", "ascii escapes", "an entry edited by hand", "a lone entry"],
)
def test_a_history_grown_elsewhere_from_a_known_one_is_judged_by_its_front(front: str) -> None:
    """Another writer's history that ends with one this process printed: its form is told
    from the entries in front, and growing it stays exactly the full re-print."""
    known = None
    for i in range(30):
        known = prepend(known, _entry(i), key="h")
    assert known is not None and known.canonical
    others = [_entry(100, note="é"), _entry(101, run={"id": [1, None]})]
    printed = {
        "as printed here": dump(others)[:-3],
        "indent 4": json.dumps(others, indent=4, ensure_ascii=False).encode()[:-2],
        "ascii escapes": json.dumps(others, indent=2).encode()[:-2],
        "an entry edited by hand": dump(others)[:-3].replace(b'"version": "0', b'"version":"0'),
        "a lone entry": b"[\n" + json.dumps(others[0]).encode(),
    }[front]
    raw = printed.rstrip() + b",\n" + known.raw[2:]
    text = history_text(raw, key="h")
    entries = [dict(h.raw) for h in text.entries]
    assert entries[: len(entries) - 30] == (others if front != "a lone entry" else others[:1])
    assert text.canonical is (dump(entries) == raw)
    assert text.canonical is (front == "as printed here")
    grown = prepend(text, _entry(200), key="h")
    assert grown.raw == _full_history(raw, _entry(200))


def _parsed_or_error(parse: Any) -> Any:
    try:
        return [dict(h.raw) for h in parse()]
    except IntegrityError as e:
        return type(e)


@pytest.mark.parametrize(
    "front",
    [
        b"[\n" + dump([_entry(100), _entry(101)])[2:-3],  # as another writer prints it
        json.dumps([_entry(100)], indent=4).encode()[:-2],  # another form
        b"[\n",  # no entry in front: "[\n,\n" is not JSON
        b'[\n  {"version": "unterminated',  # the rest would be inside a string
        b'[\n  {"version": "' + b"0" * 64 + b'"}',  # an entry that fails the history's checks
        b"[\n  " + json.dumps(_entry(102)).encode() + b",",  # a trailing comma
        b"[\n  " + json.dumps({"note": "],\n  {" + "x" * 10}).encode(),  # not an entry
    ],
)
@pytest.mark.parametrize("between", [b",\n", b"\n\n", b", "])
def test_a_history_grown_elsewhere_parses_as_a_whole_parse_would(
    front: bytes, between: bytes
) -> None:
    """Only the entries in front of a known history are parsed; the result, or the error
    (a missing comma, say), is the whole parse's."""
    known = None
    for i in range(20):
        known = prepend(known, _entry(i), key="h")
    assert known is not None
    raw = front + between + known.raw[2:]
    expected = _parsed_or_error(lambda: parse_history(raw, key="h"))
    assert _parsed_or_error(lambda: history_text(raw, key="h").entries) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 2, 3]), min_size=1, max_size=4),
    st.integers(0, 6),
    st.sampled_from([b"", b" ", b"\n", b",", b"]", b'"', b"{", b"\\"]),
    st.integers(0, 400),
)
def test_grown_parsing_agrees_with_the_whole_parse(
    kinds: list[int], tail_entries: int, junk: bytes, at: int
) -> None:
    """Fronts printed in several forms, with a character inserted anywhere: the grown
    parse gives the whole parse's entries, or its error."""
    known = None
    for i in range(tail_entries + 1):
        known = prepend(known, _entry(1000 + i, run={"id": i}), key="h")
    assert known is not None
    others = [
        _entry(2000 + n, note="é\n") if k % 2 else _entry(3000 + n) for n, k in enumerate(kinds)
    ]
    forms = [dump(others)[:-3], json.dumps(others, indent=4).encode()[:-2]]
    front = forms[kinds[0] % 2]
    cut = at % (len(front) + 1)
    front = front[:cut] + junk + front[cut:]
    raw = front + b",\n" + known.raw[2:]
    expected = _parsed_or_error(lambda: parse_history(raw, key="h"))
    assert _parsed_or_error(lambda: history_text(raw, key="h").entries) == expected


def _retyped(entry: dict[str, Any], how: str) -> dict[str, Any]:
    """``entry`` changed in a way Python's ``==`` does not see, or does."""
    out = dict(entry)
    if how == "int for true":
        out["flag"] = 1 if out.get("flag") is True else out.get("flag")
    elif how == "float for int":
        out["n"] = float(out["n"])
    elif how == "minus zero":
        out["z"] = -0.0
    elif how == "keys reordered":
        out = dict(reversed(list(out.items())))
    elif how == "nested keys reordered":
        out["author"] = dict(reversed(list(out["author"].items())))
    elif how == "a value changed":
        out["commit_message"] = "changed"
    return out


@pytest.mark.parametrize(
    "how",
    [
        "as printed",
        "int for true",
        "float for int",
        "minus zero",
        "keys reordered",
        "nested keys reordered",
        "a value changed",
        "indent 4",
        "not JSON",
        "no entry in front",
        "one entry more",
    ],
)
def test_a_store_copy_printed_onto_another_is_exactly_the_full_print(how: str) -> None:
    """The store copy printed onto the copy another writer left is ``dump`` of its
    entries, whatever that copy holds: only a copy that prints as the tail is reused."""
    entries = [
        _entry(i, flag=True, n=i, z=0.0, commit_sha=f"{i:040x}", run={"id": [i, None, 1.5]})
        for i in range(30, 0, -1)
    ]
    tail = [dict(e) for e in entries[3:]]
    if how == "indent 4":
        onto = (json.dumps(tail, indent=4, ensure_ascii=False) + "\n").encode()
    elif how == "not JSON":
        onto = dump(tail)[:-40]
    elif how == "no entry in front":
        onto = dump(entries)
    elif how == "one entry more":
        onto = dump(entries[2:] + [_entry(99)])
    else:
        tail[7] = _retyped(tail[7], how)
        onto = dump(tail)
    assert printed(entries, onto, key="h") == dump(entries)
    assert printed(entries, None, key="h") == dump(entries)
