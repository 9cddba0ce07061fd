"""The package boundaries the design promises, checked on the source itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1]
MAX_LINES = 500  # the style guide's "~400 lines", with headroom for docstrings


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


def test_core_never_imports_dagster() -> None:
    offenders = [p for p in _modules("datom_core") if "dagster" in _imports(p)]
    assert offenders == []
    code = "import sys, datom_core, datom_core.cli; print(any(m.startswith('dagster') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_only_the_git_layer_imports_dulwich() -> None:
    users = {
        p.relative_to(SRC / "datom_core")
        for p in _modules("datom_core")
        if "dulwich" in _imports(p)
    }
    assert users and all(path.parts[0] == "_git" for path in users), users


def test_only_the_arrow_boundary_knows_pandas_and_polars() -> None:
    users = {p.name for p in _modules("datom_core") if _imports(p) & {"pandas", "polars"}}
    assert users == {"_arrow.py"}


@pytest.mark.parametrize("package", ["datom_core", "datom_dagster"])
def test_public_api_is_explicit_and_documented(package: str) -> None:
    module = __import__(package)
    assert module.__all__, f"{package} must declare __all__"
    for name in module.__all__:
        obj = getattr(module, name)
        if callable(obj) or isinstance(obj, type):
            assert obj.__doc__, f"{package}.{name} has no docstring"


def test_modules_stay_small() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for package in ("datom_core", "datom_dagster", "example_project")
        for p in _modules(package)
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
