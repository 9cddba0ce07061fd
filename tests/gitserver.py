"""A real smart-HTTP git server on 127.0.0.1 for tests (dulwich.web over wsgiref).

It serves bare repositories from a temporary directory at ``http://127.0.0.1:<port>/<name>``
and demands HTTP basic auth whose password is :attr:`GitHTTPServer.token` (any username)
for every request, fetch and push alike: no or a wrong token gets ``401``. A repository
can also be made to refuse pushes (``403``, like a read-only deploy token), or be given a
``pre-receive`` hook. The server is single-threaded (requests are served one at a time)
unless made ``threaded`` (a thread per request, each with its own ``Repo``, as git's
``http-backend`` runs a process per request): one at a time, a request holds the
server from the moment its connection is accepted, so each client's wait for its
request to arrive (half a round trip across a WAN) is every other client's too.

Use the ``git_http_server`` fixture (registered in ``tests/conftest.py``).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import make_server

import pytest
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.object_store import GraphTraversalReachability
from dulwich.objects import hex_to_sha, sha_to_hex
from dulwich.pack import OFS_DELTA, REF_DELTA, UnpackedObject
from dulwich.repo import Repo
from dulwich.server import Backend, BackendRepo
from dulwich.web import WSGIRequestHandlerLogger, WSGIServerLogger, make_wsgi_chain

__all__ = ["GitHTTPServer", "git_http_server", "serving"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_StartResponse = Callable[..., Any]
_REF_LOCK_WAIT = 2.0  # seconds a ref update waits for a concurrent one's lock
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class _Backend(Backend):
    """Serves ``<root>/<name>``; keeps each opened repository until :meth:`close`.

    dulwich's receive-pack ignores a lost compare-and-swap of a ref (``set_if_equals``
    returning False when a concurrent push moved it) and answers "ok": a git client then
    takes a push that did not land for done, and its next ``git pull --rebase`` drops that
    commit as already upstream (bench_concurrency's colleague lost a note so). Real
    servers answer "failed to update ref"; here a lost swap is reported as dulwich reports
    a failed write ("failed to write"), unless ``acknowledge_lost_swaps`` is set (to test
    a client against a server that says "ok" regardless).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._repos: dict[tuple[int, str], Repo] = {}  # (thread, name): each thread its own
        self._mutex = threading.Lock()
        self.acknowledge_lost_swaps = False

    def open_repository(self, path: str | bytes) -> BackendRepo:  # type: ignore[override]
        name = os.fsdecode(path).strip("/")
        if not _NAME.fullmatch(name) or not (self.root / name).is_dir():
            raise NotGitRepository(f"no repository {path!r}")
        key = (threading.get_ident(), name)
        if key not in self._repos:
            repo = Repo(str(self.root / name))
            swap = repo.refs.set_if_equals

            def set_if_equals(*args: Any, **kwargs: Any) -> bool:
                # A concurrent push holding the ref's lock may yet fail its own swap (its
                # old value stale): wait for the lock, as git does (core.filesRefLockTimeout),
                # so that a swap reported lost is one the ref's value decided.
                deadline = time.monotonic() + _REF_LOCK_WAIT
                while True:
                    try:
                        swapped = swap(*args, **kwargs)
                        break
                    except FileLocked:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.002)
                if swapped or self.acknowledge_lost_swaps:
                    return True
                raise OSError("a concurrent push moved the ref")  # -> "failed to write"

            repo.refs.set_if_equals = set_if_equals  # type: ignore[method-assign]
            _look_up_wanted_objects(repo)
            with self._mutex:
                self._repos[key] = repo
        return self._repos[key]  # type: ignore[return-value]

    def close_thread(self) -> None:
        """Close the repositories this thread opened (a threaded server's request ends)."""
        me = threading.get_ident()
        with self._mutex:
            mine = [k for k in self._repos if k[0] == me]
            repos = [self._repos.pop(k) for k in mine]
        for repo in repos:
            repo.close()

    def close(self) -> None:
        with self._mutex:
            repos, self._repos = list(self._repos.values()), {}
        for repo in repos:
            repo.close()


def _look_up_wanted_objects(repo: Repo) -> None:
    """Make the server find the objects a pack will hold through the pack index.

    dulwich's pack writer looks for deltas it can reuse by inflating every object of every
    pack on disk (``Pack.iter_unpacked_subset`` scans the whole pack for the wanted ones):
    a depth-1 fetch of a long history then costs this server time in proportion to the
    history, not to what it sends. git's server looks the wanted objects up in the pack
    index, and so does this one: the same objects, deltas and bytes, read directly.
    """
    store: Any = repo.object_store

    def iter_unpacked_subset(
        shas: Iterable[Any], *, include_comp: bool = False, allow_missing: bool = False,
        convert_ofs_delta: bool = False,
    ) -> Iterator[UnpackedObject]:  # fmt: skip
        todo = set(shas)
        for pack in store.packs:
            found: dict[int, Any] = {}  # offset -> name of the wanted objects in it
            for sha in todo:
                raw = hex_to_sha(sha) if len(sha) == 40 else sha
                try:
                    found[pack.index.object_offset(raw)] = raw
                except KeyError:
                    continue
            for offset, raw in sorted(found.items()):
                unpacked = pack.data.get_unpacked_object_at(offset, include_comp=include_comp)
                unpacked._sha = raw
                base = offset - unpacked.delta_base if unpacked.pack_type_num == OFS_DELTA else 0
                if base in found:  # reusable only on a base sent too (the writer's rule)
                    unpacked.delta_base, unpacked.pack_type_num = found[base], REF_DELTA
                todo.discard(sha_to_hex(raw))
                yield unpacked
        if todo and not allow_missing:
            raise KeyError(sorted(todo)[0])

    # The reachability of a depth-1 or an incremental fetch is a short walk; dulwich
    # would first decode every bitmap of the pack (once per pack, in proportion to the
    # history), where git maps the file and reads what it needs.
    store.get_reachability_provider = lambda prefer_bitmaps=True: GraphTraversalReachability(store)
    store.iter_unpacked_subset = iter_unpacked_subset


class GitHTTPServer:
    """A smart-HTTP git server on loopback with token (basic-auth) checking."""

    def __init__(
        self,
        root: Path,
        token: str,
        server_class: Any = WSGIServerLogger,
        threaded: bool = False,
    ) -> None:
        self.root = root
        self.threaded = threaded
        if threaded:
            server_class = type("ThreadingServer", (ThreadingMixIn, server_class), {})
            server_class.daemon_threads = True
        self.token = token
        self.usernames: list[str] = []  # usernames of authenticated requests, in order
        self._deny_push: set[str] = set()
        self._backend = _Backend(root)
        self._app = make_wsgi_chain(self._backend)
        self._server = make_server(
            "127.0.0.1",
            0,
            self._wsgi,
            server_class=server_class,
            handler_class=WSGIRequestHandlerLogger,
        )
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url_for(self, repo_name: str) -> str:
        """The clone URL of ``repo_name`` (no credentials in it)."""
        return f"http://127.0.0.1:{self.port}/{repo_name}"

    def create_bare(self, repo_name: str, branch: str = "main") -> Path:
        """Create an empty bare repository served as ``repo_name``; returns its path."""
        if not _NAME.fullmatch(repo_name):
            raise ValueError(f"bad repository name {repo_name!r}")
        path = self.root / repo_name
        with closing(Repo.init_bare(str(path), mkdir=True, default_branch=branch.encode())):
            pass
        return path

    def acknowledge_lost_swaps(self) -> None:
        """Answer "ok" to a push whose ref update lost to a concurrent push (dulwich's own
        server does; see :class:`_Backend`)."""
        self._backend.acknowledge_lost_swaps = True

    def deny_push(self, repo_name: str) -> None:
        """Answer ``403`` to every push to ``repo_name`` (fetch still works)."""
        self._deny_push.add(repo_name)

    def add_pre_receive_hook(self, repo_name: str, script: str) -> None:
        """Install an executable ``pre-receive`` hook (a shell script) in ``repo_name``."""
        hook = self.root / repo_name / "hooks" / "pre-receive"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(script)
        hook.chmod(0o755)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self._backend.close()

    def _authorized(self, header: str) -> str | bool:
        """The request's username if its token is right, else False."""
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            username, _, password = base64.b64decode(encoded).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        if not username or not hmac.compare_digest(password.encode(), self.token.encode()):
            return False
        self.usernames.append(username)
        return username

    def _wsgi(self, environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        username = self._authorized(environ.get("HTTP_AUTHORIZATION", ""))
        if not username:
            return _plain(
                start_response, "401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')]
            )
        path, query = environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
        is_push = path.endswith("/git-receive-pack") or "service=git-receive-pack" in query
        if is_push and path.strip("/").split("/")[0] in self._deny_push:
            return _plain(start_response, "403 Forbidden", [])
        environ["REMOTE_USER"] = username
        if not self.threaded:
            return self._app(environ, start_response)
        return self._closing(self._app(environ, start_response))

    def _closing(self, body: Iterable[bytes]) -> Iterator[bytes]:
        """``body``, then this thread's repositories closed (each request its own thread)."""
        try:
            yield from body
        finally:
            self._backend.close_thread()


def _plain(
    start_response: _StartResponse, status: str, headers: list[tuple[str, str]]
) -> list[bytes]:
    body = status.encode() + b"\n"
    start_response(
        status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *headers]
    )
    return [body]


@pytest.fixture
def git_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHTTPServer]:
    """A fresh smart-HTTP git server on 127.0.0.1 (random port) with its own token.

    Proxy variables are cleared for the test, so requests go straight to loopback.
    """
    server = GitHTTPServer(tmp_path_factory.mktemp("git-http"), token=secrets.token_urlsafe(24))
    yield from serving(server)


def serving(server: GitHTTPServer) -> Iterator[GitHTTPServer]:
    """Run ``server`` for a test, with proxy variables cleared so requests go straight to
    loopback."""
    with pytest.MonkeyPatch.context() as env:
        for name in _PROXY_ENV:
            env.delenv(name, raising=False)
        env.setenv("NO_PROXY", "127.0.0.1,localhost")
        env.setenv("no_proxy", "127.0.0.1,localhost")
        server.start()
        try:
            yield server
        finally:
            server.stop()


def counted_requests(server: Any, by_service: bool = False) -> list[str]:
    """Every request ``server`` (this module's or :mod:`tests.gitbackend`'s) answers from
    now on: ``METHOD path-tail?query`` (``GET info/refs?service=git-upload-pack``), or
    with ``by_service`` ``METHOD service`` (``GET git-upload-pack``)."""
    seen: list[str] = []
    app = server._app

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        query = environ.get("QUERY_STRING", "")
        if by_service:
            service = query.removeprefix("service=")
            tail = service or environ.get("PATH_INFO", "").rsplit("/", 1)[-1]
            seen.append(f"{environ.get('REQUEST_METHOD')} {tail}")
        else:
            path = environ.get("PATH_INFO", "").rsplit("/", 2)
            tail = "/".join(path[-2:]) if path[-2] == "info" else path[-1]
            seen.append(f"{environ.get('REQUEST_METHOD')} {tail}" + (f"?{query}" if query else ""))
        return app(environ, start_response)

    server._app = counting
    return seen
