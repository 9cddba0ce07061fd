"""The git command line as a colleague on datom's remote: ``gc``, ``repack`` and
``maintenance`` between and during datom's writes, multi-pack-indexes and bitmaps,
``.keep`` and cruft packs. datom compacts the remote after every push here (budgets of a
few objects and two packs); after each scenario ``git fsck --strict --full`` is clean,
``git clone --no-local`` of the remote works, ``git maintenance run`` accepts it, and no
file git keeps beside a pack (``.keep``, ``.mtimes``, ``.bitmap``, ``.rev``) is left
without its pack."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from datom_core._git import Author, MetadataRepo, TreeReader
from datom_core._git import _maintenance as maint
from tests.gitcli import GIT, git, needs_git

pytestmark = needs_git

ME = Author("Ada Lovelace", "ada@example.org")
_SIDECARS = (".keep", ".mtimes", ".bitmap", ".rev", ".promisor")


@pytest.fixture(autouse=True)
def _compact_every_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    monkeypatch.setattr(maint, "PACK_BUDGET", 2)
    monkeypatch.setattr(maint, "REMOTE_CHECK_EVERY", 1)
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1)


@pytest.fixture
def origin(tmp_path: Path) -> Iterator[tuple[MetadataRepo, Path]]:
    """(a datom clone, its local bare remote) with a few writes already pushed."""
    repo = MetadataRepo.init(tmp_path / "origin", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "origin")
    _writes(repo, range(6))
    yield repo, bare


def _writes(repo: MetadataRepo, numbers: range) -> None:
    for i in numbers:
        repo.commit_and_push(_build(i), f"write {i}", ME)


def _build(i: int) -> Callable[[TreeReader], dict[str, bytes]]:
    def build(tree: TreeReader) -> dict[str, bytes]:
        return {
            f"t{i % 3}/metadata.json": f'{{"v": {i}}}'.encode() * 40,
            "log.txt": (tree.read("log.txt") or b"") + f"{i}\n".encode(),
        }

    return build


def _pack_files(bare: Path) -> list[str]:
    return sorted(os.listdir(bare / "objects" / "pack"))


def assert_git_accepts(bare: Path, tmp_path: Path, writes: int | None = None) -> None:
    """git's own checks of a remote after a scenario (see the module's docstring)."""
    git(bare, "fsck", "--strict", "--full", "--no-dangling")
    clone = tmp_path / f"no-local-{len(list(tmp_path.iterdir()))}"
    done = subprocess.run(
        [GIT or "git", "clone", "-q", "--no-local", str(bare), str(clone)],
        capture_output=True,
        text=True,
        env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path)),
    )
    assert done.returncode == 0, done.stderr
    if writes is not None:
        assert len((clone / "log.txt").read_text().splitlines()) == writes
    files = _pack_files(bare)
    packs = {f.rsplit(".", 1)[0] for f in files if f.endswith(".pack")}
    orphans = [
        f
        for f in files
        if f.startswith("pack-") and f.endswith(_SIDECARS) and f.rsplit(".", 1)[0] not in packs
    ]
    assert not orphans, f"git's files left without their pack: {orphans}"
    git(bare, "maintenance", "run")
    git(bare, "fsck", "--strict", "--full", "--no-dangling")


# -- between datom's writes --------------------------------------------------------------

_BETWEEN: dict[str, list[list[str]]] = {
    "midx-and-bitmap": [["repack", "-d", "--write-midx", "--write-bitmap-index"]],
    "incremental-repack": [
        ["multi-pack-index", "write"],
        ["maintenance", "run", "--task=incremental-repack"],
    ],
    "maintenance-tasks": [
        ["maintenance", "run", "--task=loose-objects", "--task=commit-graph"],
        ["maintenance", "run", "--task=incremental-repack"],
    ],
    "full-repack-with-bitmap": [["repack", "-a", "-d", "-b"]],
    "gc": [["gc"]],
    "gc-cruft": [["gc", "--cruft", "--prune=1.week.ago"]],
}


@pytest.mark.parametrize("commands", list(_BETWEEN.values()), ids=list(_BETWEEN))
def test_datom_compaction_keeps_what_git_maintenance_wrote(
    origin: tuple[MetadataRepo, Path], tmp_path: Path, commands: list[list[str]]
) -> None:
    """datom's next compactions merge only packs it can account for: none a
    multi-pack-index (or its bitmap) names, none with a bitmap, reverse index, ``.keep``
    or cruft ``.mtimes``. (They had merged and deleted the packs a multi-pack-index named:
    ``git fsck`` failed, and with its bitmap ``git clone --no-local`` aborted.)"""
    repo, bare = origin
    for args in commands:
        git(bare, *args)
    held = {f for f in _pack_files(bare) if f.endswith((".pack", *_SIDECARS))}
    _writes(repo, range(6, 20))
    assert held <= set(_pack_files(bare))  # git's packs, and its files beside them
    assert_git_accepts(bare, tmp_path, writes=20)


def _dangling_blob(bare: Path, text: str) -> str:
    done = subprocess.run(
        [GIT or "git", "-C", str(bare), "hash-object", "-w", "--stdin"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_keep_and_cruft_packs_stay_whole_with_their_files(
    origin: tuple[MetadataRepo, Path], tmp_path: Path
) -> None:
    """A ``.keep`` pack and a cruft pack (unreachable objects, ages in ``.mtimes``) are
    never merged away: they had been, leaving their ``.keep`` and ``.mtimes`` behind and the
    unreachable objects made young again in an ordinary pack."""
    repo, bare = origin
    git(bare, "repack", "-a", "-d")
    (kept,) = [f for f in _pack_files(bare) if f.endswith(".pack")]
    (bare / "objects" / "pack" / kept).with_suffix(".keep").write_text("colleague\n")
    _writes(repo, range(6, 10))
    garbage = _dangling_blob(bare, "a colleague's unreachable draft\n")
    git(bare, "gc", "--cruft", "--prune=1.week.ago")
    cruft = [f for f in _pack_files(bare) if f.endswith(".mtimes")]
    assert cruft, "git wrote no cruft pack"
    before = set(_pack_files(bare))
    _writes(repo, range(10, 24))
    after = set(_pack_files(bare))
    assert {kept, kept[:-5] + ".keep", kept[:-5] + ".idx"} <= after
    for mtimes in cruft:
        assert {mtimes, mtimes[:-7] + ".pack", mtimes[:-7] + ".idx"} <= after
    assert before - after <= {f for f in before if not _git_held(f, before)}
    assert git(bare, "cat-file", "-t", garbage).strip() == "blob"
    assert_git_accepts(bare, tmp_path, writes=24)


def _git_held(name: str, files: set[str]) -> bool:
    base = name.rsplit(".", 1)[0]
    return any(base + s in files for s in _SIDECARS)


def test_a_clone_git_maintained_by_its_user_is_compacted_without_harm(
    origin: tuple[MetadataRepo, Path], tmp_path: Path
) -> None:
    """The same rule in datom's own clone, where a user ran ``git maintenance``."""
    repo, bare = origin
    clone_git = repo.path / ".git"
    git(clone_git, "repack", "-d", "--write-midx", "--write-bitmap-index")
    _writes(repo, range(6, 20))
    git(repo.path, "fsck", "--strict", "--full", "--no-dangling")
    assert_git_accepts(bare, tmp_path, writes=20)
