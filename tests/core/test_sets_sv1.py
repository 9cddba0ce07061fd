"""datom-sv1 against R's published goldens, payload normalisation and every payload refusal,
and the set.json bytes jsonlite writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from datom_core._errors import DatomError
from datom_core._identity._canonical import _escaped as escaped_by_character
from datom_core._sets import (
    ConflictingMemberError,
    EmptySetError,
    InvalidLabelError,
    InvalidMemberError,
    InvalidSetError,
    SelfReferenceError,
    document_sha,
    hash_set,
    normalise_payload,
    serialise_payload,
)
from datom_core._sets._json import jsonlite_string
from datom_core._sets._sv1 import sv1_map, sv1_member, sv1_set, sv1_str, sv1_strset

CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "sv1_sets.json").read_text())["cases"]
FUNCTIONS: dict[str, Any] = {
    "str": sv1_str,
    "strset": sv1_strset,
    "map": sv1_map,
    "member": sv1_member,
    "set": sv1_set,
    "data_sha": hash_set,
}
V1 = "a" * 64
V2 = "b" * 64


def _digest(fn: str, value: Any) -> str:
    out = FUNCTIONS[fn](value)
    return out if isinstance(out, str) else out.hex()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_r_goldens(case: dict[str, Any]) -> None:
    assert _digest(case["fn"], case["input"]) == case["hex"]


def test_every_fixture_function_is_exercised() -> None:
    assert {c["fn"] for c in CASES} == set(FUNCTIONS)


def member(name: str, version: str = V1, project: str = "STUDY_001", **tags: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": {"project": project, "name": name, "kind": "table", "version": version}
    }
    if tags:
        record["tags"] = tags
    return record


def test_spelling_is_not_identity() -> None:
    a = {"tags": {"d": ["x", "y"]}, "members": [member("dm", type="input"), member("ae")]}
    b = {
        "tags": {"d": ["y", "x", "x"]},
        "members": [member("ae"), member("dm", type=["input"]), member("ae")],
    }
    assert hash_set(a) == hash_set(b)
    assert hash_set(a) != hash_set({**a, "tags": {"d": "x"}})


def test_no_unicode_normalisation() -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    a = {"members": [member("dm", type=nfc)]}
    b = {"members": [member("dm", type=nfd)]}
    assert hash_set(a) != hash_set(b)


@pytest.mark.parametrize(
    "payload, error",
    [
        ({"members": []}, EmptySetError),
        ({}, EmptySetError),
        ({"members": [member("dm")], "schema_version": "2"}, InvalidSetError),
        ({"members": [{**member("dm"), "data_sha": "x"}]}, InvalidMemberError),
        ({"members": [{"tags": {"a": "b"}}]}, InvalidMemberError),
        ({"members": [member("dm", type=None)]}, InvalidLabelError),
        ({"members": [member("dm", type=5)]}, InvalidLabelError),
        ({"members": [member("dm", type=True)]}, InvalidLabelError),
        ({"members": [member("dm", type={"a": "b"})]}, InvalidLabelError),
        ({"members": [member("dm", type=["a", 1])]}, InvalidLabelError),
    ],
)
def test_the_encoder_refuses_what_it_cannot_encode(payload: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        hash_set(payload)


# -- normalisation -------------------------------------------------------------------------


def norm(members: Any, tags: Any = None, name: str = "adam") -> dict[str, Any]:
    return normalise_payload(members, tags, name=name, project="STUDY_001")


def test_normalisation_sorts_dedups_and_drops_empty() -> None:
    p = norm(
        [
            member("dm", V2, type=["b", "a", "a"], empty=[]),
            member("ae"),
            member("ae"),
            member("dm", V1),
        ],
        {"z": "1", "a": ["y", "x"], "none": []},
    )
    assert p["tags"] == {"a": ["x", "y"], "z": ["1"]}
    assert [(m["id"]["name"], m["id"]["version"]) for m in p["members"]] == [
        ("ae", V1),
        ("dm", V1),
        ("dm", V2),
    ]
    assert p["members"][2]["tags"] == {"type": ["a", "b"]}
    assert list(p["members"][0]["id"]) == ["kind", "name", "project", "version"]
    assert "tags" not in p["members"][0]


def test_empty_tag_maps_are_removed() -> None:
    p = norm([member("dm", only=[])], {"k": []})
    assert list(p) == ["members"] and list(p["members"][0]) == ["id"]


def test_members_sort_by_utf8_bytes_not_locale() -> None:
    p = norm([member("b"), member("B"), member("a")], None)
    assert [m["id"]["name"] for m in p["members"]] == ["B", "a", "b"]


@pytest.mark.parametrize(
    "members, tags, error",
    [
        ([], None, EmptySetError),
        ([member("dm", type="a"), member("dm", type="b")], None, ConflictingMemberError),
        ([member("adam")], None, SelfReferenceError),
        (
            [{**member("adam"), "id": {**member("adam")["id"], "kind": "set"}}],
            None,
            SelfReferenceError,
        ),
        ([member("dm", type="")], None, InvalidLabelError),
        ([member("dm")], {"": "x"}, InvalidLabelError),
        ([member("dm")], {"k": None}, InvalidLabelError),
        ([member("dm")], {"k": 3}, InvalidLabelError),
        ([member("dm")], {"k": False}, InvalidLabelError),
        ([member("dm")], {"k": {"nested": "x"}}, InvalidLabelError),
        ([member("dm")], {"k": ["ok", ""]}, InvalidLabelError),
        ([member("dm")], ["not", "a", "map"], InvalidLabelError),
        ([{"id": {"project": "P", "name": "dm", "kind": "table"}}], None, InvalidMemberError),
        ([{"id": {**member("dm")["id"], "extra": "x"}}], None, InvalidMemberError),
        ([{"id": {**member("dm")["id"], "version": ""}}], None, InvalidMemberError),
        ([{"id": {**member("dm")["id"], "name": 5}}], None, InvalidMemberError),
        ([{"id": {**member("dm")["id"], "kind": "view"}}], None, InvalidMemberError),
        ([{**member("dm"), "fetch": "x"}], None, InvalidMemberError),
        (["dm"], None, InvalidMemberError),
        ({"id": 1}, None, InvalidMemberError),
    ],
)
def test_every_payload_refusal_has_its_own_error(
    members: Any, tags: Any, error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        norm(members, tags)
    assert isinstance(info.value, DatomError)


def test_the_same_table_at_two_versions_is_allowed() -> None:
    assert len(norm([member("dm", V1), member("dm", V2)])["members"]) == 2


def test_another_projects_set_of_the_same_name_is_not_self() -> None:
    assert norm([member("adam", project="OTHER")])["members"]


# -- the bytes ---------------------------------------------------------------------------

GOLDEN = (
    "{\n"
    '  "tags": {\n'
    '    "description": "ADaM datasets for STUDY-001"\n'
    "  },\n"
    '  "members": [\n'
    "    {\n"
    '      "id": {\n'
    '        "kind": "table",\n'
    '        "name": "adsl",\n'
    '        "project": "STUDY_001",\n'
    '        "version": "7e21b0aa"\n'
    "      },\n"
    '      "tags": {\n'
    '        "domain": ["efficacy", "safety"],\n'
    '        "type": "output"\n'
    "      }\n"
    "    },\n"
    "    {\n"
    '      "id": {\n'
    '        "kind": "table",\n'
    '        "name": "dm",\n'
    '        "project": "STUDY_001",\n'
    '        "version": "d0922fc7"\n'
    "      },\n"
    '      "tags": {\n'
    '        "type": "input"\n'
    "      }\n"
    "    }\n"
    "  ]\n"
    "}\n"
)


def test_payload_bytes_are_jsonlite_pretty() -> None:
    golden = next(c for c in CASES if c["id"] == "sv1-data-sha-golden")["input"]
    members = golden["members"]
    data = serialise_payload(norm(members, golden["tags"]))
    assert data.decode() == GOLDEN
    assert document_sha(data) == hashlib.sha256(GOLDEN.encode()).hexdigest()
    assert hash_set(json.loads(data)) == golden_sha(golden)


def golden_sha(payload: dict[str, Any]) -> str:
    return next(
        c["hex"] for c in CASES if c["id"] == "sv1-data-sha-golden" and c["input"] == payload
    )


def test_untagged_single_member_payload() -> None:
    data = serialise_payload(norm([member("dm", "d0922fc7")]))
    assert data.decode() == (
        '{\n  "members": [\n    {\n      "id": {\n        "kind": "table",\n'
        '        "name": "dm",\n        "project": "STUDY_001",\n        "version": "d0922fc7"\n'
        "      }\n    }\n  ]\n}\n"
    )


@pytest.mark.parametrize(
    "text, literal",
    [
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("line\nnext\ttab\r\b\f", '"line\\nnext\\ttab\\r\\b\\f"'),
        ("\x01\x1f", '"\\u0001\\u001f"'),
        ("a/b", '"a/b"'),
        ("</script>", '"<\\/script>"'),
        ("caf\u00e9 \u2028 \U0001f600", '"caf\u00e9 \u2028 \U0001f600"'),
        ("\x7f", '"\x7f"'),
    ],
)
def test_strings_escape_as_jsonlite(text: str, literal: str) -> None:
    assert jsonlite_string(text) == literal
    assert json.loads(literal) == text


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from('ab</"\\\x00\x01\n\x1f\x7f\u00e9\u2028\U0001f600')))
def test_a_string_quoted_as_it_is_needed_no_escape(text: str) -> None:
    """The fast path (no character to escape) writes what escaping each character does."""
    assert jsonlite_string(text) == escaped_by_character(text)
