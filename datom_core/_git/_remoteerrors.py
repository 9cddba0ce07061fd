"""A remote's failures as datom's :class:`GitError`, each with its remedy and with every
token scrubbed out: dulwich's errors, the HTTP statuses a server (or the gateway, proxy
or limiter in front of it) answers, and the local filesystem's."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.file import FileLocked
from dulwich.objects import valid_hexsha

from .._errors import DatomError, GitError
from . import _httpclient
from ._httpclient import (
    HelperCredentialsRefused,
    ObjectFormatError,
    ServerBusy,
    TlsFailed,
    Unreachable,
    UntrustedCertificate,
)
from ._remote import USERNAME_ENV, GitCredentials, scrub

__all__ = ["remote_errors"]


@contextmanager
def remote_errors(
    url: str,
    credentials: GitCredentials | None,
    token_env: str,
    action: str,
    *,
    rewritten: bool = False,
    helped: Callable[[], GitCredentials | None] = lambda: None,
) -> Iterator[None]:
    """Translate transport failures into :class:`GitError` with every token scrubbed out
    (``credentials``: those sent, from the URL git rewrote origin to when ``rewritten``;
    ``helped``: what git's credential helpers gave, if asked)."""
    where = f"{action} {url}"

    def fail(message: str) -> GitError:
        helper = helped()
        sent = credentials.token if credentials else None
        return GitError(scrub(message, sent, helper.token if helper else None))

    try:
        yield
    except DatomError:
        raise
    except ObjectFormatError as e:
        raise fail(
            f"Cannot {where}: it uses {e.args[0]} object names (git init "
            f"--object-format={e.args[0]}); datom supports SHA-1 repositories only, and nothing "
            "was changed. Use a remote made by git init --bare (the default "
            "--object-format=sha1)."
        ) from None
    except TlsFailed as e:
        raise fail(
            f"Cannot {where}: the TLS handshake failed ({e}); the server took no request. A server "
            "that asks for a client certificate (mutual TLS) ends it so when none it accepts is "
            "presented: point git at yours (git config --global http.sslCert /path/cert.pem "
            "and http.sslKey /path/key.pem, or GIT_SSL_CERT and GIT_SSL_KEY)."
        ) from e
    except Unreachable as e:
        raise fail(
            f"Cannot {where}: {e}; nothing was sent. Check the remote's address (git remote "
            "-v in the clone) and the network to it (a VPN; a proxy: HTTPS_PROXY)."
        ) from e
    except UntrustedCertificate as e:
        raise fail(
            f"Cannot {where}: its TLS certificate is not trusted ({e}); nothing was sent. If "
            "your organisation's own certificate authority signs it, point git at that "
            "authority's certificate (git config --global http.sslCAInfo /path/to/ca.pem, "
            "or the environment variable GIT_SSL_CAINFO), then retry."
        ) from e
    except HelperCredentialsRefused as e:
        raise fail(
            f"Authentication failed trying to {where} (HTTP 401): the credentials git's "
            "credential helper gave for it were refused. Renew them as you would for git "
            "(log in again with your git host's tool, or git credential reject them and store "
            f"a new token), or set {token_env}."
        ) from e
    except HTTPUnauthorized as e:
        if credentials is None:
            hint = (
                f"no token was sent: set {token_env} to a token with access to this repository "
                f"(username from {USERNAME_ENV}, default x-access-token), or store one in a "
                "git credential helper, as for git (git credential fill has none for it)"
            )
        elif rewritten:
            hint = "the token in the address git's url.<base>.insteadOf gives it was refused"
        else:
            hint = (
                f"the token was refused; check {token_env} (a token with access to this "
                f"repository; username from {USERNAME_ENV}, default x-access-token)"
            )
        raise fail(f"Authentication failed trying to {where} (HTTP 401): {hint}.") from e
    except HTTPProxyUnauthorized as e:
        raise fail(f"The HTTP proxy refused to {where} (HTTP 407): check its credentials.") from e
    except NotGitRepository as e:
        raise fail(f"Cannot {where}: no git repository there. Check the remote path/URL.") from e
    except ServerBusy as e:
        raise fail(f"Cannot {where}: {_busy(e)}") from e
    except GitProtocolError as e:
        detail = " ".join(str(e).split())
        if "http resp 403" in detail:
            detail = (
                f"the server refused access (HTTP 403): the token in {token_env} "
                "lacks permission, or the server forbids this operation"
            )
        elif "http resp 413" in detail:  # what a server's front says of a big push
            raise fail(
                f"Cannot {where}: the server refused the request as too large (HTTP 413): a "
                "limit on request bodies in front of it (nginx's client_max_body_size, a "
                "proxy's) is below what this sends. Raise it there, then retry."
            ) from e
        elif "http resp 411" in detail:
            raise fail(
                f"Cannot {where}: the server refuses a request body sent in chunks (HTTP 411), "
                "as one larger than git's http.postBuffer is sent. Raise it (git config "
                "--global http.postBuffer 524288000), then retry."
            ) from e
        raise fail(f"Cannot {where}: {detail}. Check the remote and your access to it.") from e
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise fail(
                f"Cannot {where}: the disk holding it is full ({e.strerror}). Free space "
                "there, then retry; nothing was recorded by this attempt."
            ) from e
        raise fail(f"Cannot {where}: {e.strerror or e}. Check the remote path/URL.") from e
    except FileLocked as e:
        raise fail(f"Cannot {where}: a ref is locked by another git process; retry.") from e
    except ValueError as e:  # dulwich's word for a malformed server reply
        raise fail(f"Cannot {where}: unexpected reply ({e}). Is it a git server?") from e
    except KeyError as e:
        sha = _object_id(e)
        if sha is None:
            raise
        raise fail(
            f"Cannot {where}: the repository lacks the git object {sha}, which its branch "
            "needs. Objects were removed from it while a push was under way (git gc "
            "--prune=now does that; git warns against pruning while others write), or it is "
            "damaged. Run git fsck there to list what is missing; restore the objects from a "
            "clone that holds them, or point the branch back at its last complete commit "
            "(git update-ref); then retry."
        ) from e


def _busy(e: ServerBusy) -> str:
    """What a server that kept saying "later" said, and how long it was given."""
    said = {429: "the server limits the rate of requests", 503: "the server is unavailable"}
    text = f"{said.get(e.status, 'a gateway had no answer from the server')} (HTTP {e.status})"
    if e.tries > 1:
        text += f", and still said so after {e.tries} tries over {e.waited:.0f} s"
    if e.retry_after is not None:
        text += f"; it asked for a wait of {e.retry_after} s"
        if e.tries == 1:
            text += f", past what datom waits ({_httpclient.BUSY_PATIENCE:.0f} s)"
    return text + ". Retry later; many writers at once reach a hosted server's rate limit sooner."


def _object_id(e: KeyError) -> str | None:
    """The object id a dulwich lookup's :class:`KeyError` names, None if it names none."""
    key = e.args[0] if e.args else None
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    return text if isinstance(text, str) and valid_hexsha(text) else None
