"""The plugin is a thin layer: datom_core's public API only, Dagster internals fenced."""

import ast
from pathlib import Path

import datom_core

PLUGIN = Path(__file__).resolve().parents[2] / "datom_dagster"
FENCE = "_dagster_internals.py"
# Non-public Dagster context attributes: only the fence may touch them.
INTERNAL_ATTRIBUTES = {"step_context", "job_def", "asset_layer", "add_asset_metadata"}


def _modules() -> list[Path]:
    modules = sorted(PLUGIN.glob("*.py"))
    assert len(modules) > 10
    return modules


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_no_private_datom_core_or_dagster_imports():
    for path in _modules():
        for name in _imports(ast.parse(path.read_text())):
            assert not name.startswith("datom_core."), f"{path.name} imports {name}"
            assert not name.startswith("dagster._"), f"{path.name} imports {name}"


def test_datom_core_names_used_are_public():
    public = set(datom_core.__all__)
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "dc"
            ):
                assert node.attr in public, f"{path.name} uses dc.{node.attr}, not public"


def test_dagster_internals_only_in_their_module():
    for path in _modules():
        if path.name == FENCE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                assert node.attr not in INTERNAL_ATTRIBUTES, (
                    f"{path.name}:{node.lineno} uses .{node.attr}; go through {FENCE}"
                )


def test_modules_stay_under_400_lines():
    for path in _modules():
        assert len(path.read_text().splitlines()) <= 400, path.name
