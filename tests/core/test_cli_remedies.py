"""A message of the command line names commands, never Python calls: every remedy the
library raises is translated, and the messages commands really print carry none."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import datom_core as dc
from datom_core.cli._remedies import PYTHON_CALL, cli_remedies
from tests.core.cli_helpers import run, seeded_project

CORE = Path(dc.__file__).parent


def _text(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def _raised_messages() -> list[tuple[str, int, str]]:
    """The literal text of every exception the library raises (outside the CLI)."""
    found = []
    for path in sorted(CORE.rglob("*.py")):
        if "cli" in path.relative_to(CORE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                text = "".join(_text(a) for a in node.exc.args)
                if text:
                    found.append((str(path.relative_to(CORE)), node.lineno, text))
    return found


def test_every_raised_remedy_is_named_as_a_command() -> None:
    messages = _raised_messages()
    assert len(messages) > 200  # the scan sees the library's messages
    with_calls = [m for m in messages if PYTHON_CALL.search(m[2])]
    assert len(with_calls) > 20  # ... and the library does name Python calls
    left = [
        (f, n, cli_remedies(t)) for f, n, t in with_calls if PYTHON_CALL.search(cli_remedies(t))
    ]
    assert left == []


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("list its tables with tables() / datom list", "list its tables with datom list"),
        ("Repair it from git: validate(fix=True).", "Repair it from git: datom validate --fix."),
        (
            "its history (history() / datom history) lists",
            "its history (datom history TABLE) lists",
        ),
        (
            "table 'dm' has no version 'ab'; its history (history() / datom history) lists",
            "table 'dm' has no version 'ab'; its history (datom history dm) lists",
        ),
        ("or create a project (init_repo() / datom init)", "or create a project (datom init)"),
        ("Run validate() on this project.", "Run datom validate on this project."),
        ("drop them with fetch_and_reset(), before", None),
        ("an http(s) URL; field(s) x", "an http(s) URL; field(s) x"),  # not calls
    ],
)
def test_translations(message: str, said: str | None) -> None:
    out = cli_remedies(message)
    assert not PYTHON_CALL.search(out), out
    if said is not None:
        assert out == said


def test_messages_the_cli_prints_name_commands(tmp_path: Path) -> None:
    seeded = seeded_project(tmp_path)
    snapshot = tmp_path / "store" / "datom" / "dm" / ".metadata" / f"{seeded.dm[0]}.json"
    failures = [
        run(*seeded.dev, "show", "nope"),  # "list its tables with tables() / ..."
        run(*seeded.dev, "show", "dm", "-v", "abcdef0"),  # "its history (history() / ...)"
        run("--store", tmp_path / "empty", "--project", "P", "list"),  # init_repo()
        run(*seeded.reader, "sync"),  # a reader cannot write: clone()
        run(*seeded.reader, "set", "show"),
        run(*seeded.dev, "set", "show"),  # a data repo: "holds no set", not "writing needs"
        run("--json", *seeded.dev, "show", "nope"),
    ]
    altered = snapshot.read_text().replace('"nrow": 3', '"nrow": 4')
    assert altered != snapshot.read_text()
    snapshot.write_text(altered)
    failures.append(run(*seeded.reader, "show", "dm", "-v", snapshot.stem))  # validate(fix)
    assert "holds no set" in failures[5].stderr and "writing" not in failures[5].stderr
    for out in failures:
        assert out.exit_code != 0
        assert out.stderr.startswith("datom: error: ")
        assert "datom " in out.stderr.split("datom: error: ", 1)[1], out.stderr  # a command
        assert not PYTHON_CALL.search(out.stderr), out.stderr
        if out.stdout:
            assert not PYTHON_CALL.search(json.loads(out.stdout)["error"]["message"])
