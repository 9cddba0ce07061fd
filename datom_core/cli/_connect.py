"""Which project a command talks to: a clone (developer) or a store alone (reader)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from datom_core import Connection, DatomError, Store, connect, store_from_url

__all__ = ["ConnectionOptions", "find_clone", "make_store", "open_connection"]

_PROJECT_YAML = ".datom/project.yaml"  # what marks a clone (STORE.md)
_DATOM_DIR = "datom"  # the store's root below its location (STORE.md)
_MANIFEST = ".metadata/manifest.json"  # what marks a project in a store


@dataclass(frozen=True)
class ConnectionOptions:
    """The global connection options, as given (flags or ``DATOM_*`` environment variables)."""

    repo: Path | None = None
    store: str | None = None
    project: str | None = None
    endpoint_url: str | None = None
    region: str | None = None


def find_clone(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.datom/project.yaml``, in its
    working tree or, where that lacks it (a sparse checkout leaves ``.datom/`` out), in the
    HEAD of the git repository there."""
    start = start.absolute()
    for directory in (start, *start.parents):
        if (directory / _PROJECT_YAML).is_file():
            return directory
        if (directory / ".git").exists() and _records_project(directory):
            return directory
    return None


def _records_project(directory: Path) -> bool:
    try:
        connect(directory)
    except DatomError:  # not a datom clone (or not one datom can open: said if named)
        return False
    return True


def make_store(url: str, options: ConnectionOptions, *, existing: bool = False) -> Store:
    """The store at ``url``; S3 endpoint and region from the options, credentials from the
    environment only (never from a flag, so they stay out of shell history and ``ps``).

    ``url`` names the location above ``datom/`` (what ``datom init --store`` takes). With
    ``existing``, the ``.../datom`` root itself is taken too, as ``datom status`` and error
    messages print it: when ``url`` ends in ``/datom`` and holds a project's manifest while
    ``url/datom`` holds none, the store is the parent location.
    """
    s3_options: dict[str, Any] = {}
    if options.endpoint_url:
        s3_options["endpoint_url"] = options.endpoint_url
    if options.region:
        s3_options["region"] = options.region
    if s3_options and not url.lower().startswith(("s3://", "s3a://")):
        raise click.UsageError("--endpoint-url and --region apply to s3:// stores only")
    store = store_from_url(url, **s3_options)
    if not existing:
        return store
    above, sep, last = url.rstrip("/").rpartition("/")
    if not sep or last != _DATOM_DIR or not above or above.endswith(("/", ":")):
        return store
    if store.exists(_MANIFEST):
        return store
    parent = store_from_url(above, **s3_options)
    return parent if parent.exists(_MANIFEST) else store


def open_connection(options: ConnectionOptions) -> Connection:
    """Developer connection if a clone is named or found, reader with ``--store/--project``.

    Precedence: ``--repo``; else ``--store`` with ``--project`` (reader); else the clone
    around the working directory. A developer's store is the one ``project.yaml`` records,
    unless ``--store`` overrides it (e.g. a local mirror).
    """
    store = make_store(options.store, options, existing=True) if options.store else None
    if options.repo is not None:
        clone = find_clone(options.repo) if options.repo.is_dir() else None
        if clone is None:
            what = "is not a datom clone" if options.repo.is_dir() else "does not exist"
            raise click.UsageError(
                f"--repo {options.repo} {what} (no {_PROJECT_YAML} in it or above); pass the "
                "path of a clone (datom init / datom clone make one)"
            )
        conn = connect(clone, store=store)
        _check_project(conn, options.project)
        return conn
    if store is not None and options.project:
        return connect(store=store, project_name=options.project)
    if options.project:
        raise click.UsageError(
            "--project needs --store URL (or DATOM_STORE) to open a project as a reader"
        )
    found = find_clone(Path.cwd())
    if found is None:
        remedy = (
            "--store also needs --project NAME to open a project from its store alone"
            if store
            else "pass --repo PATH, or --store URL --project NAME to read a project from its store"
        )
        raise click.UsageError(
            f"not inside a datom clone (no {_PROJECT_YAML} here or in any parent directory); "
            + remedy
        )
    return connect(found, store=store)


def _check_project(conn: Connection, expected: str | None) -> None:
    if expected and expected != conn.project_name:
        raise click.UsageError(
            f"the clone at {conn.path} holds project {conn.project_name!r}, not {expected!r}"
        )
