"""A hosted git server that says "later": rate limited (429) or unavailable (503), with
or without ``Retry-After``, at each of a write's and a clone's requests (fault proxy in
front of the smart-HTTP git server, tests/faultproxy.py). The request is sent again when
the server says, up to a patience; past it, the error says what the server said and
nothing is left behind. A gateway's 502 to a push is not sent again: the remote says
what it recorded. A push a server's front refuses for its size or its chunks is named
with the setting to change."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dulwich.repo import Repo

import datom_core as dc
from datom_core._git import _httpclient
from datom_core._retryafter import retry_after_seconds
from tests.core.projects import frame
from tests.faultproxy import FaultProxy
from tests.gitserver import GitHTTPServer
from tests.reliability.test_faults_push import PUSH, _project, _remote_tip, proxied  # noqa: F401

# Each request of a write or clone: the ref advertisement, a fetch's pack, a push.
REQUESTS = {
    "advertisement": ("GET", r"info/refs\?service=git-upload-pack"),
    "fetch": ("POST", "git-upload-pack$"),
    "push": ("POST", PUSH),
}


def _one_version(
    proxied: tuple[GitHTTPServer, FaultProxy],  # noqa: F811
    tmp_path: Path,
) -> tuple[GitHTTPServer, FaultProxy, dc.Connection]:
    """The server, its fault proxy, and a project through the proxy with one version."""
    server, proxy = proxied
    conn = _project(tmp_path, proxy)
    conn.write("dm", frame())
    return server, proxy, conn


def _commits(server: GitHTTPServer) -> int:
    with Repo(str(server.root / "proj")) as r:
        return sum(1 for _ in r.get_walker())


@pytest.mark.parametrize("said", ["429 Retry-After 1", "503"])
@pytest.mark.parametrize("request_", sorted(REQUESTS))
def test_a_request_the_server_says_to_send_later_is_sent_again(
    proxied: tuple[GitHTTPServer, FaultProxy],  # noqa: F811
    tmp_path: Path,
    request_: str,
    said: str,
) -> None:
    server, proxy, conn = _one_version(proxied, tmp_path)
    commits = _commits(server)
    method, path = REQUESTS[request_]
    status, retry_after = (429, "1") if said.startswith("429") else (503, None)

    def refuse_twice() -> object:
        return proxy.inject(
            "status", method=method, path=path, status=status, times=2, retry_after=retry_after
        )

    rule = refuse_twice()
    started = time.monotonic()
    result = conn.write("dm", frame(seed=2))
    if request_ != "fetch":  # a write whose look is fresh fetches nothing
        assert rule.fired == 2
        if retry_after is not None:  # the server's word is kept: a second each time
            assert time.monotonic() - started >= 2 * float(retry_after)
    assert result.change == "full" and result.commit == _remote_tip(server)
    assert _commits(server) == commits + 1  # recorded once
    assert conn.validate().ok

    rule = refuse_twice()
    other = dc.clone(proxy.url_for("proj"), tmp_path / "c2", dc.LocalStore(tmp_path / "store"))
    assert rule.fired == (0 if request_ == "push" else 2)
    assert other.read("dm").equals(frame(seed=2))


@pytest.mark.parametrize("retry_after", [None, "1", "3600"])
@pytest.mark.parametrize("doing", ["write", "clone"])
def test_a_server_still_busy_past_the_patience_is_named_and_nothing_is_left(
    proxied: tuple[GitHTTPServer, FaultProxy],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    retry_after: str | None,
    doing: str,
) -> None:
    """Rate limited for good: a write's push, or a clone's first look, fails once the
    patience is spent (at once when the server asks for a wait past it), saying what the
    server said; the store and the remote are as they were, and no clone is left."""
    server, proxy, conn = _one_version(proxied, tmp_path)
    monkeypatch.setattr(_httpclient, "BUSY_PATIENCE", 3.0)
    before, tip = sorted(conn.store.list("")), _remote_tip(server)
    method, path = REQUESTS["push" if doing == "write" else "advertisement"]
    rule = proxy.inject("status", method=method, path=path, status=429, times=10**6)
    rule.retry_after = retry_after
    with pytest.raises(dc.GitError, match=r"limits the rate of requests \(HTTP 429\)") as e:
        if doing == "write":
            conn.write("dm", frame(seed=2))
        else:
            dc.clone(proxy.url_for("proj"), tmp_path / "c2", dc.LocalStore(tmp_path / "store"))
    if retry_after == "3600":
        assert rule.fired == 1 and "asked for a wait of 3600 s, past what datom waits" in str(
            e.value
        )
    else:
        assert rule.fired > 1 and f"after {rule.fired} tries" in str(e.value)
    assert sorted(conn.store.list("")) == before and _remote_tip(server) == tip
    assert not (tmp_path / "c2").exists()
    proxy.clear()
    assert conn.write("dm", frame(seed=2)).change == "full"


def test_a_push_a_gateway_failed_is_not_sent_again_and_the_remote_decides(
    proxied: tuple[GitHTTPServer, FaultProxy],  # noqa: F811
    tmp_path: Path,
) -> None:
    """A 502 to a push may come after the server took it: it is not sent blind. The
    remote is asked: here it holds nothing new, so the write is undone and the error
    names the gateway; the same write run again records it."""
    server, proxy, conn = _one_version(proxied, tmp_path)
    before = sorted(conn.store.list(""))
    rule = proxy.inject("status", method="POST", path=PUSH, status=502)
    with pytest.raises(dc.GitError, match=r"a gateway had no answer from the server \(HTTP 502\)"):
        conn.write("dm", frame(seed=2))
    assert rule.fired == 1
    assert sorted(conn.store.list("")) == before
    assert conn.write("dm", frame(seed=2)).commit == _remote_tip(server)


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    read = retry_after_seconds
    assert read("7") == 7.0 and read("0") == 0.0 and read(None) is None
    assert read("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # passed already
    soon = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= (read(soon) or 0) <= 31
    assert read("soon") is None


@pytest.mark.parametrize(
    ("status", "remedy"), [(413, "client_max_body_size"), (411, "http.postBuffer 524288000")]
)
def test_a_push_a_servers_body_limit_refuses_names_the_setting(
    proxied: tuple[GitHTTPServer, FaultProxy],  # noqa: F811
    tmp_path: Path,
    status: int,
    remedy: str,
) -> None:
    server, proxy, conn = _one_version(proxied, tmp_path)
    before, tip = sorted(conn.store.list("")), _remote_tip(server)
    proxy.inject("status", method="POST", path=PUSH, status=status)
    with pytest.raises(dc.GitError, match=f"HTTP {status}") as refused:
        conn.write("dm", frame(seed=2))
    assert remedy in str(refused.value) and "access to it" not in str(refused.value)
    assert sorted(conn.store.list("")) == before and _remote_tip(server) == tip
