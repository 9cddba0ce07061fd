"""A process's first write to an S3 store puts its mirror as every later one does: the
copies it replaces are looked at while its parquet goes up, before its push, and each PUT
after the push is conditional on them (``_mirror_puts.learn_copies``); without the look it
would look at each document after the push, put it, and settle (one more look at git)."""

from __future__ import annotations

from pathlib import Path

import pytest

import datom_core as dc
from datom_core._project import _layout as L
from datom_core._project import _mirror
from tests.core.projects import frame
from tests.faultproxy import FaultProxy

_DOCS = (L.store_history("t"), L.store_metadata("t"), L.STORE_MANIFEST)


def _worker(tmp_path: Path, origin: dc.Connection, bucket: str, url: str) -> dc.Connection:
    return dc.clone(
        origin.repo.remote_url,
        tmp_path / "worker",
        dc.S3Store(bucket, prefix="p", endpoint_url=url),
    )


@pytest.mark.parametrize("plain", [False, True], ids=["fast", "plain"])
def test_a_first_write_looks_at_the_copies_before_its_push_and_settles_nothing(
    tmp_path: Path,
    s3_bucket: str,
    s3_endpoint: str,
    s3_proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
    plain: bool,
) -> None:
    monkeypatch.setenv("DATOM_PLAIN", "1" if plain else "0")
    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    origin = dc.init_repo(tmp_path / "origin", "FIRST", store)
    origin.write("t", frame(seed=1))
    fresh = _worker(tmp_path, origin, s3_bucket, s3_proxy.url)
    settled: list[str] = []
    settle = _mirror._settle
    monkeypatch.setattr(
        _mirror, "_settle", lambda *a, **k: (settled.append("t"), settle(*a, **k))[1]
    )
    s3_proxy.seen.clear()
    result = fresh.write("t", frame(seed=2))
    heads = [t for m, t in s3_proxy.seen if m == "HEAD"]
    looked = [doc for doc in _DOCS if any(t.endswith(doc) for t in heads)]
    if plain:  # each document looked at after the push, then settled
        assert looked == list(_DOCS) and settled == ["t"]
    else:
        assert looked == list(_DOCS) and all(heads.count(h) == 1 for h in heads)
        assert settled == []
    for doc in _DOCS:  # the store's copies are git's (the history's with commit_sha)
        assert store.read_bytes(doc)
    assert store.read_bytes(L.store_metadata("t")) == fresh.repo.read(L.git_metadata("t"))
    assert result.version == fresh.metadata("t").version
    assert origin.validate().ok and fresh.validate().ok


def test_a_copy_replaced_after_the_look_is_not_put_over(
    tmp_path: Path,
    s3_bucket: str,
    s3_endpoint: str,
    s3_proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another writer records and mirrors the table between the first write's look and
    its push: the push is refused, the write rebuilt on the new tip, and its mirror's PUT
    conditional on the copy looked at is refused too; the write then puts and settles,
    and the store ends with the last version's documents."""
    from datom_core._project import _mirror_puts

    store = dc.S3Store(s3_bucket, prefix="p", endpoint_url=s3_endpoint)
    origin = dc.init_repo(tmp_path / "origin", "RACE", store)
    origin.write("t", frame(seed=1))
    fresh = _worker(tmp_path, origin, s3_bucket, s3_proxy.url)
    learn = _mirror_puts.learn_copies
    raced: list[str] = []

    def then_another_writes(ctx: object, table: str) -> object:
        looks = learn(ctx, table)  # type: ignore[arg-type]
        for look in looks:
            look.result()
        if ctx is fresh.context and not raced:  # (the other writer's own write: as it is)
            raced.append("")
            raced[0] = origin.write("t", frame(seed=3)).version
        return looks

    from datom_core._project import _write

    monkeypatch.setattr(_write, "learn_copies", then_another_writes)
    mine = fresh.write("t", frame(seed=2))
    assert raced and mine.version != raced[0]
    assert fresh.metadata("t").version == mine.version
    history = [e.version for e in fresh.history("t")]
    assert history[:2] == [mine.version, raced[0]]
    meta = store.read_bytes(L.store_metadata("t"))
    assert meta == fresh.repo.read(L.git_metadata("t"))
    assert dc.clone(origin.repo.remote_url, tmp_path / "third", store).validate().ok
