"""The git-layer tests (``test_git*``) each collect what they leave behind.

A repository a test leaves open, held in a reference cycle (an error's traceback often
holds the handle that raised it), keeps dulwich packs whose finalizers warn when the
garbage collector reaches them: at a random point of a later, unrelated test, where
``filterwarnings = error`` fails it. So each git test is followed by a collection that
fails the test that left the packs, naming them (close the handle; a failed clone or
connect closes its own, see ``tests/core/test_git_open_files.py``).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest


def _unclosed() -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.fixture(autouse=True, scope="module")
def _collected_before(request: pytest.FixtureRequest) -> None:
    """What tests of other files left is collected first, unwarned: it is not theirs."""
    if request.module.__name__.rpartition(".")[2].startswith("test_git"):
        _unclosed()


@pytest.fixture(autouse=True)
def _nothing_left_open(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if request.module.__name__.rpartition(".")[2].startswith("test_git"):
        left = _unclosed()
        assert not left, f"the test left open (close what it opened): {left[:3]}"
