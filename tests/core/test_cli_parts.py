"""The command line's pure parts: metadata diff, exit codes, error lines, JSON, progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import datom_core as dc
from datom_core.cli._diff import diff_metadata
from datom_core.cli._exit import exit_code_for, report_error
from datom_core.cli._progress import tracker
from datom_core.cli._render import human_size, to_jsonable


def _meta(colnames: object, hashes: object, nrow: int, data_sha: str = "d" * 64) -> dict:
    doc = {"data_sha": data_sha, "nrow": nrow, "colnames": colnames}
    if hashes is not None:
        doc["column_hashes"] = hashes
    return doc


def test_diff_classifies_columns_by_their_hashes() -> None:
    old = _meta(["a", "b", "c"], [{"name": n, "sha": n * 64} for n in "abc"], 10)
    new = _meta(
        ["c", "a", "d"],
        [{"name": "c", "sha": "x" * 64}, {"name": "a", "sha": "a" * 64}, {"name": "d", "sha": "d"}],
        12,
        data_sha="e" * 64,
    )
    d = diff_metadata("dm", old, new)
    assert (d.added, d.removed, d.changed, d.unchanged) == (("d",), ("b",), ("c",), ("a",))
    assert d.reordered is True and d.same_data is False
    assert (d.from_nrow, d.to_nrow, d.nrow_change) == (10, 12, 2)
    assert d.from_version == dc.metadata_sha(old) and d.to_version == dc.metadata_sha(new)
    assert json.loads(json.dumps(d.to_json()))["nrow"]["change"] == 2


def test_diff_reads_the_shapes_r_writes() -> None:
    # R writes a one-element array as a bare value, and very old versions lack column_hashes.
    single = _meta("a", {"name": "a", "sha": "1" * 64}, 1)
    other = _meta("a", {"name": "a", "sha": "2" * 64}, 1)
    assert diff_metadata("t", single, other).changed == ("a",)
    old = _meta(["a", "b"], None, 1)
    d = diff_metadata("t", old, _meta(["a", "c"], [{"name": "a", "sha": "1"}], 1))
    assert (d.unknown, d.added, d.removed, d.changed) == (("a",), ("c",), ("b",), ())


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (dc.NotFoundError("x"), 3),
        (dc.AmbiguousVersionError("x", ("a", "b")), 3),
        (dc.IntegrityError("x"), 4),
        (dc.InvalidNameError("x"), 2),
        (dc.StoreError("x"), 5),
        (dc.PushRejectedError("x"), 5),
        (dc.ReadOnlyError("x"), 5),
        (dc.OnboardingError("x"), 5),
        (ZeroDivisionError("x"), 70),
        (KeyboardInterrupt(), 130),
    ],
)
def test_exit_codes(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_error_lines(capsys: pytest.CaptureFixture[str]) -> None:
    report_error(dc.UnhashableColumnsError("2 columns:\n  - a\n  - b"), debug=False)
    assert capsys.readouterr().err == "datom: error: 2 columns:\n    - a\n    - b\n"
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError as e:
        report_error(e, debug=False)
        quiet = capsys.readouterr().err
        report_error(e, debug=True)
        loud = capsys.readouterr().err
    assert (
        quiet.startswith("datom: error: internal error (ZeroDivisionError") and "--debug" in quiet
    )
    assert "Traceback" not in quiet
    assert loud.startswith("Traceback") and "datom: error: internal error" in loud


def test_records_become_json() -> None:
    node = dc.LineageNode("P", "t", "v", "d", parents=(dc.LineageNode("P", "u", None, "e"),))
    info = dc.VersionInfo("v", "d", None, "now", "me", "msg", extra={"k": (1, 2)})
    value = to_jsonable({"node": node, "info": info, "path": Path("/x")})
    assert json.loads(json.dumps(value)) == value
    assert value["node"]["parents"][0]["table"] == "u"
    assert value["info"]["extra"] == {"k": [1, 2]} and value["path"] == "/x"


def test_human_sizes() -> None:
    assert [human_size(n) for n in (None, 0, 1023, 1536, 5 << 30)] == [
        "-",
        "0 B",
        "1023 B",
        "1.5 KiB",
        "5.0 GiB",
    ]


def test_tracker_draws_only_when_enabled() -> None:
    terminal = io.StringIO()
    with tracker(Console(file=terminal, force_terminal=True, width=80), True) as progress:
        progress.phase("writing dm.csv", total=4)
        progress.advance(4)
    assert "writing dm.csv" in terminal.getvalue() and "4/4" in terminal.getvalue()
    silent = io.StringIO()
    with tracker(Console(file=silent, force_terminal=True), False) as progress:
        progress.phase("writing", total=1)
        progress.advance()
    assert silent.getvalue() == ""
