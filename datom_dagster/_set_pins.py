"""Loading inputs *as of* a set: the exact versions a data cut pinned.

An input is pinned to a set by its metadata (``AssetIn(metadata={"datom_set": pin})`` or
``datom_pin(set=pin)``), or every datom input of a run at once by the run tag
:data:`AS_OF_SET_TAG` (the input's own ``datom_set`` wins). ``pin`` reads
``"<project>/<set>"`` (the set's current version) or ``"<project>/<set>@<version>"`` (an id
or unique prefix). The versions loaded are recorded as the output's exact parents, as any
other load: a graph re-run as of a cut writes what the cut recorded (``change == "none"``
when nothing else moved).

Where the set lives: the project of the IO manager itself, else the product repo of a
cut defined in this process (:func:`register_product`, which
:func:`~datom_dagster.datom_data_cut` calls), else a project of the same datom home (``<home>/<project>/repo``, the clone of a product repo, whose project.yaml
names its store; else its default store ``<home>/<project>/store``), which is where
:func:`~datom_dagster.datom_data_cut` puts a cut by default. A partitioned input loads the
partitions the set lists (others are left out: the cut defines the data); an input the set
does not list fails the step, naming the set and what it lists.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datom_core as dc
from dagster import InputContext
from datom_dagster import _dagster_internals as internals
from datom_dagster._annotations import plain
from datom_dagster._config import DatomResource, datom_home

__all__ = [
    "AS_OF_SET_TAG", "SetPin", "open_pinned_set", "parse_set_pin", "register_product",
    "set_pin_of", "set_pins",
]  # fmt: skip

AS_OF_SET_TAG = "datom/as_of_set"
"""Run tag pinning every datom input of the run to a set: ``"<project>/<set>[@<version>]"``."""

_READERS: dict[tuple[int, str, str], dc.Connection] = {}
# Product repos of the cuts defined in this process, by project name: a cut's own
# configuration (clone, storage) is where its set is read from.
_PRODUCTS: dict[str, DatomResource] = {}


def register_product(project_name: str, product: DatomResource) -> None:
    """Read sets of ``project_name`` through ``product`` (a cut's product repo)."""
    _PRODUCTS[project_name] = product


@dataclass(frozen=True)
class SetPin:
    """A reference to a set version: project, set name, version (None: current)."""

    project: str
    name: str
    version: str | None = None

    def __str__(self) -> str:
        at = f"@{self.version}" if self.version else ""
        return f"{self.project}/{self.name}{at}"


def parse_set_pin(text: Any) -> SetPin:
    """``"<project>/<set>[@<version>]"`` as a :class:`SetPin` (InvalidArgumentError if not)."""
    if not isinstance(text, str) or "/" not in text:
        raise dc.InvalidArgumentError(
            f"set pin {text!r} must read '<project>/<set>' or '<project>/<set>@<version>'"
        )
    project, _, rest = text.partition("/")
    name, _, version = rest.rpartition("@") if "@" in rest else (rest, "", "")
    try:
        dc.validate_table_name(name)
        if version:
            dc.validate_version(version)
        return SetPin(project, name, version or None)
    except dc.InvalidNameError as e:
        raise dc.InvalidArgumentError(f"set pin {text!r}: {e}") from e


def set_pin_of(context: InputContext, options: Mapping[str, Any]) -> SetPin | None:
    """The set this input is pinned to: its ``datom_set``, else the run's tag, else None."""
    given = plain(options.get("datom_set"))
    if given:
        return parse_set_pin(given)
    step = internals.step_context_or_none(context)
    tag = step.run_tags.get(AS_OF_SET_TAG) if step is not None else None
    return parse_set_pin(tag) if tag else None


def run_set_versions(context: Any, conn: dc.Connection, manager: Any) -> dict[str, str] | None:
    """In a run tagged :data:`AS_OF_SET_TAG`: table -> version the set pins for the tables of
    ``conn``'s project (``manager``: the IO manager or resource of that project); else None."""
    step = internals.step_context_or_none(context)
    tag = step.run_tags.get(AS_OF_SET_TAG) if step is not None else None
    if not tag:
        return None
    home = datom_home(getattr(getattr(manager, "datom", manager), "home", None))
    cut = open_pinned_set(parse_set_pin(tag), conn, home)
    return {m.name: m.version for m in cut.members if m.project == conn.project_name}


def open_pinned_set(pin: SetPin, own: dc.Connection, home: Path) -> dc.SetVersion:
    """The set version ``pin`` names (see the module docstring for where it is looked up)."""
    if pin.project == own.project_name:
        return own.get_set(pin.version, name=pin.name)
    product = _PRODUCTS.get(pin.project)
    if product is not None:
        if not (product.project_clone_path() / ".git").is_dir():
            raise dc.NotFoundError(
                f"set {pin}: its cut has not been written yet (no clone at "
                f"{product.project_clone_path()}); materialize the cut first"
            )
        return product.connection().get_set(pin.version, name=pin.name)
    return _reader(pin.project, home).get_set(pin.version, name=pin.name)


def _reader(project: str, home: Path) -> dc.Connection:
    key = (os.getpid(), str(home), project)
    if key not in _READERS:
        clone = home / project / "repo"
        if (clone / ".git").is_dir():
            _READERS[key] = dc.connect(clone)
        else:
            store = home / project / "store"
            if not store.is_dir():
                raise dc.NotFoundError(
                    f"set project {project!r} is not in the datom home {home} (no {clone}, no "
                    f"{store}); write the cut with datom_data_cut in this home, or pin by "
                    "datom_version"
                )
            _READERS[key] = dc.connect(store=dc.LocalStore(store), project_name=project)
    return _READERS[key]


def set_pins(
    cut: dc.SetVersion, project: str, names: Mapping[str | None, str], label: str
) -> dict[str | None, str | None]:
    """The version the set pins for each partition's table of this project (only those it
    lists; none listed fails, naming the set and its members)."""
    pins: dict[str | None, str | None] = {}
    for pk, name in names.items():
        hits = [m for m in cut.members if m.project == project and m.name == name]
        if len(hits) > 1:
            raise dc.AmbiguousVersionError(
                f"input {label}: set {cut.project}/{cut.name}@{cut.version[:12]} lists table "
                f"{name!r} at {len(hits)} versions; pin it with datom_version instead",
                tuple(m.version for m in hits),
            )
        if hits:
            pins[pk] = hits[0].version
    if not pins:
        listed = ", ".join(sorted(f"{m.project}:{m.name}" for m in cut.members)[:10])
        raise dc.NotFoundError(
            f"input {label}: set {cut.project}/{cut.name}@{cut.version[:12]} lists no table "
            f"{', '.join(sorted(names.values())[:3])} of project {project!r} (it lists "
            f"{listed}); add the asset to the cut, or load this input unpinned"
        )
    return pins
