"""A colleague's git reaches a hosted remote with credentials datom was never given: a
credential helper (``store``, a keychain, ``gh auth setup-git``), a ``GIT_ASKPASS`` script
(CI), or a ``url.<base>.insteadOf`` rule with a token in it (CI again). datom reaches the
remote as git does, with the same credentials, and git (``git ls-remote`` under the same
configuration) is the judge; no token is written anywhere, and none is erased."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame, init_write_clone_write
from tests.gitcli import GIT, needs_git, own_git_config
from tests.tls import HttpsGitServer, https_git_server  # noqa: F401

pytestmark = needs_git

# What a machine may say about credentials and prompts, cleared so each test says it alone.
_CREDENTIAL_ENV = (
    "DATOM_GIT_TOKEN",
    "DATOM_GIT_USERNAME",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_TERMINAL_PROMPT",
)


@pytest.fixture
def gitconfig(
    https_git_server: HttpsGitServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Path:
    """The user's git configuration: a file of the test's (its path returned), the system's
    not read; the server's CA trusted through git's environment."""
    monkeypatch.setenv("GIT_SSL_CAINFO", str(https_git_server.ca))
    return own_git_config(monkeypatch, tmp_path, _CREDENTIAL_ENV)


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _recording_helper(folder: Path, token: str) -> tuple[Path, Path]:
    """A credential helper (git's helper protocol) that gives ``token`` and writes each
    action git asks of it (get, store, erase) to a log: the helper and the log."""
    log = folder / "helper.log"
    helper = _executable(
        folder / "helper.sh",
        "#!/bin/sh\n"
        f'echo "$1" >> {log}\n'
        "cat > /dev/null\n"
        f'[ "$1" = get ] && printf "username=x-access-token\\npassword={token}\\n"\n'
        "exit 0\n",
    )
    return helper, log


def _git_lists(url: str, clone: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``git ls-remote`` of ``url`` as the colleague's git runs it (no token given)."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    where = ["-C", str(clone)] if clone is not None else []
    return subprocess.run(
        [GIT or "git", *where, "ls-remote", url], capture_output=True, text=True, env=env
    )


def _no_token_kept(token: str, *folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert token.encode() not in path.read_bytes(), path


def _written_where_git_lists(url: str, token: str, tmp_path: Path) -> dc.Connection:
    """A project written at ``url`` and cloned: git lists the clone's last commit there,
    and ``token`` is in no file of the clones or the store."""
    conn, other = init_write_clone_write(url, tmp_path)
    assert f"{other.repo.head()}\trefs/heads/main" in _git_lists(url).stdout
    _no_token_kept(token, tmp_path / "c", tmp_path / "c2", tmp_path / "s")
    return conn


@pytest.mark.parametrize("how", ["recording-helper", "store-helper", "GIT_ASKPASS"])
def test_the_credentials_gits_helpers_give_are_the_ones_datom_sends(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    """No token given to datom: git's own helpers (or its askpass program) hold it, and
    datom sends what git sends. A helper is told of credentials that worked (git's
    ``approve``), never asked to erase one, and no token is kept or logged."""
    server = https_git_server
    server.create_bare("proj")
    url = server.url_for("proj")
    token = server.token
    log = None
    if how == "recording-helper":
        helper, log = _recording_helper(tmp_path, token)
        gitconfig.write_text(f"[credential]\n\thelper = {helper}\n")
    elif how == "store-helper":
        stored = tmp_path / "git-credentials"
        stored.write_text(f"https://x-access-token:{token}@localhost%3a{server.port}\n")
        gitconfig.write_text(f"[credential]\n\thelper = store --file {stored}\n")
    else:
        askpass = _executable(
            tmp_path / "askpass.sh",
            f'#!/bin/sh\ncase "$1" in Username*) echo x-access-token;; *) echo {token};; esac\n',
        )
        monkeypatch.setenv("GIT_ASKPASS", str(askpass))
    assert _git_lists(url).returncode == 0  # the colleague's git reaches it so

    with caplog.at_level(logging.DEBUG):
        conn, other = init_write_clone_write(url, tmp_path)
    listed = _git_lists(url)
    assert listed.returncode == 0, listed.stderr
    assert f"{other.repo.head()}\trefs/heads/main" in listed.stdout
    assert conn.read("ae").shape == (2, 3)
    assert token not in caplog.text
    _no_token_kept(token, tmp_path / "c", tmp_path / "c2", tmp_path / "s")
    if log is not None:
        actions = log.read_text().split()
        assert "erase" not in actions
        assert actions.count("get") >= 1
        assert actions.count("store") == actions.count("get")


def test_a_token_given_to_datom_wins_and_no_helper_is_asked(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = https_git_server
    server.create_bare("proj")
    helper, log = _recording_helper(tmp_path, "not-the-token")
    gitconfig.write_text(f"[credential]\n\thelper = {helper}\n")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    init_write_clone_write(server.url_for("proj"), tmp_path)
    assert not log.exists()


def test_credentials_a_helper_gives_that_are_refused_are_named_and_kept(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
) -> None:
    """A stale token in git's ``store`` helper: refused, said to come from the helper
    (with git's remedy and datom's), not shown, and not erased (it is the user's)."""
    server = https_git_server
    server.create_bare("proj")
    stale = "stale-token-0123456789"
    stored = tmp_path / "git-credentials"
    stored.write_text(f"https://x-access-token:{stale}@localhost%3a{server.port}\n")
    before = stored.read_bytes()
    gitconfig.write_text(f"[credential]\n\thelper = store --file {stored}\n")
    with pytest.raises(dc.GitError, match="credential helper gave") as refused:
        dc.init_repo(tmp_path / "c", "P1", dc.LocalStore(tmp_path / "s"), server.url_for("proj"))
    assert stale not in str(refused.value)
    assert "DATOM_GIT_TOKEN" in str(refused.value)
    assert stored.read_bytes() == before


def test_a_long_lived_connection_asks_the_helper_again_when_its_token_expires(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
) -> None:
    """A token that expires (a CI or app token, an hour long) while a process stays up (a
    Dagster daemon): the helper, which holds a new one by then, is asked again at the
    401, and the write goes through; one it still holds refused is named."""
    server = https_git_server
    server.create_bare("proj")
    held = tmp_path / "held-token"
    held.write_text(server.token)
    helper = _executable(
        tmp_path / "helper.sh",
        "#!/bin/sh\ncat > /dev/null\n"
        f'[ "$1" = get ] && printf "username=x-access-token\\npassword=%s\\n" "$(cat {held})"\n'
        "exit 0\n",
    )
    gitconfig.write_text(f"[credential]\n\thelper = {helper}\n")
    conn = dc.init_repo(tmp_path / "c", "P1", dc.LocalStore(tmp_path / "s"), server.url_for("proj"))
    conn.write("dm", frame(3))
    server.token = "renewed-" + server.token  # the old one expires...
    held.write_text(server.token)  # ...and the helper holds the new one
    assert conn.write("dm", frame(4)).change == "full"
    server.token = "revoked-" + server.token  # one the helper still holds is refused
    with pytest.raises(dc.GitError, match="credential helper gave"):
        conn.write("dm", frame(5))


def test_no_credentials_anywhere_names_both_ways_to_give_them(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
) -> None:
    """Neither a token nor a helper: refused without a prompt (there is no terminal in a
    worker), naming the token variable and git's credential helpers."""
    server = https_git_server
    server.create_bare("proj")
    with pytest.raises(dc.GitError, match="HTTP 401") as refused:
        dc.init_repo(tmp_path / "c", "P1", dc.LocalStore(tmp_path / "s"), server.url_for("proj"))
    assert "DATOM_GIT_TOKEN" in str(refused.value)
    assert "git credential helper" in str(refused.value)
    assert not (tmp_path / "c" / ".git" / "refs" / "heads" / "main").exists()


def test_gits_insteadof_rule_is_how_datom_reaches_the_remote(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
) -> None:
    """CI's way to a private repository: ``url.<base with token>.insteadOf <host>``. The
    project's origin names a host that exists only through the rule; datom goes where
    the rule sends it, with the rule's token, and keeps origin (and no token) as given."""
    server = https_git_server
    server.create_bare("proj")
    real = f"https://x-access-token:{server.token}@localhost:{server.port}/"
    gitconfig.write_text(f'[url "{real}"]\n\tinsteadOf = https://git.example.invalid/\n')
    url = "https://git.example.invalid/proj"
    assert _git_lists(url).returncode == 0
    conn = _written_where_git_lists(url, server.token, tmp_path)
    assert conn.repo.remote_url == url


def test_a_rule_in_gits_environment_is_followed_as_one_in_its_files(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_0``/``GIT_CONFIG_VALUE_0`` (what ``git -c``
    passes on, and what CI jobs and containers set): the rule it gives is followed."""
    server = https_git_server
    server.create_bare("proj")
    real = f"https://x-access-token:{server.token}@localhost:{server.port}/"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{real}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://git.ci.invalid/")
    url = "https://git.ci.invalid/proj"
    assert _git_lists(url).returncode == 0
    _written_where_git_lists(url, server.token, tmp_path)


def test_a_rule_to_ssh_leaves_an_https_origin_and_a_rule_from_ssh_is_followed(
    https_git_server: HttpsGitServer,  # noqa: F811
    gitconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A developer whose git uses ssh for the host (``url."git@host:".insteadOf
    https://host/``) still has datom write over HTTPS, which reaches the same repository;
    a clone whose origin is ssh, which git's rule sends over HTTPS, is written as git
    would write it."""
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    base = f"https://localhost:{server.port}/"
    gitconfig.write_text(f'[url "git@localhost:"]\n\tinsteadOf = {base}\n')
    conn, _ = init_write_clone_write(server.url_for("proj"), tmp_path)

    ssh = "ssh://git@git.example.invalid/proj"
    gitconfig.write_text(f'[url "{base}"]\n\tinsteadOf = ssh://git@git.example.invalid/\n')
    subprocess.run([GIT or "git", "-C", str(tmp_path / "c"), "remote", "set-url", "origin", ssh])
    conn.write("lb", frame(4))
    assert conn.repo.remote_url == ssh
    authed = server.url_for("proj").replace("https://", f"https://x-:{server.token}@")
    assert f"{conn.repo.head()}\trefs/heads/main" in _git_lists(authed).stdout
