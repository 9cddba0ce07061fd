"""A manifest of thousands of artifacts updated by splicing the changed entries into the
previous text is byte for byte the full re-print, step after step."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

import pytest

from datom_core._project import _manifest_text
from datom_core._project._build import updated_manifest
from datom_core._project._documents import assemble_manifest, dump
from datom_core._project._tip import load_manifest

pytestmark = pytest.mark.usefixtures("accelerated")  # tests of an accelerator itself

NOW = "2030-01-02T03:04:05Z"


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_manifest_text, "utc_now", lambda: NOW)
    monkeypatch.setattr("datom_core._project._documents.utc_now", lambda: NOW)


def _artifact(i: int, kind: str = "table") -> dict[str, Any]:
    if kind == "set":
        return {"kind": "set", "current_version": f"{i:064x}", "member_count": i % 9}
    entry: dict[str, Any] = {
        "kind": "table",
        "current_version": f"{i * 31:064x}",
        "current_data_sha": f"{i * 17:064x}",
        "last_updated": f"2026-01-01T00:00:{i % 60:02d}Z",
        "size_bytes": 7 * i**2,  # lengths differ from entry to entry
        "version_count": 1 + i % 1000,
    }
    if i % 4 == 0:
        entry.update(original_file_sha=f"{i:064x}", original_format="csv")
    return entry


def _full(raw: bytes, entries: Mapping[str, Any]) -> bytes:
    """Parse, merge, assemble and print the whole document: what the splice must equal."""
    base = json.loads(raw)
    merged = dict(base["artifacts"])
    merged.update(entries)
    return dump(assemble_manifest("Pröject", merged, base=base, updated_at=NOW))


def _names(rng: random.Random, n: int) -> list[str]:
    return (
        [f"t{i:05d}" for i in range(n)]
        + ["Ärzte", "zz_last", "A", "é"]
        + [f"x{rng.randrange(10**6)}" for _ in range(20)]
    )


def test_thousands_of_entries_spliced_step_after_step_are_the_full_reprint() -> None:
    rng = random.Random(11)
    names = _names(rng, 3000)
    arts = {n: _artifact(i, "set" if i % 13 == 3 else "table") for i, n in enumerate(names)}
    raw = dump(assemble_manifest("Pröject", arts, updated_at=NOW))
    for step in range(60):
        count = 1 if step % 5 else 3  # sometimes several entries at once
        entries = {}
        for k in range(count):
            pick = rng.random()
            if pick < 0.6:
                name = rng.choice(names)  # replace (its text usually changes length)
            elif pick < 0.8:
                name = f"new{step}-{k}-{rng.choice(['a', 'Z', 'ü', '0'])}"  # insert
            else:
                name = rng.choice(["", "0", "ÿÿ", "t00000", "t02999", "zzzz"])  # the ends
            entries[name] = _artifact(10_000 + step * 7 + k, "set" if step % 9 == 4 else "table")
        expected = _full(raw, entries)
        spliced = _manifest_text.spliced_manifest(raw, "Pröject", entries)
        assert spliced == expected, step
        assert load_manifest(spliced) == json.loads(spliced)
        raw = spliced
    assert len(json.loads(raw)["artifacts"]) > 3000


def test_a_manifest_seen_first_is_spliced_exactly_and_so_is_its_successor() -> None:
    names = _names(random.Random(3), 500)
    arts = {n: _artifact(i) for i, n in enumerate(names)}
    first = (
        json.dumps(assemble_manifest("Pröject", arts), indent=2) + "\n"
    ).encode()  # \\u escapes
    one = {"t00007": _artifact(99)}
    out = updated_manifest(first, "Pröject", one)
    assert out == _full(first, one)
    assert updated_manifest(out, "Pröject", {"é": _artifact(5)}) == _full(out, {"é": _artifact(5)})


def test_no_entries_at_all_is_printed_by_the_full_path() -> None:
    raw = dump({"schema_version": 2, "project_name": "P", "artifacts": {}})
    assert _manifest_text.spliced_manifest(raw, "P", {}) is None
