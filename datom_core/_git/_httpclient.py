"""dulwich's HTTP(S) git client as the transport uses it: failed requests closed before
they raise, servers whose objects are not named by SHA-1 refused at their first
advertisement, a server certificate refused named as such (:class:`UntrustedCertificate`),
a 401 to a client given no credentials answered with git's credential helpers' (as git
does: :mod:`._credentials`), a server that says "later" (429, 503; a gateway's 502 or 504
to a request that changes nothing) asked again when it says, and every advertisement kept (the accelerator
:mod:`._fast._advert`). How the server is reached (trust, proxy) is git's choice, made in
:mod:`._httpsettings`."""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import urllib3.exceptions
from dulwich.client import (
    HTTPProxyUnauthorized,
    HTTPUnauthorized,
    Urllib3HttpGitClient,
    extract_object_format_from_capabilities,
)
from dulwich.errors import GitProtocolError, NotGitRepository

from .._retryafter import retry_after_seconds
from ._credentials import CredentialHelpers
from ._fast._advert import RefsMemo
from ._remote import GitCredentials

__all__ = [
    "HelperCredentialsRefused",
    "HttpClient",
    "ObjectFormatError",
    "ServerBusy",
    "TlsFailed",
    "Unreachable",
    "UntrustedCertificate",
]

BUSY_PATIENCE = 120.0  # seconds a request a server answers "later" is asked again
# Refused before it was served (rate limited, unavailable): the same request again, later.
_LATER = frozenset({429, 503})
# A gateway's failure: the request may have been served, so only one that changes nothing
# is sent again (a push's outcome is the remote's to say: _project/_outcome).
_LATER_IF_READ = _LATER | {502, 504}


class ObjectFormatError(Exception):
    """A server advertised object names other than SHA-1 (``args[0]``: its format)."""


class UntrustedCertificate(Exception):
    """The server's TLS certificate failed verification, in the handshake, before any
    request was sent (``args[0]``: why)."""


class TlsFailed(Exception):
    """The TLS handshake failed other than on the server's certificate (``args[0]``: what
    the TLS library said): a server that asks for a client certificate this client does
    not present (or one it does not accept) closes it so."""


class Unreachable(Exception):
    """No connection to the server could be made (``args[0]``: why, in words): its name
    is not known, nothing answers at its address, or no answer came in time. Nothing
    was sent; urllib3 has already tried again (:mod:`._httpsettings`)."""


class ServerBusy(GitProtocolError):
    """The server still said "later" (``status``: 429, 502, 503, 504) when the request was
    given up, after ``tries`` sends over ``waited`` seconds; ``retry_after``: the wait it
    last asked for, if it named one."""

    def __init__(self, status: int, url: str, tries: int, waited: float, retry_after: str | None):
        super().__init__(f"unexpected http resp {status} for {url}")
        self.status, self.tries, self.waited = status, tries, waited
        self.retry_after = retry_after


class HelperCredentialsRefused(HTTPUnauthorized):
    """The server refused the credentials git's credential helpers gave (401)."""


class HttpClient(Urllib3HttpGitClient):
    """dulwich's HTTP client (see the module docstring). dulwich raises on 401/403/404
    without closing the (unread, streamed) response, which leaks the connection's socket;
    its own status mapping is reproduced here. ``memo`` keeps each advertisement, and
    answers a push's when the push armed it. ``helpers``: asked once, on the first 401 to
    a client given no credentials (``filled``: what they gave)."""

    def __init__(self, *args: Any, helpers: CredentialHelpers | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo = RefsMemo()
        self.helpers = helpers if self._auth_header is None else None
        self.filled: GitCredentials | None = None
        self._asked, self._approve = False, False

    def secrets(self) -> tuple[str | None, ...]:
        """Every token this client sends, for scrubbing from a message."""
        password: str | None = self._password
        return password, self.filled.token if self.filled else None

    def _discover_references(
        self,
        service: bytes,
        base_url: str,
        protocol_version: int | None = None,
        ref_prefix: Sequence[bytes] | None = None,
    ) -> Any:
        primed = self.memo.primed(service)
        if primed is not None:
            self.protocol_version = 0  # what a push speaks (dulwich sets it so too)
            return primed
        found = super()._discover_references(service, base_url, protocol_version, ref_prefix)
        # Every fetch, push and listing starts with an advertisement: a SHA-256 repository
        # says so there (object-format=sha256), empty or not, before anything is sent.
        named = extract_object_format_from_capabilities(found[1])
        if named not in (None, "sha1"):
            raise ObjectFormatError(named)
        self.memo.saw(service, found)
        return found

    def _http_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        data: bytes | Iterator[bytes] | None = None,
        raise_for_status: bool = True,
    ) -> tuple[Any, Callable[[int], bytes]]:
        started = time.monotonic()
        deadline, tries = started + BUSY_PATIENCE, 0
        while True:
            resp, read = self._send(url, headers, data)
            wait = _later(resp, url, data, tries, deadline)
            if wait is None:
                break
            resp.close()
            time.sleep(wait)
            tries += 1
        if resp.status == 401 and self._ask_helpers(data):
            resp.close()
            return self._http_request(url, headers, data, raise_for_status)
        if resp.status == 200 and self._approve:
            self._approve = False
            if self.helpers is not None and self.filled is not None:
                self.helpers.approve(self.filled)
        if not raise_for_status or resp.status == 200:
            return resp, read
        resp.close()
        status, header = resp.status, resp.headers.get
        if status == 404:
            raise NotGitRepository(f"no repository at {url}")
        if status == 401 and self.filled is not None:
            raise HelperCredentialsRefused(header("WWW-Authenticate"), url)
        if status in (401, 407):
            error = HTTPUnauthorized if status == 401 else HTTPProxyUnauthorized
            raise error(header("WWW-Authenticate" if status == 401 else "Proxy-Authenticate"), url)
        if status in _LATER_IF_READ:
            waited = time.monotonic() - started
            raise ServerBusy(status, url, tries + 1, waited, header("Retry-After"))
        raise GitProtocolError(f"unexpected http resp {status} for {url}")

    def _send(
        self, url: str, headers: dict[str, str] | None, data: bytes | Iterator[bytes] | None
    ) -> tuple[Any, Callable[[int], bytes]]:
        try:
            return super()._http_request(url, headers, data, raise_for_status=False)
        except GitProtocolError as e:
            reason = getattr(e.__cause__, "reason", None)
            refused = reason.args[0] if isinstance(reason, urllib3.exceptions.SSLError) else None
            if isinstance(refused, ssl.SSLCertVerificationError):
                raise UntrustedCertificate(refused.verify_message or str(refused)) from e
            if isinstance(reason, urllib3.exceptions.SSLError):
                raise TlsFailed(str(refused or reason)) from e
            if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
                raise Unreachable(_unreachable(reason, url)) from e
            raise

    def _ask_helpers(self, data: object) -> bool:
        """Whether git's credential helpers gave credentials to send the request again
        with (a streamed body cannot be sent again: the next request carries them). They
        are asked on a 401, unless to credentials they just gave (``_approve``: not yet
        confirmed) or after having none; again to ones that worked before (they expired:
        a helper may hold new ones)."""
        if self.helpers is None or self._approve or (self._asked and self.filled is None):
            self._approve = False  # refused: the next 401 asks again
            return False
        self._asked, stale = True, self.filled
        creds = self.helpers.fill()
        if creds is None or creds == stale:
            return False
        self.filled, self._approve = creds, True
        self._auth_header = urllib3.make_headers(basic_auth=f"{creds.username}:{creds.token}")[
            "authorization"
        ]
        self._auth_origin = self._origin(self._base_url)
        return data is None or isinstance(data, bytes)


def _unreachable(reason: urllib3.exceptions.ConnectTimeoutError, url: str) -> str:
    parts = urllib3.util.parse_url(url)
    where = f"{parts.host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return f"the host name {parts.host!r} is not known (DNS)"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        cause = reason.__cause__ or reason.__context__
        why = getattr(cause, "strerror", None) or "the connection failed"
        return f"nothing answers at {where} ({why})"
    return f"{where} did not answer a connection in time"


def _later(
    resp: Any, url: str, data: bytes | Iterator[bytes] | None, tries: int, deadline: float
) -> float | None:
    """The seconds to wait before sending again a request the server answered "later"
    (its ``Retry-After``, at least a growing wait: a server saying 0 is not asked in a
    tight loop); None to answer now: another status, a body that cannot be sent again, or
    a wait past ``deadline``."""
    changes = data is not None and url.rstrip("/").endswith("git-receive-pack")
    if resp.status not in (_LATER if changes else _LATER_IF_READ):
        return None
    if data is not None and not isinstance(data, bytes):
        return None
    growing = random.uniform(0.5, 1.0) * min(0.5 * 2**tries, 8.0)
    wait = max(retry_after_seconds(resp.headers.get("Retry-After")) or 0.0, growing)
    return wait if time.monotonic() + wait <= deadline else None
