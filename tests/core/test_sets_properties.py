"""Properties of normalisation, hashing and the bytes, over generated payloads."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from datom_core._sets import hash_set, normalise_payload, serialise_payload
from datom_core._sets._read import _set_version

TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    min_size=1,
    max_size=8,
)
VALUES = st.one_of(TEXT, st.lists(TEXT, max_size=4))
TAGS = st.dictionaries(TEXT, VALUES, max_size=4)
IDS = st.fixed_dictionaries(
    {
        "project": st.sampled_from(["P", "Q", "\u00e9"]),
        "name": TEXT,
        "kind": st.sampled_from(["table", "set"]),
        "version": st.text(alphabet="0123456789abcdef", min_size=6, max_size=8),
    }
)
MEMBERS = st.lists(
    st.builds(lambda i, t: {"id": i, "tags": t} if t else {"id": i}, IDS, TAGS),
    min_size=1,
    max_size=6,
    unique_by=lambda m: (m["id"]["project"], m["id"]["name"], m["id"]["version"]),
)


def _norm(members: Any, tags: Any) -> dict[str, Any]:
    return normalise_payload(members, tags, name="zz", project="none")


@settings(max_examples=150, deadline=None)
@given(MEMBERS, TAGS, st.randoms(use_true_random=False))
def test_spelling_never_moves_the_hash_or_the_bytes(
    members: list[Any], tags: dict[str, Any], rnd: random.Random
) -> None:
    p = _norm(members, tags)
    shuffled = [json.loads(json.dumps(m)) for m in members]
    rnd.shuffle(shuffled)
    for m in shuffled:
        for k, v in list((m.get("tags") or {}).items()):
            if isinstance(v, list):
                m["tags"][k] = [*reversed(v), *v]  # reordered and repeated
    q = _norm([*shuffled, shuffled[0]], {k: tags[k] for k in reversed(list(tags))})
    assert q == p
    assert serialise_payload(q) == serialise_payload(p)
    assert hash_set(q) == hash_set(p) == hash_set(_norm(p["members"], p.get("tags")))


@settings(max_examples=150, deadline=None)
@given(MEMBERS, TAGS)
def test_the_bytes_parse_back_to_the_same_set(members: list[Any], tags: dict[str, Any]) -> None:
    p = _norm(members, tags)
    data = serialise_payload(p)
    parsed = json.loads(data)
    assert hash_set(parsed) == hash_set(p)
    assert serialise_payload(_norm(parsed["members"], parsed.get("tags"))) == data
    x = _set_version(None, parsed, "k", None, name="zz", project="none", version="v",
                     data_sha="d", document_sha="s")  # fmt: skip
    assert [m.to_json() for m in x.members] == p["members"]
