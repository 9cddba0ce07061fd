"""The git command line as a colleague on datom's remote: ``gc``, ``repack`` and
``maintenance`` between and during datom's writes, multi-pack-indexes and bitmaps,
``.keep`` and cruft packs. datom compacts the remote after every push here (budgets of a
few objects and two packs); after each scenario ``git fsck --strict --full`` is clean,
``git clone --no-local`` of the remote works, ``git maintenance run`` accepts it, and no
file git keeps beside a pack (``.keep``, ``.mtimes``, ``.bitmap``, ``.rev``) is left
without its pack."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dulwich.repo import Repo

from datom_core._errors import DatomError, GitError
from datom_core._git import Author, MetadataRepo, TreeReader, _diff
from datom_core._git import _maintenance as maint
from datom_core._git._fast import _compact
from datom_core._git._settings import open_repo
from tests.gitcli import GIT, appending, git, needs_git, write_beside_git

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
    repo.close()  # dulwich's packs left to the garbage collector warn when it gets to them


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


@pytest.mark.usefixtures("accelerated")  # the compaction accelerator itself
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


# -- during datom's writes -----------------------------------------------------------------


def test_writes_go_on_while_git_removes_empty_object_folders(tmp_path: Path) -> None:
    """``git gc`` and ``git repack -d`` end with prune-packed, which removes every empty
    loose-object folder: one made by a push a moment before its object file is created
    (the thread here does just that, all the time). A write failed then, as "Cannot push
    to <remote>: No such file or directory. Check the remote path/URL." (about one write
    in fifteen here); git's own object writer makes the folder again."""
    repo = MetadataRepo.init(tmp_path / "origin", None)
    objects = MetadataRepo.embedded_remote_path(tmp_path / "origin") / "objects"
    stop = threading.Event()

    def prune_empty_folders() -> None:
        while not stop.is_set():
            for i in range(256):
                with contextlib.suppress(OSError):  # not empty, or not there
                    os.rmdir(objects / f"{i:02x}")

    colleague = threading.Thread(target=prune_empty_folders, daemon=True)
    colleague.start()
    failed: list[str] = []
    try:
        for i in range(150):
            try:
                repo.commit_and_push(appending(f"{i}"), f"c{i}", ME)
            except DatomError as e:
                failed.append(str(e))
    finally:
        stop.set()
        colleague.join(10)
    assert failed == []
    assert len(repo.log()) == 150
    repo.close()


@pytest.mark.parametrize(
    "args", [["gc"], ["repack", "-a", "-d"], ["repack", "-d", "--write-midx"]],
    ids=["gc", "repack-a-d", "repack-midx"],
)  # fmt: skip
def test_two_writers_beside_a_git_gc_loop_lose_nothing(
    origin: tuple[MetadataRepo, Path], tmp_path: Path, args: list[str]
) -> None:
    """Two clones write while a colleague runs git's gc or repack on the remote over and
    over (and datom compacts it after every push): every write lands once, and git
    accepts the remote afterwards."""
    repo, bare = origin
    other = MetadataRepo.clone(repo.remote_url, tmp_path / "other")
    try:
        failed = write_beside_git({"a": repo, "b": other}, 40, [(bare, args)])
    finally:
        other.close()
    assert failed == []
    repo.fetch_and_reset()
    lines = (repo.read("log.txt") or b"").decode().splitlines()
    assert sorted(lines[6:]) == sorted(f"{n}{i}" for n in "ab" for i in range(40))
    assert_git_accepts(bare, tmp_path, writes=86)


def test_a_branch_whose_objects_git_pruned_is_a_datom_error_naming_the_remedy(
    origin: tuple[MetadataRepo, Path],
) -> None:
    """``git gc --prune=now`` (which git warns is unsafe while others write) deletes a
    push's objects before its branch points at them: the remote's branch then names a
    commit it lacks. Every later write raised a bare ``KeyError``."""
    repo, bare = origin
    tree = git(bare, "rev-parse", "main^{tree}").strip()
    lost = git(
        bare, "-c", "user.name=Colleague", "-c", "user.email=c@example.org",
        "commit-tree", tree, "-p", "main", "-m", "a push pruned away",
    ).strip()  # fmt: skip
    git(bare, "update-ref", "refs/heads/main", lost)
    (bare / "objects" / lost[:2] / lost[2:]).unlink()  # what the prune took
    with pytest.raises(GitError, match=f"lacks the git object {lost}.*git fsck") as failed:
        repo.commit_and_push(appending("after"), "after", ME)
    assert "prune" in str(failed.value) and "update-ref" in str(failed.value)
    assert git(bare, "rev-parse", "main").strip() == lost  # nothing changed


def test_a_pack_git_is_still_writing_is_left_alone(
    origin: tuple[MetadataRepo, Path], tmp_path: Path
) -> None:
    """``git repack`` writes its new pack as ``.tmp-<pid>-pack-<id>.pack`` and ``.idx`` and
    renames them when done; dulwich lists such a pair as a pack. datom's compaction merged
    it and deleted its files under git (``git fsck`` then failed: "failed to load pack", or
    a branch's objects gone; about one run in ten of the gc-loop test above)."""
    repo, bare = origin
    packs = bare / "objects" / "pack"
    git(bare, "repack", "-q")  # a pack to copy: git's own, finished
    source = sorted(packs.glob("pack-*.pack"))[0].with_suffix("")
    temporary = packs / f".tmp-99999-{source.name}"
    for suffix in (".pack", ".idx"):  # git mid-repack: its pack not yet renamed
        temporary.with_suffix(suffix).write_bytes(source.with_suffix(suffix).read_bytes())
    before = {s: temporary.with_suffix(s).read_bytes() for s in (".pack", ".idx")}
    _writes(repo, range(6, 14))  # datom compacts after every push here
    assert {s: temporary.with_suffix(s).read_bytes() for s in (".pack", ".idx")} == before
    for suffix in (".pack", ".idx"):
        temporary.with_suffix(suffix).unlink()  # what git's rename would do
    assert_git_accepts(bare, tmp_path)


def test_a_pack_git_deletes_while_the_compaction_lists_packs_is_not_reopened(
    origin: tuple[MetadataRepo, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """dulwich's ``store.packs`` hands out the packs it had cached, then looks at the folder
    and closes those gone. A pack ``git repack -d`` deleted at that moment was handed out
    closed; the compaction's len() reopened its index outside the cache, and the garbage
    collector later warned of an unclosed pack (the gc-loop test's rare teardown error)."""
    repo, bare = origin
    git(bare, "repack", "-q")
    store = Repo(str(bare)).object_store
    listed = store.packs
    assert listed
    victim = listed[0]
    real = type(store)._update_pack_cache
    looks = []

    def look(self: object) -> list[object]:
        looks.append(1)
        if len(looks) == 2:  # git deleting the pack between two looks at the folder:
            os.unlink(victim._basename + ".pack")  # its .pack gone, its .idx not yet
        return real(self)  # type: ignore[arg-type]

    monkeypatch.setattr(type(store), "_update_pack_cache", look)
    try:
        found = _compact._mergeable(store)
        for p in found:
            len(p)  # what the compaction asks first
        cached = list(store._iter_cached_packs())
        strays = [p for p in found if not any(p is c for c in cached) and p._idx is not None]
        assert strays == [], "a pack opened outside the store's cache: nothing closes it"
    finally:
        store.close()


def test_a_pack_git_renames_while_a_push_is_searched_for_is_not_left_open(
    origin: tuple[MetadataRepo, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """dulwich's search for the objects to copy or push probes bitmaps on ``store.packs``:
    the cached packs, then a look that closes those gone. A pack ``git repack`` was
    renaming just then (``.tmp-*``: its ``.pack`` moved, its ``.idx`` not yet) was probed
    closed and its index reopened outside the cache; the garbage collector later warned
    of an unclosed pack (the plain-mode gc-loop test's rare teardown error)."""
    repo, bare = origin
    git(bare, "repack", "-a", "-d", "-q", "--no-write-bitmap-index")  # a bitmap ends the probe
    packs = bare / "objects" / "pack"
    source = sorted(packs.glob("pack-*.pack"))[0].with_suffix("")
    temporary = packs / f".tmp-99999-{source.name}"
    for suffix in (".pack", ".idx"):
        temporary.with_suffix(suffix).write_bytes(source.with_suffix(suffix).read_bytes())
    remote = open_repo(bare, "the remote")  # as datom opens it
    store = remote.object_store
    renaming = next(p for p in store.packs if os.path.basename(p._basename).startswith("."))
    len(renaming)  # its index read, as any lookup does
    probe = type(store).get_reachability_provider

    def git_renames_now(self: object, *args: object, **kwargs: object) -> object:
        with contextlib.suppress(FileNotFoundError):
            temporary.with_suffix(".pack").unlink()  # git renames the .pack first
        return probe(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(store), "get_reachability_provider", git_renames_now)
    try:
        tip = git(bare, "rev-parse", "main").strip().encode()
        assert _diff.commit_object_ids(store, [tip])
        assert renaming._idx is None and renaming._data is None, "an index left open"
    finally:
        temporary.with_suffix(".idx").unlink()
        remote.close()


def test_a_pack_git_renames_while_dulwich_adds_a_pack_is_not_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dulwich names a pack it adds against every pack (``store.packs``, each one's
    name read from its index): a pack git renamed just then was reopened outside the
    cache, as in the search above. datom adds a pack so when it copies many objects."""
    from dulwich.objects import Blob

    from datom_core._git import _copy

    bare = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    tree = git(bare, "hash-object", "-w", "-t", "tree", "/dev/null").strip()  # the empty tree
    commit = git(
        bare, "-c", "user.name=C", "-c", "user.email=c@example.org", "commit-tree", tree, "-m", "c"
    ).strip()  # fmt: skip
    git(bare, "update-ref", "refs/heads/main", commit)
    git(bare, "repack", "-a", "-d", "-q")
    packs = bare / "objects" / "pack"
    source = sorted(packs.glob("pack-*.pack"))[0].with_suffix("")
    temporary = packs / f".tmp-99999-{source.name}"
    for suffix in (".pack", ".idx"):
        temporary.with_suffix(suffix).write_bytes(source.with_suffix(suffix).read_bytes())
    r = open_repo(bare, "the remote")
    store = r.object_store
    renaming = next(p for p in store.packs if os.path.basename(p._basename).startswith("."))
    len(renaming)
    name = type(store)._get_pack_basepath

    def git_renames_now(self: object, entries: object) -> str:
        with contextlib.suppress(FileNotFoundError):
            temporary.with_suffix(".pack").unlink()
        return name(self, entries)  # type: ignore[arg-type]

    monkeypatch.setattr(type(store), "_get_pack_basepath", git_renames_now)
    try:
        objects = [Blob.from_string(f"object {i}\n".encode()) for i in range(120)]
        assert _copy.add_objects(r, objects) == 0  # many: one pack
        assert all(o.id in store for o in objects)
        assert renaming._idx is None and renaming._data is None, "an index left open"
    finally:
        temporary.with_suffix(".idx").unlink()
        r.close()


def test_only_datoms_own_stale_keep_files_are_swept(tmp_path: Path) -> None:
    """A ``.keep`` a killed compaction, push or fetch left an hour ago goes; a fresh one,
    and one holding anything else (git's, a person's), stay."""
    from datom_core._git._access import PUSH_KEEP
    from datom_core._git._fast._held import KEEP, STALE_AFTER, drop_stale_keeps
    from datom_core._git._read import FETCH_KEEP

    old = time.time() - STALE_AFTER - 60
    files = {
        "pack-a.keep": (KEEP, old),
        "pack-b.keep": (PUSH_KEEP, old),
        "pack-c.keep": (FETCH_KEEP, old),
        "pack-d.keep": (FETCH_KEEP, time.time()),
        "pack-e.keep": (b"kept by hand\n", old),
        "pack-f.keep": (b"", old),  # git's own: empty
    }
    for name, (data, when) in files.items():
        (tmp_path / name).write_bytes(data)
        os.utime(tmp_path / name, (when, when))
    assert drop_stale_keeps(tmp_path) == 3
    assert sorted(os.listdir(tmp_path)) == ["pack-d.keep", "pack-e.keep", "pack-f.keep"]


def _many(tag: str, count: int = 120) -> Callable[[TreeReader], dict[str, bytes]]:
    """A build adding ``count`` files: more objects than arrive loose (a pack)."""

    def build(tree: TreeReader) -> dict[str, bytes]:
        files = {f"{tag}/f{i:03d}.json": f'{{"{tag}": {i}}}'.encode() for i in range(count)}
        return files | appending(tag)(tree)

    return build


@pytest.mark.parametrize("step", ["fetch", "follow-theirs", "follow-mine", "commit"])
def test_a_pack_an_unshared_clone_gains_is_kept_until_a_ref_reaches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """A clone keeping objects of its own gains a colleague's many objects (a fetch, or
    catching up after its push) or its own (after its push, or a commit) as one pack, and
    moves its refs later: a ``git repack -a -d`` in the clone just then deleted them (the clone
    then lacked history, or raised a bare ``KeyError``). The pack is kept until a ref
    reaches it, as a fetch over HTTP keeps its own."""
    from datom_core._git import _metadata, _transport

    monkeypatch.setenv("DATOM_SHARE_OBJECTS", "0")
    mine = MetadataRepo.init(tmp_path / "mine", None)
    bare = MetadataRepo.embedded_remote_path(tmp_path / "mine")
    mine.commit_and_push(appending("seed"), "seed", ME)
    theirs = MetadataRepo.clone(bare, tmp_path / "theirs")
    if step in ("fetch", "follow-theirs"):
        theirs.commit_and_push(_many("theirs"), "theirs", ME)
    module = _metadata if step == "commit" else _transport
    name = "copy_commits" if step in ("fetch", "follow-theirs") else "add_objects"
    copy = getattr(module, name)
    repacked: list[int] = []

    def then_git_repacks(*args: object) -> int:
        stored = copy(*args)
        if os.listdir(tmp_path / "mine" / ".git" / "objects" / "pack"):
            git(tmp_path / "mine", "repack", "-a", "-d", "-q")  # what reaches no ref goes
            repacked.append(stored)
        return int(stored)

    monkeypatch.setattr(module, name, then_git_repacks)
    if step == "fetch":
        mine.fetch_and_reset()
    elif step == "commit":
        mine.commit(_many("mine")(mine.tree()), "mine", ME)
        mine.push()
    else:
        mine.commit_and_push(
            _many("mine") if step == "follow-mine" else appending("mine"), "mine", ME
        )
    monkeypatch.undo()
    assert repacked
    head = git(tmp_path / "mine", "rev-parse", "HEAD").strip()
    assert head == git(bare, "rev-parse", "main").strip()
    git(tmp_path / "mine", "fsck", "--strict", "--full")
    lines = (mine.read("log.txt") or b"").decode().split()
    assert lines == {"fetch": ["seed", "theirs"], "follow-theirs": ["seed", "theirs", "mine"],
                     "follow-mine": ["seed", "mine"], "commit": ["seed", "mine"]}[step]  # fmt: skip
    assert len(mine.log()) == len(lines)
    assert not list((tmp_path / "mine" / ".git" / "objects" / "pack").glob("*.keep"))
    for clone in (mine, theirs):
        clone.close()
