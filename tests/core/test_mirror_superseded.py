"""A manifest other writers keep replacing in the store: the write it belongs to succeeds
when the remote has moved past its commit (the writers of newer commits mirror a manifest
that names its version), and fails as before when it has not."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._store import Document, LocalStore
from tests.core.projects import frame


class _ContendedManifest(LocalStore):
    """A local store whose manifest PUT is refused as contended once ``armed``, after
    ``meanwhile`` (another writer's write) has run."""

    armed = False
    meanwhile: Callable[[], object] = staticmethod(lambda: None)

    def write_in_order(
        self, documents: Sequence[Document], after: Callable[[int], None] | None = None
    ) -> None:
        if not self.armed or documents[-1][0] != L.STORE_MANIFEST:
            return super().write_in_order(documents, after)
        type(self).armed = False
        super().write_in_order(documents[:-1], after)
        self.meanwhile()
        raise dc.StoreContendedError(
            f"could not write {L.STORE_MANIFEST!r}: contended", L.STORE_MANIFEST
        )


def _two_clones(tmp_path: Path) -> tuple[dc.Connection, dc.Connection]:
    store = _ContendedManifest(tmp_path / "store")
    mine = dc.init_repo(tmp_path / "mine", "P", store)
    mine.write("seed", frame())
    theirs = dc.clone(
        mine.repo.remote_url, tmp_path / "theirs", store=LocalStore(tmp_path / "store")
    )
    return mine, theirs


def test_a_manifest_newer_writers_replace_is_theirs_to_write(tmp_path: Path) -> None:
    mine, theirs = _two_clones(tmp_path)
    _ContendedManifest.meanwhile = staticmethod(lambda: theirs.write("b", frame(seed=2)))
    _ContendedManifest.armed = True
    result = mine.write("a", frame(seed=1))  # recorded, and not reported as failed
    assert not _ContendedManifest.armed, "the manifest PUT was not reached"
    assert mine.read("a").equals(frame(seed=1))
    # the newer writer's manifest names both versions; the store agrees with git
    manifest = mine.store.read_bytes(L.STORE_MANIFEST).decode()
    assert result.version in manifest and {"a", "b", "seed"} <= {t.name for t in mine.tables()}
    assert mine.validate().ok


def test_a_manifest_refused_while_the_remote_holds_this_commit_fails_the_write(
    tmp_path: Path,
) -> None:
    mine, _theirs = _two_clones(tmp_path)
    _ContendedManifest.meanwhile = staticmethod(lambda: None)
    _ContendedManifest.armed = True
    with pytest.raises(dc.StoreContendedError, match="manifest"):
        mine.write("a", frame(seed=1))
