"""Opening ``origin``: a local bare repository, or HTTP(S) with a token read at call time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized, Urllib3HttpGitClient
from dulwich.config import Config
from dulwich.errors import GitProtocolError, NotGitRepository

from .._errors import GitError
from ._remote import GitCredentials, is_http_url, local_remote_path, resolve_credentials
from ._transport import HttpTransport, LocalTransport, Transport, remote_errors

__all__ = ["open_transport"]

HTTP_TIMEOUT = 120.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class _HttpClient(Urllib3HttpGitClient):
    """dulwich's HTTP client, closing the response of a failed request before raising.

    dulwich raises on 401/403/404 without closing the (unread, streamed) response, which
    leaks the connection's socket; its own status mapping is reproduced here.
    """

    def _http_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        data: bytes | Iterator[bytes] | None = None,
        raise_for_status: bool = True,
    ) -> tuple[Any, Callable[[int], bytes]]:
        resp, read = super()._http_request(url, headers, data, raise_for_status=False)
        if not raise_for_status or resp.status == 200:
            return resp, read
        status, challenge = resp.status, resp.headers.get("WWW-Authenticate")
        proxy_challenge = resp.headers.get("Proxy-Authenticate")
        resp.close()
        if status == 404:
            raise NotGitRepository(f"no repository at {url}")
        if status == 401:
            raise HTTPUnauthorized(challenge, url)
        if status == 407:
            raise HTTPProxyUnauthorized(proxy_challenge, url)
        raise GitProtocolError(f"unexpected http resp {status} for {url}")


def open_transport(
    url: str, config: Config, explicit: GitCredentials | None, token_env: str
) -> Transport:
    """A transport for ``url``; HTTP credentials are resolved now and live only in it."""
    if not is_http_url(url):
        return LocalTransport(
            url, local_remote_path(url), partial(remote_errors, url, None, token_env)
        )
    creds = resolve_credentials(explicit, token_env)
    host = (urlsplit(url).hostname or "").lower()
    if creds is not None and url.lower().startswith("http://") and host not in _LOOPBACK:
        raise GitError(
            f"Refusing to send the git token over unencrypted HTTP to {url}: use https://."
        )
    client = _HttpClient(
        url,
        config=config,
        username=creds.username if creds else None,
        password=creds.token if creds else None,
        timeout=HTTP_TIMEOUT,
    )
    return HttpTransport(url, client, partial(remote_errors, url, creds, token_env), creds)
