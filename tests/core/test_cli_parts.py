"""The command line's pure parts: exit codes, error lines, JSON, progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import datom_core as dc
from datom_core.cli._exit import exit_code_for, report_error
from datom_core.cli._progress import tracker
from datom_core.cli._render import human_size, to_jsonable


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
