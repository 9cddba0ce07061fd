"""The extras say what they bring: ``make demo`` installs the ``demo`` extra alone, and
that extra (with the core dependencies) covers every import of the example project
without the test toolchain."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.packaging.venvs import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _third_party_imports(folder: Path) -> set[str]:
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    ours = {"datom_core", "datom_dagster", "example_project", "__future__"}
    return {n for n in names if n not in ours and n not in sys.stdlib_module_names}


def test_the_demo_extra_covers_the_example_and_nothing_of_the_tests() -> None:
    core = {_name(r) for r in PYPROJECT["dependencies"]}
    demo = {_name(r) for r in PYPROJECT["optional-dependencies"]["demo"]}
    test = {_name(r) for r in PYPROJECT["optional-dependencies"]["test"]}
    provided = packages_distributions()
    needed = {
        module: {d.lower().replace("_", "-") for d in provided.get(module, [module])}
        for module in _third_party_imports(ROOT / "example_project")
    }
    uncovered = {m: d for m, d in needed.items() if not d & (core | demo)}
    assert uncovered == {}, "example_project imports what the demo extra does not install"
    toolchain = {"pytest", "playwright", "moto", "hypothesis", "mypy", "ruff", "dagster-celery"}
    assert demo & toolchain == set() and toolchain <= test


def test_make_demo_installs_the_demo_extra_only() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo_stamp = re.search(r"^\$\(DEMO_STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M)
    assert demo_stamp and "'.[demo]'" in demo_stamp.group(1)
    demo = re.search(r"^demo:(.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert demo and "$(STAMP)" not in demo.group(1) + demo.group(2)
    assert "$(DEMO_STAMP)" in demo.group(1) + demo.group(2)
    assert "s in all" in demo.group(2)  # the whole first run prints its time


def test_the_dg_extra_brings_dg() -> None:
    extras = PYPROJECT["optional-dependencies"]
    assert "dagster-dg-cli" in {_name(r) for r in extras["dg"]}
    assert {"dagster", "dg", "ui", "test", "docs", "demo", "polars"} <= set(extras)
