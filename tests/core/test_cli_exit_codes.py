"""Exit codes exactly as ``--help`` says: the table is read from the help itself and walked
for every command, each row with a real situation that must end with that code."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import datom_core as dc
from datom_core.cli._exit import exit_code_for
from datom_core.cli._remedies import PYTHON_CALL
from tests.core.cli_helpers import flip_a_byte, parquet_objects, run, seeded_project
from tests.core.projects import frame
from tests.core.test_sets_support import new_product


@dataclass(frozen=True)
class World:
    """Projects in every state a case needs."""

    root: Path
    dev: tuple[str, ...]  # a healthy clone
    reader: tuple[str, ...]  # its store alone
    damaged: tuple[str, ...]  # a clone whose parquet bytes were altered
    product: tuple[str, ...]  # a product repo with a set
    remote: str
    version: str  # a version of dm


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("exit_codes")
    healthy = seeded_project(root / "healthy")
    broken = seeded_project(root / "broken")
    for obj in parquet_objects(broken.store):
        flip_a_byte(obj)
    product = new_product(root / "product", project="CUT_001", set_name="cut")
    product.write("dm", frame())
    product.write_set([product.member("dm")])
    (root / "refused.csv").write_text("A,A\n1,2\n")  # duplicate column names
    (root / "fine.csv").write_text("A,B\n1,2\n")
    inbox = root / "inbox"
    inbox.mkdir()
    (inbox / "bad.csv").write_text("A,A\n1,2\n")
    return World(
        root,
        healthy.dev,
        healthy.reader,
        broken.dev,
        ("--repo", str(product.path)),
        str(healthy.conn.status().remote),
        healthy.dm[0],
    )


Args = Callable[[World], tuple[object, ...]]

# (command, exit code, arguments): every command, every row of the table that applies to it.
CASES: list[tuple[str, int, Args]] = [
    ("init", 0, lambda w: ("init", w.root / "new", "--project", "NEW")),
    ("init", 2, lambda w: ("init", w.root / "x", "--project", "X", "--mode", "nope")),
    ("init", 5, lambda w: ("init", w.root / "healthy" / "repo", "--project", "STUDY_001")),
    ("clone", 0, lambda w: ("clone", w.remote, w.root / "clone0")),
    ("clone", 2, lambda w: ("clone",)),
    ("clone", 5, lambda w: ("clone", w.root / "no-such-remote.git", w.root / "clone5")),
    ("status", 0, lambda w: (*w.reader, "status")),
    ("status", 2, lambda w: ("--repo", w.root, "status")),
    ("status", 3, lambda w: ("--store", w.root / "empty", "--project", "P", "status")),
    ("list", 0, lambda w: (*w.dev, "list")),
    ("list", 2, lambda w: (*w.dev, "list", "--bogus")),
    ("list", 3, lambda w: ("--store", w.root / "empty", "--project", "P", "list")),
    ("history", 0, lambda w: (*w.dev, "history", "dm")),
    ("history", 2, lambda w: (*w.dev, "history", "bad/name")),
    ("history", 3, lambda w: (*w.dev, "history", "nope")),
    ("show", 0, lambda w: (*w.dev, "show", "dm", "-v", w.version[:8].upper())),
    ("show", 2, lambda w: (*w.dev, "show", "dm", "-v", "xyz")),
    ("show", 3, lambda w: (*w.dev, "show", "dm", "-v", "0000000")),
    ("read", 0, lambda w: (*w.dev, "read", "dm", "-o", "-")),
    ("read", 2, lambda w: (*w.dev, "read", "dm", "-o", "x.unknown")),
    ("read", 3, lambda w: (*w.dev, "read", "dm", "--columns", "NOPE", "-o", "-")),
    ("read", 4, lambda w: (*w.damaged, "read", "dm", "-o", "-")),
    ("read", 5, lambda w: (*w.dev, "read", "dm", "-o", w.root / "no-dir" / "x.csv")),
    ("lineage", 0, lambda w: (*w.dev, "lineage", "adsl")),
    ("lineage", 2, lambda w: (*w.dev, "lineage", "adsl", "--depth", "all")),
    ("lineage", 3, lambda w: (*w.dev, "lineage", "nope")),
    ("diff", 0, lambda w: (*w.dev, "diff", "dm", "--key", "USUBJID")),
    ("diff", 2, lambda w: (*w.dev, "diff", "dm", "zz")),
    ("diff", 3, lambda w: (*w.dev, "diff", "dm", "--key", "NOPE")),
    ("diff", 4, lambda w: (*w.damaged, "diff", "dm", "--key", "USUBJID")),
    ("scan", 0, lambda w: (*w.dev, "scan")),
    ("scan", 2, lambda w: (*w.dev, "scan", "a", "b")),
    ("scan", 3, lambda w: (*w.dev, "scan", w.root / "no-such-inbox")),
    ("sync", 0, lambda w: (*w.dev, "sync")),
    ("sync", 1, lambda w: (*w.dev, "sync", w.root / "inbox")),
    ("sync", 2, lambda w: (*w.dev, "sync", "--stop")),
    ("sync", 5, lambda w: (*w.reader, "sync")),
    ("validate", 0, lambda w: (*w.dev, "validate")),
    ("validate", 1, lambda w: (*w.damaged, "validate")),
    ("validate", 2, lambda w: (*w.dev, "validate", "--fix-all")),
    ("check-hashable", 0, lambda w: ("check-hashable", w.root / "fine.csv")),
    ("check-hashable", 1, lambda w: ("check-hashable", w.root / "refused.csv")),
    ("check-hashable", 2, lambda w: ("check-hashable", w.root / "fine.csv", "--format", "x")),
    ("check-hashable", 3, lambda w: ("check-hashable", w.root / "missing.csv")),
    ("set", 0, lambda w: (*w.product, "set", "show")),
    ("set", 2, lambda w: (*w.product, "set", "show", "not-hex!")),
    ("set", 3, lambda w: (*w.product, "set", "members", "0000000")),
    ("set", 5, lambda w: (*w.dev, "set", "write", "--member", "dm")),  # not a product repo
]


def _help_table(text: str) -> dict[int, str]:
    """The exit-code rows of a help text: code -> what it means."""
    table = text.split("Exit codes:", 1)[1]
    return {int(code): what for code, what in re.findall(r"^\s+(\d+)\s+(\S.*)$", table, re.M)}


def _commands() -> list[str]:
    return sorted(
        re.findall(r"^  ([a-z][a-z-]+)\s", run("--help").stdout.split("Commands:")[1], re.M)
    )


def test_the_help_states_the_table_for_every_command() -> None:
    table = _help_table(run("--help").stdout)
    assert sorted(table) == [0, 1, 2, 3, 4, 5, 70, 130]
    for command in _commands():
        assert _help_table(run(command, "--help").stdout) == table, command


@pytest.mark.parametrize(("command", "code", "args"), CASES, ids=[f"{c}-{n}" for c, n, _ in CASES])
def test_each_command_exits_as_the_help_says(world: World, command: str, code: int, args: Args):
    out = run(*args(world))
    assert out.exit_code == code, (out.stdout[-500:], out.stderr[-1500:])
    if code:
        assert out.stderr.startswith("datom: error: ") or code == 1, out.stderr
    assert not PYTHON_CALL.search(out.stderr), out.stderr  # remedies name commands


def test_the_cases_walk_the_whole_table() -> None:
    """Every command has a case for 0 and 2 and each further row that can happen to it; the
    rows that no one command owns (a finding, integrity, other errors) each have cases."""
    table = _help_table(run("--help").stdout)
    by_command: dict[str, set[int]] = {}
    for command, code, _ in CASES:
        assert code in table
        by_command.setdefault(command, set()).add(code)
    assert sorted(by_command) == _commands()
    for command, codes in by_command.items():
        assert {0, 2} <= codes, command
        assert codes & {1, 3, 4, 5}, command  # and at least one way to fail for a reason
    for code, at_least in ((1, 3), (3, 3), (4, 2), (5, 3)):
        assert sum(code in codes for codes in by_command.values()) >= at_least, code


def test_internal_errors_and_interrupts() -> None:
    assert exit_code_for(RuntimeError("a bug")) == 70
    assert exit_code_for(KeyboardInterrupt()) == 130
    assert exit_code_for(dc.AmbiguousVersionError("x", ("a", "b"))) == 3


def test_ctrl_c_exits_130() -> None:
    """A real process, interrupted while it waits on a store that never answers: 130 and
    one line."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(60)
        endpoint = f"http://127.0.0.1:{server.getsockname()[1]}"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
               "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}  # fmt: skip
        argv = ["--endpoint-url", endpoint, "--store", "s3://bucket/p", "--project", "P", "list"]
        proc = subprocess.Popen(
            [sys.executable, "-c", "from datom_core.cli import main; main()", *argv],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        connection, _ = server.accept()  # the command now waits for an answer
        with connection:
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "datom: error: interrupted"
