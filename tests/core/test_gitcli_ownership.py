"""A repository another user owns (a clone on a shared drive, a colleague's folder, a
remote another account made): git refuses it, "detected dubious ownership", unless the
user's own configuration lists it in ``safe.directory``, because its configuration names
programs that would run as the user (a signing program, a credential helper, a local
remote's hooks). datom refuses exactly where git does, before it runs or changes
anything, naming the command that trusts it. git is the judge of every verdict here.

root gives the repositories to a user id no account holds (``chown``), so these tests
need root, as CI runs them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import fingerprint, frame
from tests.gitcli import GIT, needs_git, own_git_config

pytestmark = [
    needs_git,
    pytest.mark.skipif(os.geteuid() != 0, reason="giving a repository to another user needs root"),
]

OTHER = 4242  # a user id no account holds


def _give(path: Path, uid: int = OTHER) -> None:
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, -1)
    os.lchown(path, uid, -1)


def _git_accepts(repository: Path) -> bool:
    """Whether git works in ``repository`` (as this process's user and environment)."""
    done = subprocess.run(
        [GIT or "git", "-C", str(repository), "rev-parse", "--git-dir"],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    assert done.returncode == 0 or "dubious ownership" in done.stderr, done.stderr
    return done.returncode == 0


def _refused_as_by_git(clone: Path, seed: int) -> None:
    """git will not work in ``clone``, and a datom write there is refused in git's words."""
    assert not _git_accepts(clone)
    with pytest.raises(dc.GitError, match="dubious ownership"):
        dc.connect(clone).write("dm", frame(seed))


def _accepted_as_by_git(clone: Path, seed: int) -> None:
    assert _git_accepts(clone)
    assert dc.connect(clone).write("dm", frame(seed)).change == "full"


def _command_trusts(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """``git -c safe.directory=<path>``, as git passes it on (``GIT_CONFIG_COUNT``)."""
    for key, value in (("COUNT", "1"), ("KEY_0", "safe.directory"), ("VALUE_0", str(path))):
        monkeypatch.setenv(f"GIT_CONFIG_{key}", value)


def _git_pushes(clone: Path) -> bool:
    done = subprocess.run(
        [GIT or "git", "-C", str(clone), "push", "--dry-run", "origin", "HEAD:main"],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    return done.returncode == 0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dc.Connection, Path]:
    """A project with one version, the user's git configuration a file of the test's."""
    config = own_git_config(monkeypatch, tmp_path, cleared=("SUDO_UID",))
    conn = dc.init_repo(tmp_path / "clone", "OWN", dc.LocalStore(tmp_path / "store"))
    conn.write("dm", frame(1))
    return conn, config


def test_a_clone_another_user_owns_is_refused_before_its_programs_run(
    project: tuple[dc.Connection, Path], tmp_path: Path
) -> None:
    """The clone's configuration asks for signed commits by a program of its owner's:
    git will not work there, and datom neither runs the program nor writes."""
    conn, _ = project
    clone = conn.repo.path
    ran = tmp_path / "owner-program-ran"
    program = tmp_path / "sign.sh"
    program.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    program.chmod(0o755)
    with open(clone / ".git" / "config", "a", encoding="utf-8") as f:
        f.write(f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {program}\n")
    before = fingerprint(conn)
    _give(clone)
    assert not _git_accepts(clone)
    with pytest.raises(dc.GitError) as refused:
        dc.connect(clone).write("dm", frame(2))
    message = str(refused.value)
    assert "dubious ownership" in message and f"user id {OTHER}" in message
    assert f"git config --global --add safe.directory {clone}" in message
    assert not ran.exists()
    _give(clone, 0)  # fingerprint reads the clone's files as root's again
    assert fingerprint(conn) == before


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param(lambda clone: [str(clone)], id="its path"),
        pytest.param(lambda clone: ["*"], id="every repository"),
        pytest.param(lambda clone: ["*", ""], id="cleared after"),
        pytest.param(lambda clone: ["", str(clone)], id="cleared before"),
        pytest.param(lambda clone: [str(clone.parent)], id="its parent only"),
        pytest.param(lambda clone: [str(clone) + "-other"], id="another path"),
    ],
)
def test_safe_directory_in_the_users_configuration_decides_as_git_decides(
    project: tuple[dc.Connection, Path], listed: object
) -> None:
    conn, config = project
    clone = conn.repo.path
    values = listed(clone)  # type: ignore[operator]
    config.write_text("[safe]\n" + "".join(f"\tdirectory = {v}\n" for v in values))
    _give(clone)
    trusted = _git_accepts(clone)
    if trusted:
        _accepted_as_by_git(clone, 3)
        assert dc.connect(clone).validate().ok
    else:
        _refused_as_by_git(clone, 3)
    assert trusted == (values in ([str(clone)], ["*"], ["", str(clone)]))


def test_the_repositorys_own_configuration_cannot_make_it_safe(
    project: tuple[dc.Connection, Path],
) -> None:
    conn, _ = project
    clone = conn.repo.path
    with open(clone / ".git" / "config", "a", encoding="utf-8") as f:
        f.write("[safe]\n\tdirectory = *\n")
    _give(clone)
    _refused_as_by_git(clone, 4)


def test_the_commands_settings_trust_a_clone(
    project: tuple[dc.Connection, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git -c safe.directory=...`` (``GIT_CONFIG_COUNT``: what CI and containers set)."""
    conn, _ = project
    clone = conn.repo.path
    _give(clone)
    _command_trusts(monkeypatch, clone)
    _accepted_as_by_git(clone, 5)


def test_root_run_through_sudo_owns_the_sudo_users_clone_and_its_own(
    project: tuple[dc.Connection, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn, _ = project
    clone = conn.repo.path
    monkeypatch.setenv("SUDO_UID", str(OTHER))
    _accepted_as_by_git(clone, 6)  # root's own
    _give(clone)
    _accepted_as_by_git(clone, 7)  # the user sudo ran it for
    monkeypatch.setenv("SUDO_UID", str(OTHER + 1))
    _refused_as_by_git(clone, 8)


def test_a_local_remote_another_user_owns_is_refused_as_gits_receive_pack_refuses_it(
    project: tuple[dc.Connection, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git enters a local remote with receive-pack and upload-pack, the command's settings
    cleared: only the user's configuration files can trust it, and its hooks (programs of
    its owner's) run only then."""
    conn, config = project
    clone = conn.repo.path
    remote = Path(conn.repo.remote_url.removeprefix("file://"))
    ran = remote.parent / "remote-hook-ran"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    before = fingerprint(conn)
    _give(remote)
    _command_trusts(monkeypatch, remote)
    assert not _git_pushes(clone)
    with pytest.raises(dc.GitError) as refused:
        dc.connect(clone).write("dm", frame(9))
    assert "dubious ownership" in str(refused.value) and "local remote" in str(refused.value)
    assert not ran.exists()
    assert fingerprint(conn) == before

    config.write_text(f"[safe]\n\tdirectory = {remote}\n")
    assert _git_pushes(clone)
    assert dc.connect(clone).write("dm", frame(9)).change == "full"
    assert ran.exists()  # trusted: its hooks run, as receive-pack runs them
