"""A manifest another writer printed is read from a kept one's parts, exactly.

Eight clones writing one project each meet, on every write, a manifest another process
printed. Its parts (the members' texts, the entries, the totals) are found from those of
a manifest kept here: the runs of unchanged members by comparing bytes, the others parsed
alone. The reference is the full path, run with nothing kept: every derived form must be
that one exactly (document, key order, types, member texts, totals), or not be derived.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datom_core._project import _manifest_text as M
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._recent import Recent
from datom_core._project._tip import load_manifest

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

NOW = "2030-01-02T03:04:05Z"


def _entry(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "table",
        "current_version": f"{i:064x}",
        "current_data_sha": f"{i * 7:064x}",
        "last_updated": "2026-01-01T00:00:00Z",
        "size_bytes": 500 + i,
        "version_count": 1 + i % 5,
        **extra,
    }


def _print(entries: dict[str, dict[str, Any]]) -> bytes:
    """A manifest as any writer's full path prints it."""
    return dump(assemble_manifest("P", entries, updated_at=NOW))


@contextmanager
def _nothing_kept() -> Iterator[None]:
    kept = M._forms
    M._forms = Recent(16, 64 << 20)
    try:
        yield
    finally:
        M._forms = kept


def _reference(raw: bytes) -> M._Form | None:
    with _nothing_kept():
        return M._form_of(raw)


def _same(form: M._Form, ref: M._Form, raw: bytes) -> None:
    assert json.dumps(form.doc) == json.dumps(ref.doc) == json.dumps(json.loads(raw))
    assert form.names == ref.names and form.sizes == ref.sizes and form.totals == ref.totals
    assert bytes(form.body) == bytes(ref.body)
    assert json.dumps(form.artifacts) == json.dumps(ref.artifacts)


def _kept(entries: dict[str, dict[str, Any]]) -> bytes:
    """A manifest whose form is kept here (this writer read or printed it)."""
    raw = _print(entries)
    M._forms = Recent(16, 64 << 20)
    assert M._form_of(raw) is not None
    return raw


def _grown(raw: bytes) -> M._Form | None:
    assert M._forms.get(raw) is None  # printed elsewhere: not known here yet
    return M._grown_form(raw)


@pytest.fixture(autouse=True)
def _own_memory() -> Iterator[None]:
    with _nothing_kept():
        yield


def test_a_manifest_with_one_entry_replaced_is_read_from_the_kept_parts() -> None:
    entries = {f"t{i:04d}": _entry(i) for i in range(300)}
    _kept(entries)
    entries["t0150"] = _entry(9999)
    raw = _print(entries)
    form = _grown(raw)
    ref = _reference(raw)
    assert form is not None and ref is not None
    _same(form, ref, raw)
    assert load_manifest(raw) is form.doc  # the door reads the same document, unparsed


def test_other_writers_changes_since_the_kept_one_are_all_read() -> None:
    entries = {f"t{i:04d}": _entry(i) for i in range(200)}
    _kept(entries)
    entries["t0000"] = _entry(1000)  # first
    entries["t0199"] = _entry(1001)  # last
    entries["t0100"] = _entry(1002, size_bytes=10**12)
    del entries["t0050"]
    del entries["t0051"]
    entries["t0050x"] = _entry(1003)  # inserted where the removed ones were
    entries["a_first"] = _entry(1004)  # before every kept one
    entries["z_last"] = _entry(1005)  # after every kept one
    raw = _print(entries)
    form, ref = _grown(raw), _reference(raw)
    assert form is not None and ref is not None
    _same(form, ref, raw)


@pytest.mark.parametrize(
    "hostile",
    [
        # the top level names "artifacts" twice: a full parse keeps the last
        lambda raw: raw.replace(
            b'"project_name": "P",', b'"project_name": "P",\n  "artifacts": {},'
        ),
        # ... or the last of them an empty one, after the members
        lambda raw: raw.replace(b'\n  "updated_at"', b'\n  "artifacts": {},\n  "updated_at"'),
        # a member repeated
        lambda raw: raw.replace(b'  "t0003": {', b'  "t0002": {'),
        # names out of order
        lambda raw: raw.replace(b'"t0003": {', b'"t0000a": {'),
        # a changed member printed another way
        lambda raw: raw.replace(b'"size_bytes": 9999', b'"size_bytes":  9999'),
        # an entry key repeated
        lambda raw: raw.replace(
            b'"size_bytes": 9999', b'"size_bytes": 1,\n      "size_bytes": 9999'
        ),
        # not an object
        lambda raw: raw.replace(b'"t0003": {', b'"t0003": [').replace(b"t0003", b"t0003"),
        # cut short
        lambda raw: raw[: len(raw) // 2],
        # a float where the kept entry had an int (printed differently: parsed)
        lambda raw: raw.replace(b'"size_bytes": 9999', b'"size_bytes": 9999.0'),
    ],
)
def test_a_hostile_or_hand_edited_text_is_read_exactly_or_by_the_full_path(hostile: Any) -> None:
    entries = {f"t{i:04d}": _entry(i) for i in range(8)}
    _kept(entries)
    entries["t0003"] = _entry(3, size_bytes=9999)
    raw = hostile(_print(entries))
    form = _grown(raw)
    ref = _reference(raw)
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        parsed = None
    if form is not None:
        assert ref is not None
        _same(form, ref, raw)
    if ref is not None and parsed is not None:
        assert json.dumps(ref.doc) == json.dumps(parsed)


_names = st.lists(st.text("abcdefgh_0123456789ü", min_size=1, max_size=6), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(
    names=_names,
    edits=st.lists(
        st.tuples(st.sampled_from(["replace", "add", "drop"]), st.integers(0, 10**6)), max_size=8
    ),
    junk=st.one_of(
        st.none(), st.tuples(st.integers(0, 10**6), st.sampled_from(list(b' ,{}[]"\n\\:x0')))
    ),
)
def test_any_edit_and_any_junk_are_read_exactly_or_by_the_full_path(
    names: list[str], edits: list[tuple[str, int]], junk: tuple[int, int] | None
) -> None:
    entries = {name: _entry(i) for i, name in enumerate(sorted(set(names)))}
    _kept(entries)
    for what, n in edits:
        keys = sorted(entries)
        if what == "replace" and keys:
            entries[keys[n % len(keys)]] = _entry(n)
        elif what == "drop" and len(keys) > 1:
            del entries[keys[n % len(keys)]]
        else:
            entries[f"{keys[n % len(keys)] if keys else ''}{n % 97}"] = _entry(n)
    raw = _print(entries)
    if junk is not None:
        at = junk[0] % len(raw)
        raw = raw[:at] + bytes([junk[1]]) + raw[at:]
    if M._forms.get(raw) is not None:
        return  # no edit: the kept text itself
    form = _grown(raw)
    ref = _reference(raw)
    if junk is None:
        assert form is not None  # a clean edit is always read from the kept parts
    if form is not None:
        assert ref is not None
        _same(form, ref, raw)


def test_a_splice_onto_a_grown_form_prints_what_the_full_path_prints() -> None:
    entries = {f"t{i:04d}": _entry(i) for i in range(50)}
    _kept(entries)
    entries["t0010"] = _entry(500)
    theirs = _print(entries)
    assert _grown(theirs) is not None
    mine = M.spliced_manifest(theirs, "P", {"t0020": _entry(600)})
    assert mine is not None
    entries["t0020"] = _entry(600)
    doc = json.loads(mine)
    assert mine == dump(assemble_manifest("P", entries, updated_at=doc["updated_at"]))
