"""Who a commit is by, and the settings a user's git configuration gives a clone, as git
reads them: split by ``includeIf "gitdir:..."`` (a work identity and a work host's
settings for the repositories under one folder, a personal one elsewhere), or given by
git's environment (``GIT_AUTHOR_NAME``, ``EMAIL``: containers and CI set them, with no
configuration file) or ``author.*``. datom's commits carry the identity git would give
them (``git var GIT_AUTHOR_IDENT`` in the same clone is the judge), and a setting of an
included file reaches the remote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.gitcli import GIT, needs_git, own_git_config
from tests.tls import HttpsGitServer, https_git_server  # noqa: F401

pytestmark = needs_git

_IDENTITY_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL", "EMAIL", "DATOM_AUTHOR_NAME", "DATOM_AUTHOR_EMAIL",
                 "DATOM_GIT_TOKEN")  # fmt: skip


@pytest.fixture
def split_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A global configuration naming a personal identity, and a work one for every
    repository under ``<tmp>/work/`` (included by ``includeIf "gitdir:"``): the work
    folder and the included file's path."""
    config = own_git_config(monkeypatch, tmp_path, _IDENTITY_ENV)
    work, included = tmp_path / "work", tmp_path / "gitconfig-work"
    work.mkdir()
    included.write_text("[user]\n\tname = Work Person\n\temail = work@pharma.example\n")
    config.write_text(
        "[user]\n\tname = Home Person\n\temail = home@example.org\n"
        f'[includeIf "gitdir:{work}/"]\n\tpath = {included}\n'
    )
    return work, included


def _git_identity(clone: Path) -> str:
    done = subprocess.run(
        [GIT or "git", "-C", str(clone), "var", "GIT_AUTHOR_IDENT"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit(" ", 2)[0]  # without the time and zone


def _last_author(clone: Path) -> str:
    done = subprocess.run(
        [GIT or "git", "-C", str(clone), "log", "-1", "--format=%an <%ae>"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def test_a_commit_carries_the_identity_git_gives_the_clone(
    split_config: tuple[Path, Path], tmp_path: Path
) -> None:
    work, _ = split_config
    for clone, expected in (
        (work / "s001", "Work Person <work@pharma.example>"),
        (tmp_path / "elsewhere" / "s001", "Home Person <home@example.org>"),
    ):
        conn = dc.init_repo(clone, "S001", dc.LocalStore(clone.parent / "store"))
        conn.write("dm", frame())
        assert _git_identity(clone) == expected
        assert _last_author(clone) == expected
        assert conn.history("dm")[0].author == expected  # the history entry R reads


def test_a_setting_the_included_file_holds_reaches_the_remote(
    split_config: tuple[Path, Path],
    https_git_server: HttpsGitServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The work file sends the work host's address (which exists only through its rule)
    to the server, with the token it carries, and trusts the server's CA: datom writes
    there from a clone under the work folder, as git reaches it from there."""
    work, included = split_config
    server = https_git_server
    server.create_bare("proj")
    for name in ("GIT_SSL_CAINFO", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    real = f"https://x-access-token:{server.token}@localhost:{server.port}/"
    with included.open("a") as f:
        f.write(f'[url "{real}"]\n\tinsteadOf = https://git.pharma.invalid/\n')
        f.write(f"[http]\n\tsslCAInfo = {server.ca}\n")
    url = "https://git.pharma.invalid/proj"
    conn = dc.init_repo(work / "s001", "S001", dc.LocalStore(tmp_path / "store"), url)
    conn.write("dm", frame())
    listed = subprocess.run(
        [GIT or "git", "-C", str(work / "s001"), "ls-remote", url],
        capture_output=True,
        text=True,
        env=dict(os.environ, GIT_TERMINAL_PROMPT="0"),
    )
    assert f"{conn.repo.head()}\trefs/heads/main" in listed.stdout, listed.stderr
    with pytest.raises(dc.GitError):  # outside the work folder the rule does not apply
        dc.init_repo(tmp_path / "home" / "s001", "S001", dc.LocalStore(tmp_path / "s2"), url)


# Each: the environment and the configuration (beside user.name/user.email of Home Person).
IDENTITY_CASES = {
    "GIT_AUTHOR_NAME/EMAIL": ({"GIT_AUTHOR_NAME": "Ci Runner", "GIT_AUTHOR_EMAIL": "ci@x.org"}, ""),
    "author.name/email": ({}, "[author]\n\tname = Author Only\n\temail = author@x.org\n"),
    "EMAIL without user.email": ({"EMAIL": "env@x.org"}, None),
    "GIT_CONFIG_COUNT": (
        {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "user.name",
            "GIT_CONFIG_VALUE_0": "Env Set",
            "GIT_CONFIG_KEY_1": "user.email",
            "GIT_CONFIG_VALUE_1": "set@x.org",
        },
        "",
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", sorted(IDENTITY_CASES))
def test_the_author_git_would_record_from_its_environment_is_datoms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    env, extra = IDENTITY_CASES[case]
    config = own_git_config(monkeypatch, tmp_path, _IDENTITY_ENV)
    user = "[user]\n\tname = Home Person\n" + ("" if extra is None else "\temail = h@x.org\n")
    config.write_text(user + (extra or ""))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    clone = tmp_path / "s001"
    conn = dc.init_repo(clone, "S001", dc.LocalStore(tmp_path / "store"))
    conn.write("dm", frame())
    expected = _git_identity(clone)
    assert _last_author(clone) == expected
    monkeypatch.setenv("DATOM_AUTHOR_NAME", "Datom Override")  # datom's own wins over git's
    conn.write("dm", frame(seed=2))
    assert _last_author(clone) == f"Datom Override <{expected.split(' <')[1]}"
