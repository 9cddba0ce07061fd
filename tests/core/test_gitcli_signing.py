"""A user whose git signs every commit (``commit.gpgSign``: a company's audit rule, a
server that accepts signed commits only): datom's commits are signed as git signs them,
with an OpenPGP key (``gpg``) or an SSH key (``gpg.format=ssh``), and ``git
verify-commit`` accepts every one of them. A commit that cannot be signed is refused
before anything changes, naming the settings."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import datom_core as dc
from tests.core.projects import frame
from tests.gitcli import GIT, needs_git, own_git_config

pytestmark = [
    needs_git,
    pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed"),
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed"),
]

_USER = "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n"


@pytest.fixture
def gnupg(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A keyring of the test's own (a short path: gpg-agent's socket lives there) holding
    one signing key for Ada; its fingerprint. Its agent is stopped afterwards."""
    home = tempfile.mkdtemp(prefix="gpg-", dir="/tmp")
    os.chmod(home, 0o700)
    monkeypatch.setenv("GNUPGHOME", home)
    subprocess.run(
        ["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
         "Ada Lovelace <ada@example.org>", "ed25519", "sign", "never"],
        check=True, capture_output=True,
    )  # fmt: skip
    listed = subprocess.run(
        ["gpg", "--list-keys", "--with-colons"], check=True, capture_output=True, text=True
    ).stdout
    yield next(line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr"))
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


def _git(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GIT or "git", "-C", str(clone), *args], capture_output=True, text=True, env=os.environ
    )


def _all_verified(repository: Path) -> list[str]:
    """Every commit of ``repository``'s history, each checked by ``git verify-commit``."""
    commits = _git(repository, "rev-list", "HEAD").stdout.split()
    for commit in commits:
        verified = _git(repository, "verify-commit", commit)
        assert verified.returncode == 0, verified.stderr
    return commits


def _write_and_clone(tmp_path: Path) -> dc.Connection:
    store = dc.LocalStore(tmp_path / "store")
    conn = dc.init_repo(tmp_path / "c", "S001", store)
    conn.write("dm", frame())
    other = dc.clone(conn.repo.remote_url, tmp_path / "c2", store)
    other.write("ae", frame(seed=2))  # a second clone of the same user
    conn.pull()
    return conn


def test_commits_are_signed_with_the_users_openpgp_key(
    gnupg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = own_git_config(monkeypatch, tmp_path)
    config.write_text(_USER + f"\tsigningKey = {gnupg}\n[commit]\n\tgpgSign = true\n")
    conn = _write_and_clone(tmp_path)
    assert len(_all_verified(Path(conn.repo.remote_url))) == 3
    shown = _git(conn.path, "log", "-1", "--format=%G? %GK")
    assert shown.stdout.split() == ["G", gnupg[-16:]]  # good, by that key


def test_commits_are_signed_with_the_users_ssh_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ada", "-f", str(key)], check=True
    )
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"ada@example.org {key.with_suffix('.pub').read_text()}")
    config = own_git_config(monkeypatch, tmp_path)
    config.write_text(
        _USER + f"\tsigningKey = {key}\n[commit]\n\tgpgSign = true\n[gpg]\n\tformat = ssh\n"
        f'[gpg "ssh"]\n\tallowedSignersFile = {allowed}\n'
    )
    conn = _write_and_clone(tmp_path)
    assert len(_all_verified(Path(conn.repo.remote_url))) == 3


@pytest.mark.parametrize("setting", ["a key gpg does not hold", "gpg.format=x509"])
def test_a_commit_that_cannot_be_signed_is_refused_before_anything_changes(
    gnupg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    config = own_git_config(monkeypatch, tmp_path)
    config.write_text(_USER)
    conn = dc.init_repo(tmp_path / "c", "S001", dc.LocalStore(tmp_path / "store"))
    conn.write("dm", frame())
    before = (sorted(conn.store.list("")), conn.repo.head(), _git(conn.path, "status", "-s").stdout)
    signing = "\tsigningKey = NO-SUCH-KEY\n[commit]\n\tgpgSign = true\n"
    if setting.startswith("gpg.format"):
        signing = "[commit]\n\tgpgSign = true\n[gpg]\n\tformat = x509\n"
    config.write_text(_USER + signing)
    with pytest.raises(dc.GitError, match="commit.gpgSign") as refused:
        conn.write("dm", frame(seed=2))
    assert "user.signingKey" in str(refused.value) and "Nothing was recorded" in str(refused.value)
    if setting.startswith("gpg.format"):
        assert "x509" in str(refused.value)
    after = (sorted(conn.store.list("")), conn.repo.head(), _git(conn.path, "status", "-s").stdout)
    assert after == before
    assert _git(Path(conn.repo.remote_url), "rev-parse", "HEAD").stdout.strip() == before[1]


def test_an_ssh_signature_whose_commit_cannot_be_handed_over_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ssh-keygen signs a file: a temporary folder that cannot be written (a full disk)
    refuses the write with datom's error, before anything changes."""
    config = own_git_config(monkeypatch, tmp_path)
    config.write_text(_USER)
    conn = dc.init_repo(tmp_path / "c", "S001", dc.LocalStore(tmp_path / "store"))
    conn.write("dm", frame())
    head = conn.repo.head()
    config.write_text(
        _USER + f"\tsigningKey = {tmp_path}/key\n[commit]\n\tgpgSign = true\n"
        "[gpg]\n\tformat = ssh\n"
    )
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no" / "such" / "folder"))
    with pytest.raises(dc.GitError, match="could not be handed to ssh-keygen"):
        conn.write("dm", frame(seed=2))
    assert conn.repo.head() == head
