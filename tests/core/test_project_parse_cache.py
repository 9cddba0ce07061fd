"""Parsed metadata documents are remembered by their exact bytes, never by anything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _parse
from tests.core.projects import frame, new_project


def _doc(conn: dc.Connection) -> bytes:
    raw = conn.repo.read("dm/metadata.json")
    assert raw is not None
    return raw


def test_the_same_bytes_give_the_same_record_and_other_bytes_a_new_one(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    raw = _doc(conn)
    first = _parse.parse_metadata(raw, key="dm/metadata.json")
    assert _parse.parse_metadata(bytes(raw), key="dm/metadata.json") is first
    edited = json.loads(raw)
    edited["nrow"] = 99
    other = _parse.parse_metadata(json.dumps(edited).encode(), key="dm/metadata.json")
    assert other.nrow == 99 and other.version != first.version
    # A record parsed from a mapping is never taken from (or put into) the memory.
    assert _parse.parse_metadata(json.loads(raw), key="dm/metadata.json") is not first


def test_a_refused_document_is_refused_every_time(tmp_path: Path) -> None:
    bad = b'{"data_sha": 5}'
    for _ in range(2):
        with pytest.raises(dc.IntegrityError, match="data_sha"):
            _parse.parse_metadata(bad, key="dm/metadata.json")


def test_the_memory_is_bounded(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    doc = json.loads(_doc(conn))
    for i in range(300):
        doc["nrow"] = i
        _parse.parse_metadata(json.dumps(doc).encode(), key="dm/metadata.json")
    kept = _parse._metadata.values()
    assert len(kept) == 256 and kept[0].nrow == 299  # the newest kept, the oldest dropped
