"""Fixtures for the cross-language tests: the real R datom, one process per module.

Without R (``Rscript``) or the R packages (``make rdatom`` installs both), every test here
is skipped with the reason, unless ``DATOM_REQUIRE_R=1`` (CI sets it), which turns the
absence into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rdatom.rsession import RSession, missing_r


def _require_r() -> None:
    why = missing_r()
    if why is None:
        return
    message = (
        f"R datom is not installed ({why}): the cross-language tests need it. "
        "Install it with `make rdatom` (root: apt-get installs Debian's R), "
        "or point RDATOM_LIB at an existing install."
    )
    if os.environ.get("DATOM_REQUIRE_R") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def _r_installed() -> None:
    _require_r()


def _session(version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RSession]:
    _require_r()
    session = RSession(version, Path(tmp_path_factory.mktemp(f"r{version.replace('.', '')}")))
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(scope="module")
def r020(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RSession]:
    """An R process with datom 0.2.0 loaded, shared by the tests of one module."""
    yield from _session("0.2.0", tmp_path_factory)


@pytest.fixture(scope="module")
def r011(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RSession]:
    """An R process with datom 0.1.1 loaded, shared by the tests of one module."""
    yield from _session("0.1.1", tmp_path_factory)
