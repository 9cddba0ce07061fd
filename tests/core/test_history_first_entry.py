"""The newest entry of a store history copy printed here, read without parsing the rest:
what a ``none`` write asks for the commit of the current version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datom_core._project import _commits, _history_text, _mirror
from datom_core._project import _layout as L
from datom_core._project._commits import parsed_history
from datom_core._project._documents import dump
from tests.core.projects import frame, new_project


def _deep_project(tmp_path: Path) -> Any:
    """``ae`` with parents, lineage and extra history fields (nested objects at several
    depths), written 6 times by this process."""
    conn = new_project(tmp_path)
    conn.write("dm", frame(seed=1))
    for i in range(6):
        conn.write(
            "ae",
            frame(seed=10 + i),
            parents=["dm"],
            history_extra={"run": {"id": f"r{i}", "tags": [{"k": "v", "n": i}]}},
        )
    return conn


def test_the_first_entry_of_a_copy_printed_here_is_the_parsed_first_entry(
    tmp_path: Path,
) -> None:
    conn = _deep_project(tmp_path)
    key = L.store_history("ae")
    raw = conn.store.read_bytes(key)
    kept = _history_text._texts.get(raw)
    assert kept is not None and kept._canonical is True and kept._entries is None
    first = _history_text.first_entry(raw, key=key)
    assert kept._entries is None  # the other entries were not parsed
    whole = _history_text.HistoryText(raw, None, key=key).entries
    assert first == whole[0] and len(whole) == 6
    assert first is not None and first.commit_sha and first.raw["run"]["tags"][0]["n"] == 5


def test_a_text_not_printed_here_or_not_canonical_is_left_to_the_full_parse(
    tmp_path: Path,
) -> None:
    conn = _deep_project(tmp_path)
    key = L.store_history("ae")
    entries = json.loads(conn.store.read_bytes(key))
    other = [dict(e, commit_message="edited") for e in entries]
    assert _history_text.first_entry(dump(other), key=key) is None  # never kept
    reformatted = json.dumps(entries, indent=4).encode()
    _history_text.history_text(reformatted, key=key)  # kept, parsed, not canonical
    assert (
        _history_text.first_entry(reformatted, key=key) == parsed_history(reformatted, key=key)[0]
    )


def test_a_none_write_after_a_write_neither_parses_nor_compares_the_histories_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _deep_project(tmp_path)
    sizes: list[int] = []
    real = _history_text.parse_history

    def counted(raw: Any, *, key: str) -> Any:
        entries = real(raw, key=key)
        sizes.append(len(entries))
        return entries

    compared: list[int] = []
    real_strip = _commits.without_commit_sha

    def stripped(entries: Any) -> Any:
        compared.append(len(entries))
        return real_strip(entries)

    monkeypatch.setattr(_history_text, "parse_history", counted)
    monkeypatch.setattr(_commits, "without_commit_sha", stripped)
    result = conn.write("ae", frame(seed=15), parents=["dm"])
    assert result.change == "none" and result.commit is not None
    assert sizes and max(sizes) == 1, sizes  # the newest entry of the store copy alone
    assert compared == []  # the copy is known to mirror git's text: no entries compared
    monkeypatch.undo()
    assert result.commit == _mirror._commit_of(
        conn.store.read_bytes(L.store_history("ae")), "ae", result.version
    )
    assert conn.validate().ok
