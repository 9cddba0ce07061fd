"""git's own smart-HTTP server, ``git http-backend``, behind a small threaded WSGI wrapper.

:class:`GitBackendServer` has the interface of :class:`tests.gitserver.GitHTTPServer`
(the same basic-auth token scheme, ``deny_push``, ``add_pre_receive_hook``, ``usernames``,
a wrappable ``_app``), but every request is answered by the ``git http-backend`` CGI
program, so pushes go through git's ``receive-pack`` (its ref locking, its status
wordings, its hooks, its ``gc --auto``) and fetches through git's ``upload-pack``.
Requests are served concurrently, one thread each, as a real server does.

Use the ``git_backend_server`` fixture (or ``any_git_http_server``, which runs a test on
both servers), registered in ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIServer

import pytest

from tests.gitserver import GitHTTPServer, _StartResponse, serving

__all__ = ["GitBackendServer", "any_git_http_server", "git_backend_server"]

GIT = shutil.which("git") or "git"
_CGI_ENV = ("REQUEST_METHOD", "QUERY_STRING", "CONTENT_TYPE", "REMOTE_ADDR", "PATH_INFO")


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def _request_body(environ: dict[str, Any]) -> bytes:
    """The request's body, a chunked one decoded (the CGI program wants a length)."""
    stream = environ["wsgi.input"]
    if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while stream.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(stream.read(size))
            stream.readline()  # the CRLF after the chunk
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return stream.read(length) if length else b""


def http_backend_app(root: Path) -> Any:
    """A WSGI application serving the repositories under ``root`` through git http-backend."""

    def app(environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        body = _request_body(environ)
        env = {k: environ[k] for k in _CGI_ENV if k in environ}
        env.update(
            PATH=os.environ.get("PATH", "/usr/bin:/bin"),
            HOME=str(root),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_PROJECT_ROOT=str(root),
            GIT_HTTP_EXPORT_ALL="1",
            CONTENT_LENGTH=str(len(body)),
            REMOTE_USER=environ.get("REMOTE_USER", "datom"),
            GATEWAY_INTERFACE="CGI/1.1",
            SERVER_PROTOCOL="HTTP/1.1",
        )
        for header, var in (
            ("HTTP_CONTENT_ENCODING", "HTTP_CONTENT_ENCODING"),
            ("HTTP_GIT_PROTOCOL", "GIT_PROTOCOL"),
        ):
            if header in environ:
                env[var] = environ[header]
        done = subprocess.run([GIT, "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status, headers = "200 OK", []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name.strip(), value.strip()))
        if done.returncode != 0 and not head:
            status, payload = "500 Internal Server Error", done.stderr
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        start_response(status, [*headers, ("Content-Length", str(len(payload)))])
        return [payload]

    return app


class GitBackendServer(GitHTTPServer):
    """``git http-backend`` on loopback with token (basic-auth) checking, one thread per
    request."""

    def __init__(self, root: Path, token: str) -> None:
        super().__init__(root, token, server_class=_ThreadingWSGIServer)
        self._app = http_backend_app(root)

    def create_bare(self, repo_name: str, branch: str = "main") -> Path:
        """Create an empty bare repository with git (``receive-pack`` enabled)."""
        path = self.root / repo_name
        subprocess.run(
            [GIT, "init", "-q", "--bare", "-b", branch, str(path)], check=True, env=_git_env()
        )
        subprocess.run(
            [GIT, "-C", str(path), "config", "http.receivepack", "true"], check=True,
            env=_git_env(),
        )  # fmt: skip
        return path


def _git_env() -> dict[str, str]:
    return dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")


@pytest.fixture
def git_backend_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHTTPServer]:
    """git's own ``git http-backend`` on 127.0.0.1 (random port) with its own token."""
    token = secrets.token_urlsafe(24)
    yield from serving(GitBackendServer(tmp_path_factory.mktemp("git-backend"), token))


@pytest.fixture(params=["dulwich", "git-http-backend"])
def any_git_http_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GitHTTPServer]:
    """Each smart-HTTP server in turn: dulwich's, then git's own ``git http-backend``."""
    kind = GitHTTPServer if request.param == "dulwich" else GitBackendServer
    token = secrets.token_urlsafe(24)
    yield from serving(kind(tmp_path_factory.mktemp(request.param), token))
