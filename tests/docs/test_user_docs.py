"""The user documentation keeps its promises: a short README that is a landing page, a
troubleshooting entry for every error class, a description for every field of the ``dg``
component, public docstrings that stand alone, and (slow) a docs build with every
warning an error whose API and CLI references cover every public name and command."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest

import datom_core
import datom_dagster
from datom_core.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_README_LINES = 200


def _error_classes() -> list[type[datom_core.DatomError]]:
    """Every subclass of DatomError, however deep (and DatomError itself)."""
    found: list[type[datom_core.DatomError]] = [datom_core.DatomError]
    for cls in found:
        found += [c for c in cls.__subclasses__() if c not in found]
    return [c for c in found if c.__module__.startswith("datom_core")]


def test_the_readme_is_a_short_landing_page() -> None:
    lines = README.splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    for must in (f"pip install {name}", "make demo", "make test", "make docs", "dg dev"):
        assert must in README, must
    assert "## Layout of the code" in README


def test_the_readme_says_what_pypis_datom_is() -> None:
    text = " ".join(README.split())
    assert "`pip install datom` is a different package" in text
    assert "read-only" in text and "reads what this package writes" in text
    # No command block tells a user to install PyPI's datom for this project.
    for source in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        installs = re.findall(
            r"^\s*pip install [\"']?datom(?:\[\w+\])?[\"']?\s*(?:#.*)?$", source.read_text(), re.M
        )
        assert installs == [], (source, installs)
    assert "tests/packaging/test_pypi_datom.py" in text


def test_readme_and_docs_links_resolve() -> None:
    """Relative links of the README and the pages point at files that exist (the README
    once cited spec files that were never in the repository)."""
    sources = [ROOT / "README.md", *DOCS.rglob("*.md")]
    for source in sources:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", source.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (source.parent / target).exists(), f"{source.name}: {target}"
    for stale in ("STORE.md", "SETS.md", "FORMAT2.md", "IDENTITY.md"):
        assert stale not in README, stale


def test_dagster_dev_is_never_advised() -> None:
    """``dagster dev`` prints Dagster's SupersessionWarning; the docs say ``dg dev``."""
    for source in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        text = source.read_text()
        advised = [line for line in text.splitlines() if "dagster dev" in line]
        assert all("SupersessionWarning" in line for line in advised), (source, advised)


@pytest.mark.parametrize("error", _error_classes(), ids=lambda c: c.__name__)
def test_every_error_class_is_in_troubleshooting(error: type) -> None:
    text = (DOCS / "troubleshooting.md").read_text()
    match = re.search(rf"^### `{error.__name__}`\n(.*?)(?=^##|\Z)", text, re.M | re.S)
    assert match, f"docs/troubleshooting.md has no section for {error.__name__}"
    assert "**Means:**" in match.group(1) and "**Do:**" in match.group(1), error.__name__


def test_the_error_walk_finds_the_whole_tree() -> None:
    names = {c.__name__ for c in _error_classes()}
    assert {"DatomError", "UnresolvableMemberError", "MalformedSetError"} <= names
    assert names <= set(datom_core.__all__)


def _undescribed(schema: dict[str, Any]) -> list[str]:
    missing = []
    for model_name, model in {"DatomComponent": schema, **schema.get("$defs", {})}.items():
        for field, spec in model.get("properties", {}).items():
            if not str(spec.get("description", "")).strip():
                missing.append(f"{model_name}.{field}")
    return missing


def test_every_dg_component_field_is_described() -> None:
    """``dg`` shows these descriptions (schema, ``dg utils inspect-component``)."""
    schema = datom_dagster.DatomComponent.get_model_cls().model_json_schema()
    assert _undescribed(schema) == []
    assert {"store", "inbox", "checks"} <= set(schema["properties"])


def test_the_description_check_can_fail() -> None:
    schema = {"properties": {"a": {"description": "x"}}, "$defs": {"M": {"properties": {"b": {}}}}}
    assert _undescribed(schema) == ["M.b"]


def _public_objects() -> list[tuple[str, Any]]:
    out = []
    for package in (datom_core, datom_dagster):
        for name in package.__all__:
            obj = getattr(package, name)
            out.append((f"{package.__name__}.{name}", obj))
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and callable(value):
                        out.append((f"{package.__name__}.{name}.{attr}", value))
    return out


def test_public_docstrings_do_not_send_readers_to_private_modules() -> None:
    """The API reference shows public docstrings only; private module docstrings are not
    published, so a public docstring must carry its content itself."""
    pointing = [
        name
        for name, obj in _public_objects()
        if "module docstring" in (getattr(obj, "__doc__", None) or "")
    ]
    assert pointing == []


def test_the_changelog_names_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(datom_core.__version__)}\b", changelog, re.M)


def _commands(group: click.Group, prefix: str = "datom") -> list[str]:
    names = []
    for name, command in group.commands.items():
        names.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            names += _commands(command, f"{prefix} {name}")
    return names


@pytest.mark.slow
def test_the_docs_build_with_warnings_as_errors(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", **__import__("os").environ},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for package, page in ((datom_core, "api-core"), (datom_dagster, "api-dagster")):
        html = (site / "reference" / f"{page}.html").read_text()
        ids = set(re.findall(rf'id="{package.__name__}\.(\w+)"', html))
        public = {n for n in package.__all__ if not n.startswith("_")}
        assert public - ids == set(), f"{page}: not in the API reference"
    cli_html = (site / "reference" / "cli.html").read_text()
    for command in _commands(cli):
        assert command in cli_html, f"{command} is not in the CLI reference"


def test_the_dg_component_page_explains_every_field() -> None:
    """docs/guides/dg-component.md has a table row for every field of every model."""
    schema = datom_dagster.DatomComponent.get_model_cls().model_json_schema()
    page = (DOCS / "guides" / "dg-component.md").read_text()
    for model in [schema, *schema.get("$defs", {}).values()]:
        for field in model.get("properties", {}):
            assert f"| `{field}` |" in page, field


def _undocumented_members() -> list[str]:
    """Public methods and properties of exported classes (their datom-defined bases
    included) without a docstring: mkdocstrings leaves those out of the API reference."""
    missing = []
    for package in (datom_core, datom_dagster):
        for name in package.__all__:
            obj = getattr(package, name)
            if not inspect.isclass(obj):
                continue
            for klass in obj.__mro__:
                if klass.__module__.split(".")[0] not in ("datom_core", "datom_dagster"):
                    continue
                for attr, value in vars(klass).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(value, staticmethod | classmethod):
                        value = value.__func__
                    function = value.fget if isinstance(value, property) else value
                    if inspect.isfunction(function) and not function.__doc__:
                        missing.append(f"{name}.{attr}")
    return sorted(set(missing))


def test_every_public_method_and_property_has_a_docstring() -> None:
    assert _undocumented_members() == []


def test_public_docstrings_cite_no_missing_spec_files() -> None:
    """Spec files such as STORE.md were never in the repository: the docs pages are."""
    citing = []
    for package in (datom_core, datom_dagster):
        if re.search(r"\b[A-Z0-9]+\.md\b", package.__doc__ or ""):
            citing.append(package.__name__)
    for name, obj in _public_objects():
        function = obj.fget if isinstance(obj, property) else obj
        if re.search(r"\b[A-Z0-9]+\.md\b", getattr(function, "__doc__", None) or ""):
            citing.append(name)
    assert citing == []
