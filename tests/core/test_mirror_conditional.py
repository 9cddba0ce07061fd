"""A mirror whose PUTs are each conditional on the copy its store wrote last (S3's
``If-Match``) does not look at the remote after them; where that cannot be trusted it
settles as before, and a settling writer puts right any copy that is not the tip's."""

from __future__ import annotations

from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._project._mirror import PushedMirror, TableDocuments
from datom_core._store import LocalStore
from tests.core.projects import frame
from tests.core.test_concurrency_mirror import assert_store_is_git

pytestmark = pytest.mark.timeout(300)


def _documents(conn: dc.Connection, table: str) -> TableDocuments:
    repo = conn.repo
    return TableDocuments(
        table,
        repo.read(L.git_metadata(table)) or b"",
        repo.read(L.git_history(table)) or b"",
        repo.read(L.MANIFEST) or b"",
    )


def _replay(conn: dc.Connection, mirror: PushedMirror, docs: TableDocuments, commit: str) -> None:
    """The mirror of ``commit`` (pushed already) landing only now."""
    mirror.start({L.git_history(docs.table): docs.history, L.MANIFEST: docs.manifest}, commit)
    mirror.finish()


def test_a_mirror_started_before_its_stores_other_write_does_not_skip_the_look(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    """The same store wrote a newer commit's manifest while this mirror was pushed (another
    thread's write): the copy it wrote last is no longer one this commit may replace
    unseen. Conditioned on it, the older manifest would replace the newer one with no look
    to put it right."""
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    conn = dc.init_repo(tmp_path / "p", "P", store)
    conn.write("dm", frame(seed=1))
    older = conn.write("dm", frame(seed=2))
    docs = _documents(conn, "dm")
    mirror = PushedMirror(conn.context, "dm", docs.metadata, older.version)
    conn.write("ae", frame(seed=3))  # the same store, a newer commit, mirrored first
    _replay(conn, mirror, docs, older.commit)
    assert_store_is_git(conn)


def test_a_write_of_a_reverted_version_reads_its_mirror_back(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    """A revert's ``metadata.json`` is an earlier version's bytes: its writer settles,
    reading back even when the remote did not move, and its documents end as git's."""
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    conn = dc.init_repo(tmp_path / "p", "P", store)
    first = conn.write("dm", frame(seed=1))
    conn.write("dm", frame(seed=2))
    conn.write("dm", frame(seed=3))
    reverted = conn.write("dm", frame(seed=1))
    assert reverted.version == first.version
    assert store.read_bytes(L.store_metadata("dm")) == conn.repo.read(L.git_metadata("dm"))
    assert_store_is_git(conn)


class _LateCopy(LocalStore):
    """A store where an older writer's copy of the manifest (``late``, once) lands as
    the history of ``dm`` is next read (a settling writer reading back its documents)."""

    late: bytes | None = None

    def read_if_present(self, key: str) -> bytes | None:
        if key == L.store_history("dm") and self.late is not None:
            late, self.late = self.late, None
            self.write_bytes(L.STORE_MANIFEST, late)
        return super().read_if_present(key)


def test_a_reverts_writer_puts_right_a_copy_neither_its_own_nor_the_tips(
    tmp_path: Path,
) -> None:
    """A revert's documents are an earlier version's bytes: an older writer's late PUT,
    conditional on those bytes, lands and does not look back. So the reverting writer
    replaces any copy it reads back that is not the tip's (an older writer's, landed
    late), not only its own."""
    store = _LateCopy(tmp_path / "store", prefix="p")
    first = dc.init_repo(tmp_path / "first", "P", store)
    second = dc.clone(first.repo.remote_url, tmp_path / "second", store)
    first.write("dm", frame(seed=1))
    first.write("dm", frame(seed=2))
    reverted = first.write("dm", frame(seed=1))  # a revert
    docs = _documents(first, "dm")
    second.pull()
    second.write("ae", frame(seed=2))
    middle = store.read_bytes(L.STORE_MANIFEST)  # neither first's nor, soon, the tip's
    second.write("dm", frame(seed=3))
    assert_store_is_git(second)
    mirror = PushedMirror(first.context, "dm", docs.metadata, reverted.version)
    mirror._kept.result()  # its read of the store's history, while the commit was pushed
    store.late = middle
    _replay(first, mirror, docs, reverted.commit)
    assert store.late is None
    assert_store_is_git(second)
