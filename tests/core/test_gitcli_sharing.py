"""A local remote shared by several OS users, and refs that cannot be read.

Two users of one group, each with umask 077, write one remote made by
``git init --bare --shared=group``: every file datom makes there gets the group's
permissions (``_git/_groupshare``), the writers' lock file included (``_git/_lock``).
A branch ref another user left unreadable is an error naming the file, never an empty
remote (``_git/_remoterefs``). (A killed pusher's lock, judged by the file system's
clock: ``test_gitcli_remote_locks``.)
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from datom_core._git import MetadataRepo
from datom_core._git._types import Author
from tests.core.test_gitcli_localwork import git_accepts
from tests.gitcli import GIT, git, needs_git

pytestmark = needs_git

ROOT = Path(__file__).resolve().parents[2]
GROUP = "datomteam"
USERS = ("datomwa", "datomwb")
ME = Author("Ada Lovelace", "ada@example.org")

_WRITER = """
import sys
from pathlib import Path
from datom_core._git import MetadataRepo
from datom_core._git._types import Author
from datom_core._git import _maintenance as maint
maint.REMOTE_CHECK_EVERY, maint.LOOSE_BUDGET = 1, 4  # compact the remote as it goes
remote, clone, who, count = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
repo = MetadataRepo.open(clone) if clone.exists() else MetadataRepo.clone(remote, clone)
for i in range(count):
    repo.commit_and_push(lambda tree: {f"{who}/m.json": b"%d" % i}, f"{who} {i}",
                         Author(who, f"{who}@example.org"))
print(repo.head())
"""


def _python() -> str | None:
    """A Python the other users may run (this one may live in root's home), with this
    environment's packages on its path."""
    for candidate in (sys.executable,
                      f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"):  # fmt: skip
        path = Path(candidate).resolve()
        if path.exists() and all(os.stat(p).st_mode & 0o005 for p in [path, *path.parents]):
            return str(path)
    return None


PYTHON = _python()
PACKAGES = str(Path(pytest.__file__).resolve().parents[1])


def _can_make_users() -> str | None:
    if PYTHON is None:
        return "no Python interpreter other users may run"
    if os.geteuid() != 0:
        return "needs root to create the two OS users"
    for tool in ("useradd", "groupadd", "runuser"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.fixture(autouse=True)
def _root_reads_other_users_repositories(monkeypatch: pytest.MonkeyPatch) -> None:
    """git run by root refuses repositories other users own unless told they are safe."""
    for key, value in (("COUNT", "1"), ("KEY_0", "safe.directory"), ("VALUE_0", "*")):
        monkeypatch.setenv(f"GIT_CONFIG_{key}", value)


@pytest.fixture(scope="module")
def team() -> Iterator[Path]:
    """A folder of the group ``datomteam`` (setgid) that its two users may write."""
    why = _can_make_users()
    if why is not None:
        pytest.skip(why)
    if subprocess.run(["getent", "group", GROUP], capture_output=True).returncode != 0:
        made = subprocess.run(["groupadd", GROUP], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot create the group {GROUP}: {made.stderr.strip()}")
    for user in USERS:
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            made = subprocess.run(
                ["useradd", "-M", "-N", "-g", GROUP, "-s", "/bin/sh", user],
                capture_output=True,
                text=True,
            )
            if made.returncode != 0:
                pytest.skip(f"cannot create the user {user}: {made.stderr.strip()}")
    folder = Path(tempfile.mkdtemp(prefix="datom-team-", dir="/tmp"))
    shutil.chown(folder, group=GROUP)
    os.chmod(folder, 0o2770)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as(user: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``args`` as ``user`` with umask 077, this checkout's code first on the path."""
    home = folder / f"home-{user}"
    if not home.exists():
        home.mkdir()
        # A teammate's git trusts the team's repositories (safe.directory: global only).
        (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
        for path in (home, home / ".gitconfig"):
            shutil.chown(path, user=user, group=GROUP)
        os.chmod(home, 0o700)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{PACKAGES}",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    command = " ".join(f"'{a}'" for a in args)
    return subprocess.run(
        ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
         "sh", "-c", f"umask 077; exec {command}"],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def _not_the_groups(remote: Path) -> list[str]:
    """What datom or git made in ``remote`` that the group may not use: every file must be
    group-readable, every folder and datom lock file group-writable."""
    wrong = []
    for path in [remote, *remote.rglob("*")]:
        mode = path.stat().st_mode
        writable = path.is_dir() or path.name.startswith("datom-")
        need = stat.S_IRGRP | (stat.S_IWGRP if writable else 0)
        if mode & need != need:
            wrong.append(f"{path.relative_to(remote)} {mode & 0o7777:o}")
    return wrong


def _write(user: str, folder: Path, remote: Path, count: int) -> str:
    done = _as(
        user, folder, PYTHON or "python3", "-c", _WRITER, str(remote),
        str(folder / f"{user}-{remote.stem}"), user,
        str(count),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_two_users_with_umask_077_write_one_group_shared_remote(team: Path) -> None:
    remote = team / "remote.git"
    made = _as(USERS[0], team, GIT or "git", "init", "-q", "--bare", "--shared=group", str(remote))
    assert made.returncode == 0, made.stderr
    _write(USERS[0], team, remote, 3)
    _write(USERS[1], team, remote, 3)  # its lock file, objects and ref are the group's
    # ... and it compacted the remote: its packs and the compaction's lock files too.
    second = pwd.getpwnam(USERS[1]).pw_uid
    packs = list((remote / "objects" / "pack").glob("*.pack"))
    assert any(p.stat().st_uid == second for p in packs), "the second user compacted nothing"
    assert _not_the_groups(remote) == []
    last = _write(USERS[0], team, remote, 2)
    for path in [remote / "datom-writers.lock", *remote.joinpath("objects").rglob("*")]:
        mode = path.stat().st_mode
        assert mode & stat.S_IRGRP, f"{path} is not readable by the group ({mode:o})"
        if path.is_dir():
            assert mode & stat.S_IWGRP and mode & stat.S_ISGID, f"{path} ({mode:o})"
    for lock in ("datom-writers.lock", "datom-maintenance.lock"):
        assert (remote / lock).stat().st_mode & stat.S_IWGRP, lock
    assert list((remote / "objects" / "pack").glob("*.pack")), "the remote was compacted"
    assert git(remote, "rev-parse", "HEAD").strip() == last
    assert len(git(remote, "rev-list", "HEAD").split()) == 8
    # A teammate's plain git push goes on top, under the same umask.
    colleague = team / "colleague"
    for args in (
        ("clone", "-q", str(remote), str(colleague)),
        ("-C", str(colleague), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q",
         "--allow-empty", "-m", "by hand"),
        ("-C", str(colleague), "push", "-q", "origin", "HEAD"),
    ):  # fmt: skip
        done = _as(USERS[1], team, GIT or "git", *args)
        assert done.returncode == 0, done.stderr
    _write(USERS[0], team, remote, 1)
    assert _not_the_groups(remote) == []
    verify = Path(tempfile.mkdtemp())
    (verify / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")  # HOME of git()
    git_accepts(remote, verify)


def test_a_remote_whose_setgid_group_folders_say_it_is_shared_gets_group_files(
    team: Path,
) -> None:
    """A remote made without ``--shared`` whose folders are setgid and group-writable is
    the team's too: the objects, folders and refs a user with umask 077 writes there
    (loose, and packed by a compaction) are the group's, and the teammate writes on."""
    remote = team / "setgid.git"
    git(team, "init", "-q", "--bare", "-b", "main", str(remote))
    for path in [remote, *remote.rglob("*")]:
        shutil.chown(path, group=GROUP)
        os.chmod(path, 0o2775 if path.is_dir() else 0o664)
    _write(USERS[0], team, remote, 3)
    assert _not_the_groups(remote) == []
    last = _write(USERS[1], team, remote, 2)
    assert _not_the_groups(remote) == []
    assert git(remote, "rev-parse", "HEAD").strip() == last
    assert len(git(remote, "rev-list", "HEAD").split()) == 5


def test_an_unreadable_branch_ref_is_an_error_and_the_clone_is_kept(team: Path) -> None:
    """root writes the branch with umask 077 (as another user would); the other user's
    clone is told which file it cannot read, and keeps its working tree."""
    remote = team / "unreadable.git"
    git(team, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = MetadataRepo.init(team / "seed", remote)
    seed.commit({"dm/metadata.json": b"1"}, "first", ME)
    seed.push()
    for path in [remote, *remote.rglob("*")]:
        shutil.chown(path, group=GROUP)
        os.chmod(path, 0o2775 if path.is_dir() else 0o664)
    user = USERS[1]
    _write(user, team, remote, 1)  # the user's clone holds the project
    clone = team / f"{user}-{remote.stem}"
    ref = remote / "refs" / "heads" / "main"
    tip = ref.read_bytes()
    old_umask = os.umask(0o077)
    try:  # another user's write: the ref file comes out 0600, theirs alone
        ref.unlink()
        ref.write_bytes(tip)
    finally:
        os.umask(old_umask)
    assert ref.stat().st_mode & 0o777 == 0o600
    script = """
import sys, time
from datom_core._git import MetadataRepo
from datom_core._git._types import Author
from datom_core._errors import GitError
repo = MetadataRepo.open(sys.argv[1])
for name, call in (("reset", repo.fetch_and_reset),
                   ("write", lambda: repo.commit_and_push(lambda t: {"x": b"1"}, "x",
                                                          Author("a", "a@b")))):
    start = time.monotonic()
    try:
        call()
        print(name, "no error")
    except GitError as e:
        print(name, round(time.monotonic() - start), e)
"""
    done = _as(user, team, PYTHON or "python3", "-c", script, str(clone))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2, done.stdout
    for line in lines:
        name, seconds, message = line.split(" ", 2)
        assert int(seconds) < 30, line  # not 300 s of "concurrent writers"
        assert str(ref) in message and "Permission denied" in message, line
        assert "mode 0600" in message and "core.sharedRepository" in message, line
    assert (clone / user / "m.json").exists()
    assert (clone / ".git").is_dir()
