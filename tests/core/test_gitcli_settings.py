"""Repository settings real git users set are honoured, or refused by name before anything
changes (``_git/_settings``, ``_git/_receive``, ``_git/_repo``): split, version 4 and
damaged indexes, SHA-256 remotes, ``extensions.*``, ``git remote set-url``, a local remote's hooks
and ``receive.denyCurrentBranch``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._git import MetadataRepo
from datom_core._git import _maintenance as maint
from datom_core._git._objects import TreeReader
from datom_core._git._types import Author
from datom_core._project import _layout as L
from tests.core.cli_helpers import run_json
from tests.core.projects import fingerprint, frame, new_project
from tests.core.test_gitcli_localwork import git_accepts
from tests.gitcli import git, needs_git

pytestmark = needs_git

ME = Author("Ada Lovelace", "ada@example.org")
WHO = ("-c", "user.name=Grace Hopper", "-c", "user.email=grace@example.org")


def put(files: dict[str, bytes]) -> Callable[[TreeReader], Mapping[str, bytes]]:
    return lambda tree: files


def test_a_split_index_is_refused_before_anything_changes(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone = conn.repo.path
    git(clone, "config", "core.splitIndex", "true")
    git(clone, "update-index", "--split-index")
    before = fingerprint(conn)
    with pytest.raises(dc.GitError, match="split index") as refused:
        conn.write("dm", frame(8))
    assert "update-index --no-split-index" in str(refused.value)
    assert fingerprint(conn) == before
    assert git(clone, "status", "--porcelain") == ""
    git(clone, "config", "core.splitIndex", "false")
    git(clone, "update-index", "--no-split-index")
    conn.write("dm", frame(8))  # as the message says: the clone works again
    assert git(clone, "status", "--porcelain") == ""
    git_accepts(conn.repo.remote_url, tmp_path)


def test_a_version_4_index_is_updated(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone = conn.repo.path
    git(clone, "update-index", "--index-version", "4")
    conn.write("dm", frame(8))
    conn.write("ae", frame(2))
    assert git(clone, "status", "--porcelain") == ""
    assert (
        git(clone, "ls-files").split() == git(clone, "ls-tree", "-r", "--name-only", "HEAD").split()
    )
    git_accepts(conn.repo.remote_url, tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "emptied"])
def test_a_damaged_index_is_refused_before_anything_changes(tmp_path: Path, damage: str) -> None:
    """An index git cannot read either (a disk that filled, a power cut): a write is
    refused, naming git's remedy, before anything is recorded; reads go on; the remedy
    makes the clone work again."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    clone, index = conn.repo.path, conn.repo.path / ".git" / "index"
    data = index.read_bytes()
    damaged = {"truncated": data[: len(data) // 2], "overwritten": b"\0" * 64, "emptied": b""}
    index.write_bytes(damaged[damage])
    fsck = subprocess.run(["git", "-C", str(clone), "fsck"], capture_output=True, text=True)
    assert fsck.returncode != 0 and "index" in fsck.stderr  # git's judgement
    before = fingerprint(conn)
    with pytest.raises(dc.GitError, match="index of the clone .* is damaged") as refused:
        conn.write("dm", frame(8))
    assert fingerprint(conn) == before and index.read_bytes() == damaged[damage]
    assert len(conn.read("dm")) == 5
    index.unlink()  # as the message says
    git(clone, "reset", "-q")
    conn.write("dm", frame(8))
    assert f"rm {index} && git -C {clone} reset -q" in str(refused.value)
    assert git(clone, "status", "--porcelain") == ""
    git_accepts(conn.repo.remote_url, tmp_path)


@pytest.mark.parametrize("empty", [True, False])
def test_a_sha256_remote_is_refused_by_name(tmp_path: Path, empty: bool) -> None:
    remote = tmp_path / "remote.git"
    if empty:
        git(tmp_path, "init", "-q", "--bare", "-b", "main", "--object-format=sha256", str(remote))
    else:
        work = tmp_path / "work"
        git(tmp_path, "init", "-q", "-b", "main", "--object-format=sha256", str(work))
        (work / "a.txt").write_text("a\n")
        git(work, "add", "a.txt")
        git(work, *WHO, "commit", "-qm", "first")
        git(tmp_path, "clone", "-q", "--bare", str(work), str(remote))

    def contents() -> list[str]:  # datom's lock files aside: nothing git reads
        return sorted(str(p) for p in remote.rglob("*") if not p.name.startswith("datom-"))

    before = contents()
    with pytest.raises(dc.GitError, match="(?i)sha-?256"):
        repo = MetadataRepo.init(tmp_path / "a", remote)
        repo.commit({"x": b"1"}, "x", ME)
        repo.push()
    if not empty:
        with pytest.raises(dc.GitError, match="(?i)sha-?256"):
            MetadataRepo.clone(remote, tmp_path / "b")
    assert contents() == before  # nothing written there
    git(remote, "fsck", "--strict", "--full")


def test_precious_objects_are_honoured_and_other_extensions_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maint, "REMOTE_CHECK_EVERY", 2)
    monkeypatch.setattr(maint, "LOOSE_BUDGET", 4)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(remote, "config", "core.repositoryformatversion", "1")
    git(remote, "config", "extensions.preciousObjects", "true")
    repo = MetadataRepo.init(tmp_path / "a", remote)
    seen: set[str] = set()
    for i in range(12):
        repo.commit_and_push(put({f"t{i % 3}/m.json": b"%d" % i}), f"c{i}", ME)
        now = {str(p.relative_to(remote)) for p in (remote / "objects").rglob("*") if p.is_file()}
        assert seen <= now, f"deleted from a preciousObjects remote: {sorted(seen - now)[:3]}"
        seen = now
    assert len(git(remote, "rev-list", "main").split()) == 12
    git_accepts(remote, tmp_path)
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other))
    git(other, "config", "core.repositoryformatversion", "1")
    git(other, "config", "extensions.partialClone", "origin")
    b = MetadataRepo.init(tmp_path / "b", other)
    with pytest.raises(dc.GitError, match="partialclone|partialClone"):
        b.commit_and_push(put({"x": b"1"}), "x", ME)


@pytest.mark.parametrize(
    ("origin", "https"),
    [
        ("git@github.com:org/proj.git", "https://github.com/org/proj.git"),
        ("ssh://git@git.example.org:2222/org/proj.git", "https://git.example.org/org/proj.git"),
        ("git://example.org/proj.git", "https://example.org/proj.git"),
    ],
    ids=["scp", "ssh", "git"],
)
def test_a_clone_whose_origin_datom_does_not_speak_is_refused_naming_its_https_address(
    tmp_path: Path, origin: str, https: str
) -> None:
    """A colleague cloned with ssh: a write is refused before anything changes, naming
    the command that points origin at the same repository over HTTPS."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    remote, before = conn.repo.remote_url, fingerprint(conn)
    git(conn.repo.path, "remote", "set-url", "origin", origin)
    with pytest.raises(dc.GitError, match="not one datom speaks") as refused:
        conn.write("dm", frame(8))
    assert f"git remote set-url origin {https}" in str(refused.value)
    git(conn.repo.path, "remote", "set-url", "origin", remote)
    assert fingerprint(conn) == before
    conn.write("dm", frame(8))


def test_remote_set_url_is_followed_by_a_long_lived_handle(tmp_path: Path) -> None:
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    old = Path(conn.repo.remote_url)
    new = tmp_path / "moved.git"
    git(tmp_path, "clone", "-q", "--bare", str(old), str(new))
    git(conn.repo.path, "remote", "set-url", "origin", str(new))
    result = conn.write("dm", frame(9))
    assert git(new, "rev-parse", "main").strip() == conn.repo.head()
    assert git(old, "rev-parse", "main").strip() != conn.repo.head()
    assert conn.repo.remote_url == str(new)
    assert result.version in {v.version for v in conn.history("dm")}
    git_accepts(new, tmp_path)


def _hook(remote: Path, name: str, body: str) -> None:
    path = remote / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)


def test_a_local_remotes_hooks_run_as_receive_pack_runs_them(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    log = tmp_path / "hooks.log"
    _hook(remote, "pre-receive", f'while read o n r; do echo "pre $o $n $r" >> {log}; done\n')
    _hook(remote, "update", f'echo "update $1 $2 $3 $GIT_DIR" >> {log}\n')
    _hook(remote, "post-receive", f'while read o n r; do echo "post $o $n $r" >> {log}; done\n')
    _hook(remote, "post-update", f'echo "post-update $1" >> {log}\n')
    repo = MetadataRepo.init(tmp_path / "a", remote)
    first = repo.commit_and_push(put({"x": b"1"}), "first", ME)
    second = repo.commit_and_push(put({"x": b"2"}), "second", ME)
    zero = "0" * 40
    assert log.read_text().splitlines() == [
        f"pre {zero} {first} refs/heads/main",
        f"update refs/heads/main {zero} {first} .",
        f"post {zero} {first} refs/heads/main",
        "post-update refs/heads/main",
        f"pre {first} {second} refs/heads/main",
        f"update refs/heads/main {first} {second} .",
        f"post {first} {second} refs/heads/main",
        "post-update refs/heads/main",
    ]
    _hook(remote, "pre-receive", "echo 'main is frozen for the audit' >&2; exit 1\n")
    with pytest.raises(dc.GitError, match="main is frozen for the audit"):
        repo.commit_and_push(put({"x": b"3"}), "third", ME)
    assert git(remote, "rev-parse", "main").strip() == second
    _hook(remote, "pre-receive", "exit 0\n")
    _hook(remote, "update", "echo 'no pushes to main' >&2; exit 1\n")
    with pytest.raises(dc.GitError, match="update hook"):
        repo.commit_and_push(put({"x": b"4"}), "fourth", ME)
    assert git(remote, "rev-parse", "main").strip() == second
    assert repo.head() == second
    git_accepts(remote, tmp_path)


def test_a_local_remotes_hooks_run_in_the_remote_when_datom_runs_inside_another_repos_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """datom run from another repository's git hook (a post-merge hook syncing the inbox,
    a pre-commit hook) inherits that repository's ``GIT_DIR``, ``GIT_INDEX_FILE`` and
    object directory; git clears them before it enters a local remote, so the remote's
    hooks see the remote: a policy hook that reads the pushed commit refused every push."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    log = tmp_path / "hooks.log"
    _hook(remote, "pre-receive", f"while read o n r; do git cat-file -e $n || exit 1; "
          f'echo "$GIT_DIR $(git rev-parse --is-bare-repository) ${{GIT_INDEX_FILE-none}}" >> {log}; done\n')  # fmt: skip
    repo = MetadataRepo.init(tmp_path / "a", remote)
    elsewhere = tmp_path / "analysis"
    git(tmp_path, "init", "-q", str(elsewhere))
    for name, value in (("GIT_DIR", elsewhere / ".git"), ("GIT_WORK_TREE", elsewhere),
                        ("GIT_INDEX_FILE", elsewhere / ".git" / "index"),
                        ("GIT_OBJECT_DIRECTORY", elsewhere / ".git" / "objects")):  # fmt: skip
        monkeypatch.setenv(name, str(value))
    first = repo.commit_and_push(put({"x": b"1"}), "first", ME)
    assert first is not None
    assert log.read_text().splitlines() == [". true none"]
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name)
    assert git(remote, "rev-parse", "main").strip() == first


def test_a_non_bare_remotes_checked_out_branch_is_refused(tmp_path: Path) -> None:
    remote = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "main", str(remote))
    (remote / "a.txt").write_text("a\n")
    git(remote, "add", "a.txt")
    git(remote, *WHO, "commit", "-qm", "first")
    head = git(remote, "rev-parse", "main").strip()
    repo = MetadataRepo.clone(remote, tmp_path / "a")
    with pytest.raises(dc.GitError, match="denyCurrentBranch"):
        repo.commit_and_push(put({"x": b"1"}), "x", ME)
    assert git(remote, "rev-parse", "main").strip() == head
    assert git(remote, "status", "--porcelain") == ""
    git(remote, "config", "receive.denyCurrentBranch", "warn")
    pushed = repo.commit_and_push(put({"x": b"1"}), "x", ME)
    assert git(remote, "rev-parse", "main").strip() == pushed
    git_accepts(remote / ".git", tmp_path)


@pytest.mark.parametrize("kind", ["plain", "shallow", "reference", "sparse"])
def test_a_clone_git_made_is_a_datom_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A colleague's clone made by git: plain, shallow (``--depth 1``), reading another
    clone's objects (``--reference``), or a cone-mode sparse checkout of one table's folder
    (``.datom/`` left out of the working tree: datom reads what the working tree lacks
    from HEAD, which it mirrors). The API and the command line open it, write, read and
    validate; git sees the clone clean and accepts the remote."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.write("ae", frame(3))
    conn.write("ex", frame(2))
    theirs = tmp_path / kind
    options = {"shallow": ["--depth", "1"], "reference": ["--reference", str(conn.repo.path)]}
    url = f"file://{conn.repo.remote_url}" if kind == "shallow" else conn.repo.remote_url
    git(tmp_path, "clone", "-q", *options.get(kind, []), url, str(theirs))
    if kind == "sparse":
        git(theirs, "sparse-checkout", "set", "ae")
        assert not (theirs / ".datom").exists() and not (theirs / "dm").exists()
    mine = dc.connect(theirs)
    assert mine.project_name == conn.project_name
    assert len(mine.read("dm")) == 5
    made = mine.write("dm", frame(7, seed=1))
    assert (made.change, len(conn.read("dm"))) == ("full", 7)
    assert mine.validate().ok and conn.validate().ok
    conn.store.write_bytes(L.store_metadata("ex"), b"{}\n")  # a table outside a sparse one
    assert [p.table for p in mine.validate().problems] == ["ex"]
    assert [p.fixed for p in mine.validate(fix=True).problems] == [True]
    assert git(theirs, "status", "--porcelain") == ""
    monkeypatch.chdir(theirs / "ae")
    listed = run_json("list")
    assert {t["name"]: t["current_version"] for t in listed} == {
        "ae": conn.history("ae")[0].version,
        "dm": made.version,
        "ex": conn.history("ex")[0].version,
    }
    git_accepts(conn.repo.remote_url, tmp_path)


@pytest.mark.parametrize("convert", ["gitattributes", "autocrlf"])
def test_a_checkout_converting_line_endings_is_not_taken_for_gits_bytes(
    tmp_path: Path, convert: str
) -> None:
    """A colleague's clone whose checkout writes CRLF line endings (a committed
    ``.gitattributes`` with ``eol=crlf``, or ``core.autocrlf=true`` as on Windows): datom
    reads git's bytes, not the working tree's. ``validate`` finds the store in step (it
    took every CRLF copy for a stale mirror) and ``validate(fix=True)`` puts no CRLF
    copy in the store; writes there mirror git's bytes."""
    conn = new_project(tmp_path)
    conn.write("dm", frame())
    conn.write("ae", frame(3))
    theirs = tmp_path / "theirs"
    config = ["-c", "core.autocrlf=true"] if convert == "autocrlf" else []
    git(tmp_path, "clone", "-q", *config, conn.repo.remote_url, str(theirs))
    if convert == "gitattributes":
        (theirs / ".gitattributes").write_text("* text eol=crlf\n")
        git(theirs, "add", ".gitattributes")
        git(theirs, *WHO, "commit", "-q", "-m", "line endings")
        git(theirs, "push", "-q")
        git(theirs, "rm", "-q", "--cached", "-r", ".")
        git(theirs, "reset", "-q", "--hard")  # the checkout rewritten with CRLF
    assert b"\r\n" in (theirs / "ae" / "metadata.json").read_bytes()
    mine = dc.connect(theirs)
    assert mine.validate().ok
    assert mine.validate(fix=True).problems == ()
    mine.write("dm", frame(7, seed=1))
    assert mine.validate().ok and conn.validate().ok
    for key in (L.store_metadata("ae"), L.store_history("ae"), L.STORE_MANIFEST):
        assert b"\r" not in conn.store.read_bytes(key), key
    assert git(theirs, "status", "--porcelain") == ""
    git_accepts(conn.repo.remote_url, tmp_path)


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_a_local_remotes_hooks_path_is_where_its_hooks_are_run_from(
    tmp_path: Path, where: str
) -> None:
    """``core.hooksPath`` in the remote's configuration (a team's shared hooks) is where
    receive-pack looks for them: a refusing ``pre-receive`` there refuses datom's push as
    it refuses git's, and nothing in ``hooks/`` runs instead, from the first push after
    the setting on (a handle open since before it included)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    shared = remote / "policy" if where == "relative" else tmp_path / "team-hooks"
    shared.mkdir()
    default = tmp_path / "default.log"
    _hook(remote, "pre-receive", f"echo ran >> {default}\n")
    repo = MetadataRepo.init(tmp_path / "a", remote)
    first = repo.commit_and_push(put({"x": b"1"}), "first", ME)
    assert default.read_text() == "ran\n"  # no hooksPath yet: hooks/
    git(remote, "config", "core.hooksPath", "policy" if where == "relative" else str(shared))
    (shared / "pre-receive").write_text(
        "#!/bin/sh\necho 'main is frozen for the audit' >&2\nexit 1\n"
    )
    os.chmod(shared / "pre-receive", 0o755)
    with pytest.raises(dc.GitError, match="main is frozen for the audit"):
        repo.commit_and_push(put({"x": b"2"}), "second", ME)
    assert git(remote, "rev-parse", "main").strip() == first
    colleague = tmp_path / "colleague"
    git(tmp_path, "clone", "-q", str(remote), str(colleague))
    (colleague / "y").write_text("y\n")
    git(colleague, "add", "y")
    git(colleague, *WHO, "commit", "-qm", "theirs")
    refused = subprocess.run(
        ["git", "-C", str(colleague), "push", "-q"], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "main is frozen for the audit" in refused.stderr
    assert default.read_text() == "ran\n"
