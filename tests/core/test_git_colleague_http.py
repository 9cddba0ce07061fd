"""A hosted remote and the clones writing to it while git maintains both, over git's own
smart-HTTP server (``git http-backend``): the server's repository repacked over and over,
as git hosts do, and a writer's own clone repacked by its user (``git maintenance``, or by
hand), between and during datom's writes; and the push a server took in but failed to
store."""

from __future__ import annotations

import secrets
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from datom_core._errors import GitError
from datom_core._git import Author, GitCredentials, MetadataRepo
from datom_core._git import _maintenance as maint
from tests.gitbackend import GitBackendServer
from tests.gitcli import appending, git, needs_git, write_beside_git
from tests.gitserver import serving

pytestmark = needs_git

ME = Author("Ada Lovelace", "ada@example.org")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, GitCredentials]]:
    """(URL, bare path, credentials) of an empty repository behind ``git http-backend``."""
    (tmp_path / "served").mkdir()
    for server in serving(GitBackendServer(tmp_path / "served", secrets.token_urlsafe(24))):
        bare = server.create_bare("proj")
        yield server.url_for("proj"), bare, GitCredentials(server.token)


# (``git repack -d --write-midx -b`` without ``-a`` in such a loop beside pushes breaks the
# repository with git alone: its multi-pack-index then names packs it deleted.)
@pytest.mark.parametrize(
    "args",
    [["gc"], ["repack", "-a", "-d"], ["repack", "-a", "-d", "--write-midx", "-b"],
     ["maintenance", "run", "--task=incremental-repack"]],
    ids=["gc", "repack-a-d", "repack-midx-bitmap", "maintenance"],
)  # fmt: skip
def test_writers_over_http_beside_git_maintaining_server_and_clone_lose_nothing(
    served: tuple[str, Path, GitCredentials],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    """Two clones write 30 times each over ``git http-backend`` while git runs ``args`` on
    the server's repository and in the first clone, over and over (datom compacts the
    clones too): every write lands once, no error escapes, and git accepts the server's
    repository and both clones afterwards. git's receive-pack now and then fails to move
    a push out of its quarantine beside a ``git gc`` ("unable to migrate objects to
    permanent storage"): such a push is sent again."""
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    monkeypatch.setattr(maint, "PACK_BUDGET", 2)
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1)
    url, bare, creds = served
    clones = [MetadataRepo.clone(url, tmp_path / n, credentials=creds) for n in "ab"]
    clones[0].commit_and_push(appending("seed"), "seed", ME)
    loops = [(bare, args), (tmp_path / "a", args)]
    failed = write_beside_git(dict(zip("ab", clones, strict=True)), 30, loops)
    assert not failed, "".join(traceback.format_exception(failed[0]))
    expected = sorted(["seed", *(f"{n}{i}" for n in "ab" for i in range(30))])
    for clone in clones:
        clone.fetch_and_reset()
        assert sorted((clone.read("log.txt") or b"").decode().splitlines()) == expected
        assert len(clone.log()) == 61
        clone.close()
    for repo in (bare, tmp_path / "a", tmp_path / "b"):
        git(repo, "fsck", "--strict", "--full")
    git(tmp_path, "clone", "-q", "--no-local", str(bare), str(tmp_path / "check"))


# git's receive-pack runs pre-receive with the pushed objects still in quarantine, then
# moves them into objects/: a file put where a fan-out folder of theirs would go fails the
# move ("unable to migrate objects to permanent storage"), as a concurrent gc removing
# the folder does. ``once``: the next push takes the files away first.
_SPOIL_MIGRATION = """#!/bin/sh
cat >/dev/null
spoilt=spoilt-folders
if [ -e "$spoilt" ] && [ -e spoil-once ]; then
  xargs rm -f < "$spoilt"; rm -f "$spoilt"; exit 0
fi
for folder in "$GIT_QUARANTINE_PATH"/??; do
  name=objects/$(basename "$folder")
  if [ ! -e "$name" ]; then : > "$name"; echo "$name" >> "$spoilt"; fi
done
exit 0
"""


def _spoil_migration(bare: Path, once: bool) -> None:
    git(bare, "repack", "-a", "-d", "-q")
    git(bare, "prune-packed")  # no fan-out folder left: each pushed object needs one
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(_SPOIL_MIGRATION)
    hook.chmod(0o755)
    if once:
        (bare / "spoil-once").touch()


@pytest.fixture
def seeded(
    served: tuple[str, Path, GitCredentials], tmp_path: Path
) -> Iterator[tuple[MetadataRepo, Path]]:
    url, bare, creds = served
    clone = MetadataRepo.clone(url, tmp_path / "clone", credentials=creds)
    clone.commit_and_push(appending("seed"), "seed", ME)
    yield clone, bare
    clone.close()


def test_a_push_the_server_failed_to_store_once_is_sent_again(
    seeded: tuple[MetadataRepo, Path],
) -> None:
    """The server refuses the ref because it failed to store the push (the ref left as it
    was): the same push goes again and is recorded, once."""
    clone, bare = seeded
    _spoil_migration(bare, once=True)
    pushed = clone.commit_and_push(appending("after"), "after", ME)
    assert (bare / "spoilt-folders").exists() is False  # spoilt, then put right
    assert git(bare, "rev-parse", "main").strip() == pushed
    assert git(bare, "log", "--format=%s", "main").split() == ["after", "seed"]
    git(bare, "fsck", "--strict", "--full")


def test_a_server_that_keeps_failing_to_store_a_push_is_a_git_error_naming_it(
    seeded: tuple[MetadataRepo, Path],
) -> None:
    """A lasting storage fault: a few sends, then a :class:`GitError` with the server's
    words; nothing is recorded."""
    clone, bare = seeded
    before = git(bare, "rev-parse", "main").strip()
    _spoil_migration(bare, once=False)
    with pytest.raises(GitError, match="unable to migrate objects to permanent storage"):
        clone.commit_and_push(appending("after"), "after", ME)
    assert (bare / "spoilt-folders").exists()
    assert git(bare, "rev-parse", "main").strip() == before


def test_a_clone_is_compacted_only_once_it_points_at_its_new_commit(
    served: tuple[str, Path, GitCredentials],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``git repack -a -d`` in a clone drops the packed objects no ref of the clone
    reaches. datom compacted the clone after a push but before moving its branch to the
    pushed commit: the commit's objects, packed, were dropped by a repack just then, and
    the write that was recorded raised a bare ``KeyError``."""
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 0)
    monkeypatch.setattr(maint, "CLONE_CHECK_EVERY", 1)
    url, bare, creds = served
    clone = MetadataRepo.clone(url, tmp_path / "clone", credentials=creds)
    clone.commit_and_push(appending("seed"), "seed", ME)
    compact = maint.compact
    compacted: list[int] = []

    def then_git_repacks(r: object) -> object:
        done = compact(r)  # type: ignore[arg-type]
        compacted.append(1)
        git(tmp_path / "clone", "repack", "-a", "-d", "-q")  # what reaches no ref goes
        return done

    monkeypatch.setattr(maint, "compact", then_git_repacks)
    pushed = clone.commit_and_push(appending("next"), "next", ME)
    assert compacted
    assert git(bare, "rev-parse", "main").strip() == pushed
    assert git(tmp_path / "clone", "rev-parse", "HEAD").strip() == pushed
    git(tmp_path / "clone", "fsck", "--strict", "--full")
    assert (clone.read("log.txt") or b"").decode().split() == ["seed", "next"]
    clone.close()


def test_a_fetched_pack_is_kept_until_a_ref_reaches_it(
    served: tuple[str, Path, GitCredentials],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``git repack -a -d`` in a clone just as a fetch's pack lands (no ref reaches it yet)
    deleted the colleague's commits the clone was about to move to: git's fetch keeps its
    pack until its refs are updated, and so does datom's."""
    from datom_core._git._httpclient import HttpClient

    url, bare, creds = served
    mine = MetadataRepo.clone(url, tmp_path / "mine", credentials=creds)
    theirs = MetadataRepo.clone(url, tmp_path / "theirs", credentials=creds)
    mine.commit_and_push(appending("seed"), "seed", ME)
    theirs.fetch_and_reset()
    for i in range(3):
        theirs.commit_and_push(appending(f"theirs {i}"), f"theirs {i}", ME)
    fetch = HttpClient.fetch
    repacked: list[str] = []

    def then_git_repacks(self: HttpClient, *args: object, **kwargs: object) -> object:
        result = fetch(self, *args, **kwargs)  # type: ignore[arg-type]
        git(tmp_path / "mine", "repack", "-a", "-d", "-q")
        repacked.append(git(tmp_path / "mine", "count-objects", "-v"))
        return result

    monkeypatch.setattr(HttpClient, "fetch", then_git_repacks)
    mine.fetch_and_reset()
    monkeypatch.undo()
    assert repacked
    lines = (mine.read("log.txt") or b"").decode().splitlines()
    assert lines == ["seed", "theirs 0", "theirs 1", "theirs 2"]
    assert [c.message.strip() for c in mine.log()][:2] == ["theirs 2", "theirs 1"]
    git(tmp_path / "mine", "fsck", "--strict", "--full")
    assert not list((tmp_path / "mine" / ".git" / "objects" / "pack").glob("*.keep"))
    for clone in (mine, theirs):
        clone.close()


def test_a_big_push_kept_in_the_clone_until_a_ref_reaches_it(
    served: tuple[str, Path, GitCredentials],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a push of many objects the clone stores them as one pack, and moves its
    branch later: a ``git repack -a -d`` in the clone just then deleted them (a recorded
    write raised a bare ``KeyError``). The pack is kept until a ref reaches it."""
    from datom_core._git import _transport

    url, bare, creds = served
    clone = MetadataRepo.clone(url, tmp_path / "clone", credentials=creds)
    clone.commit_and_push(appending("seed"), "seed", ME)
    add_objects = _transport.add_objects
    repacked: list[int] = []

    def then_git_repacks(*args: object) -> int:
        stored = add_objects(*args)  # type: ignore[arg-type]
        git(tmp_path / "clone", "repack", "-a", "-d", "-q")  # what reaches no ref goes
        repacked.append(stored)
        return stored

    def many(tree: object) -> dict[str, bytes]:
        return {f"t/f{i:03d}": b"%d\n" % i for i in range(120)} | appending("many")(tree)

    monkeypatch.setattr(_transport, "add_objects", then_git_repacks)
    pushed = clone.commit_and_push(many, "many", ME)
    monkeypatch.undo()
    assert repacked == [0]  # one pack
    assert git(tmp_path / "clone", "rev-parse", "HEAD").strip() == pushed
    git(tmp_path / "clone", "fsck", "--strict", "--full")
    assert (clone.read("t/f119") or b"") == b"119\n"
    assert not list((tmp_path / "clone" / ".git" / "objects" / "pack").glob("*.keep"))
    clone.close()


def test_a_clone_behind_a_git_fetch_with_older_commit_dates_names_no_local_work(
    served: tuple[str, Path, GitCredentials],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``git fetch`` in a clone moves its tracking ref past its branch; a colleague's
    commits there carry dates older than the clone's own (a clock behind): the walk that
    looks for unpushed work, ordered by dates as git's is, met the clone's commits before
    the colleague's, and named them as work made with git (the write refused)."""
    from datom_core._git import _repo

    url, bare, creds = served
    mine = MetadataRepo.clone(url, tmp_path / "mine", credentials=creds)
    theirs = MetadataRepo.clone(url, tmp_path / "theirs", credentials=creds)
    for i in range(3):
        mine.commit_and_push(appending(f"mine {i}"), f"mine {i}", ME)
    now = _repo._now()
    monkeypatch.setattr(_repo, "_now", lambda: now - 86_400)  # a day behind
    theirs.fetch_and_reset()
    for i in range(12):  # more than the walk's slop past its last new commit
        theirs.commit_and_push(appending(f"theirs {i}"), f"theirs {i}", ME)
    monkeypatch.undo()
    tip = mine.remote_tip().commit  # their commits in the clone's store, as git's fetch
    assert tip is not None
    git(tmp_path / "mine", "update-ref", "refs/remotes/origin/main", tip)
    (tmp_path / "mine" / "notes.txt").write_text("mine\n")  # work made with git: named alone
    git(tmp_path / "mine", "add", "notes.txt")
    git(tmp_path / "mine", "-c", "user.name=A", "-c", "user.email=a@b.c", "commit", "-qm", "notes")
    made = git(tmp_path / "mine", "rev-parse", "HEAD").strip()
    with pytest.raises(GitError, match=r"holds 1 commit\(s\) made with git") as refused:
        mine.commit_and_push(appending("mine again"), "mine again", ME)
    assert made[:12] in str(refused.value)
    git(tmp_path / "mine", "reset", "-q", "--hard", "HEAD~1")
    pushed = mine.commit_and_push(appending("mine again"), "mine again", ME)
    assert git(bare, "rev-parse", "main").strip() == pushed
    lines = (mine.read("log.txt") or b"").decode().splitlines()
    assert lines == [*(f"mine {i}" for i in range(3)), *(f"theirs {i}" for i in range(12)),
                     "mine again"]  # fmt: skip
    for clone in (mine, theirs):
        clone.close()
