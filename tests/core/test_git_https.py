"""A hosted remote over HTTPS whose certificate a private authority signs (as at many
enterprise git hosts), served by git's own ``git http-backend`` behind TLS: datom trusts
what git trusts, by git's own settings and environment and with git's precedence, and a
certificate it does not trust is named with the remedy, before anything is sent."""

from __future__ import annotations

import os
import subprocess
from contextlib import nullcontext
from pathlib import Path

import pytest
from urllib3.exceptions import InsecureRequestWarning

import datom_core as dc
from tests.core.projects import init_write_clone_write
from tests.gitcli import GIT, needs_git, own_git_config
from tests.tls import (  # noqa: F401
    ConnectProxy,
    HttpsGitServer,
    client_certificate,
    https_git_server,
    make_ca,
)

pytestmark = needs_git

# What a machine may say about trust, cleared so that each test says it alone.
_TRUST_ENV = ("GIT_SSL_CAINFO", "GIT_SSL_NO_VERIFY", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture
def untrusting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No trust configured: the user's git configuration is a file of the test's (its
    path returned) and the system's is not read."""
    return own_git_config(monkeypatch, tmp_path, _TRUST_ENV)


def _git_lists(url: str, token: str) -> subprocess.CompletedProcess[str]:
    """``git ls-remote`` of ``url`` with the token, under the same environment."""
    authed = url.replace("https://", f"https://x-access-token:{token}@")
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    return subprocess.run(
        [GIT or "git", "ls-remote", authed], capture_output=True, text=True, env=env
    )


def _refused_init(url: str, folder: Path, match: str) -> str:
    """The message of the :class:`GitError` a new project at ``url`` (in ``folder``) is
    refused with."""
    with pytest.raises(dc.GitError, match=match) as refused:
        dc.init_repo(folder / "c", "P1", dc.LocalStore(folder / "s"), url)
    return str(refused.value)


def test_an_untrusted_certificate_is_named_with_its_remedy(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    url = server.url_for("proj")
    message = _refused_init(url, tmp_path / "refused", "TLS certificate is not trusted")
    assert "http.sslCAInfo" in message and "GIT_SSL_CAINFO" in message
    assert server.token not in message
    assert _git_lists(url, server.token).returncode != 0  # git does not trust it either


@pytest.mark.parametrize(
    "trust", ["http.sslCAInfo", "GIT_SSL_CAINFO", "http.sslVerify=false", "GIT_SSL_NO_VERIFY"]
)
def test_a_remote_git_trusts_is_one_datom_writes_to(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    trust: str,
) -> None:
    """Each way git is told to trust the server (the user's configuration, git's
    environment) makes datom init, write, clone and write again; git lists the tip datom
    pushed. Told not to check, datom's connections are warned of, as urllib3 warns."""
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    if trust == "http.sslCAInfo":
        untrusting.write_text(f"[http]\n\tsslCAInfo = {server.ca}\n")
    elif trust == "http.sslVerify=false":
        untrusting.write_text("[http]\n\tsslVerify = false\n")
    elif trust == "GIT_SSL_CAINFO":
        monkeypatch.setenv("GIT_SSL_CAINFO", str(server.ca))
    else:
        monkeypatch.setenv("GIT_SSL_NO_VERIFY", "1")
    url = server.url_for("proj")
    unverified = "sslVerify" in trust or "NO_VERIFY" in trust
    # An unverified connection is warned of, as urllib3 warns of it: datom does not hide it.
    with pytest.warns(InsecureRequestWarning) if unverified else nullcontext():
        conn, other = init_write_clone_write(url, tmp_path)
    listed = _git_lists(url, server.token)
    assert listed.returncode == 0, listed.stderr
    assert f"{other.repo.head()}\trefs/heads/main" in listed.stdout
    assert conn.read("ae").shape == (2, 3)


def test_gits_environment_wins_over_its_configuration_as_in_git(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``GIT_SSL_CAINFO`` naming another authority overrides ``http.sslCAInfo`` naming the
    right one: git refuses the server, and so does datom."""
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    untrusting.write_text(f"[http]\n\tsslCAInfo = {server.ca}\n")
    other_ca = tmp_path / "other"
    other_ca.mkdir()
    monkeypatch.setenv("GIT_SSL_CAINFO", str(make_ca(other_ca)[0]))
    url = server.url_for("proj")
    assert _git_lists(url, server.token).returncode != 0
    _refused_init(url, tmp_path, "TLS certificate is not trusted")


# Each: the proxy settings, A and B standing for two proxies' URLs (``host:port``: no scheme).
PROXY_CASES = {
    "https_proxy": {"https_proxy": "A"},
    "HTTPS_PROXY": {"HTTPS_PROXY": "A"},
    "ALL_PROXY": {"ALL_PROXY": "A"},
    "http_proxy-is-for-http-only": {"http_proxy": "A"},
    "http.proxy-over-the-environment": {"http.proxy": "A", "HTTPS_PROXY": "B"},
    "NO_PROXY": {"HTTPS_PROXY": "A", "NO_PROXY": "localhost"},
    "no_proxy-another-domain": {"https_proxy": "A", "no_proxy": ".example.org"},
    "NO_PROXY-and-http.proxy": {"http.proxy": "A", "NO_PROXY": "localhost,127.0.0.1"},
    "http.proxy-without-a-scheme": {"http.proxy": "A host:port"},
}


@pytest.mark.parametrize("case", sorted(PROXY_CASES))
def test_the_proxy_git_uses_is_the_one_datom_uses(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    """Through a tunnelling proxy (what HTTPS through a corporate proxy is), datom writes
    and clones by the proxy git picks for the same settings, or directly where git goes
    directly: the environment in either case (libcurl's names), ``http.proxy`` over it,
    ``no_proxy`` over both."""
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(server.ca))
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    url = server.url_for("proj")

    def under(proxies: dict[str, ConnectProxy]) -> None:
        settings = {}
        for name, value in PROXY_CASES[case].items():
            proxy = proxies[value[0]].url if value[0] in proxies else value
            settings[name] = proxy.removeprefix("http://") if value.endswith("host:port") else proxy
        untrusting.write_text(
            f"[http]\n\tproxy = {settings.pop('http.proxy')}\n" if "http.proxy" in settings else ""
        )
        for name, value in settings.items():
            monkeypatch.setenv(name, value)

    mine = {"A": ConnectProxy(), "B": ConnectProxy()}
    gits = {"A": ConnectProxy(), "B": ConnectProxy()}
    try:
        under(mine)
        init_write_clone_write(url, tmp_path)
        under(gits)
        listed = _git_lists(url, server.token)
        assert listed.returncode == 0, listed.stderr
        used = {name for name, proxy in mine.items() if proxy.tunnelled}
        assert used == {name for name, proxy in gits.items() if proxy.tunnelled}
        assert len(used) <= 1
    finally:
        for proxy in (*mine.values(), *gits.values()):
            proxy.close()


@pytest.mark.parametrize("given", ["http.sslCert", "http.<url>.sslCert", "GIT_SSL_CERT"])
def test_a_server_asking_for_a_client_certificate_gets_the_one_git_presents(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:
    """Mutual TLS: the certificate and key git's settings name (the longest matching
    ``http.<url>`` section's, or git's environment over them) are presented; without one
    the handshake's failure is named with both ways to give it, as early as git fails."""
    server = https_git_server
    server.create_bare("proj")
    server.require_client_certificates()
    for name in ("GIT_SSL_CERT", "GIT_SSL_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATOM_GIT_TOKEN", server.token)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(server.ca))
    url = server.url_for("proj")
    assert _git_lists(url, server.token).returncode != 0  # without one, git fails too
    message = _refused_init(url, tmp_path / "refused", "client certificate")
    assert "http.sslCert" in message and "GIT_SSL_CERT" in message

    cert, key = client_certificate(server.folder)
    if given == "GIT_SSL_CERT":
        monkeypatch.setenv("GIT_SSL_CERT", str(cert))
        monkeypatch.setenv("GIT_SSL_KEY", str(key))
    else:
        section = f'http "https://localhost:{server.port}/"' if "<url>" in given else "http"
        untrusting.write_text(
            f"[http]\n\tsslCert = {tmp_path}/not-this-one.pem\n"
            f"[{section}]\n\tsslCert = {cert}\n\tsslKey = {key}\n"
        )
    _, other = init_write_clone_write(url, tmp_path)
    listed = _git_lists(url, server.token)
    assert listed.returncode == 0, listed.stderr
    assert f"{other.repo.head()}\trefs/heads/main" in listed.stdout


def test_a_client_certificate_that_cannot_be_read_is_named_before_anything_is_sent(
    https_git_server: HttpsGitServer,  # noqa: F811
    untrusting: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = https_git_server
    server.create_bare("proj")
    monkeypatch.setenv("GIT_SSL_CAINFO", str(server.ca))
    missing = tmp_path / "me.pem"
    untrusting.write_text(f"[http]\n\tsslCert = {missing}\n")
    message = _refused_init(server.url_for("proj"), tmp_path / "refused", "http.sslCert")
    assert str(missing) in message and "nothing was sent" in message
