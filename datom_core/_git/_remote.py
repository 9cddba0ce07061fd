"""Remote addresses and credentials for the metadata repository (no dulwich here).

A remote is a local path, a ``file://`` URL or an ``http(s)://`` URL. What datom stores in
``.git/config`` never carries credentials (:func:`normalize_remote`); a token is read at
call time (:func:`resolve_credentials`) and handed to the HTTP client only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .._errors import GitError

__all__ = [
    "DEFAULT_TOKEN_ENV",
    "DEFAULT_USERNAME",
    "USERNAME_ENV",
    "GitCredentials",
    "check_supported",
    "is_http_url",
    "local_remote_path",
    "normalize_remote",
    "resolve_credentials",
    "scrub",
]

DEFAULT_TOKEN_ENV = "DATOM_GIT_TOKEN"
USERNAME_ENV = "DATOM_GIT_USERNAME"
# GitHub, GitLab and Gitea all accept a token as the password with any non-empty username;
# this is the name GitHub documents for installation tokens.
DEFAULT_USERNAME = "x-access-token"

_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


@dataclass(frozen=True)
class GitCredentials:
    """An HTTPS token for the metadata remote, kept in memory only.

    The token is sent as the basic-auth password; it never appears in ``repr``, in
    ``.git/config``, in logs or in error messages.
    """

    token: str = field(repr=False)
    username: str = DEFAULT_USERNAME

    def __post_init__(self) -> None:
        if not self.token:
            raise GitError("GitCredentials needs a non-empty token.")
        if ":" in self.username or not self.username:
            raise GitError("GitCredentials.username must be non-empty and contain no ':'.")


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an ``http://`` or ``https://`` address."""
    return urlsplit(url).scheme.lower() in ("http", "https")


def normalize_remote(remote: str | os.PathLike[str]) -> tuple[str, GitCredentials | None]:
    """Return the credential-free remote to store, and any credentials found in it.

    Local paths become absolute paths (a relative path would change meaning with the
    working directory). ``user:token@`` in an HTTPS URL is removed from the stored URL and
    returned as in-memory :class:`GitCredentials`, so a clone from such a URL works once
    without the token ever being written to ``.git/config``. Other schemes (ssh, git) are
    refused: datom only supports and tests local, ``file://`` and HTTP(S) remotes.
    """
    text = os.fspath(remote)
    if not text:
        raise GitError("The git remote is empty: give a local path, file:// or https:// URL.")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if "://" not in text:
        if _SCP_LIKE.match(text):
            raise GitError(
                f"Unsupported git remote {scrub(text)!r}: ssh remotes are not supported; use "
                "a local path, a file:// URL or an https:// URL (token in DATOM_GIT_TOKEN)."
            )
        return str(Path(text).expanduser().resolve()), None
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise GitError(f"Unsupported file URL {scrub(text)!r}: only file:///absolute/path.")
        return text, None
    if scheme in ("http", "https"):
        host = parts.hostname or ""
        if not host:
            raise GitError(f"The git remote {scrub(text)!r} has no host name.")
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc = f"{netloc}:{parts.port}"
        clean = urlunsplit((scheme, netloc, parts.path, parts.query, ""))
        creds = None
        if parts.password:
            creds = GitCredentials(
                token=unquote(parts.password),
                username=unquote(parts.username or "") or DEFAULT_USERNAME,
            )
        return clean, creds
    raise GitError(
        f"Unsupported git remote {scrub(text)!r}: use a local path, a file:// URL or an "
        "https:// URL (with the token in DATOM_GIT_TOKEN)."
    )


def check_supported(url: str) -> None:
    """:class:`GitError` for an ``origin`` datom does not speak (ssh, ``git://``: a clone
    git made), naming the HTTPS address of the same repository where one is evident."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() in ("file", "http", "https"):
            return
        host, path = parts.hostname, parts.path
    elif _SCP_LIKE.match(url):
        host, path = url.split("@", 1)[1].split(":", 1)
    else:
        return  # a local path
    https = f"https://{host}/{path.lstrip('/')}" if host and path else "https://..."
    raise GitError(
        f"The git remote {scrub(url)!r} is not one datom speaks (ssh and git:// are not "
        "supported): nothing was changed. Point origin at the same repository over HTTPS "
        f"(git remote set-url origin {https}) with a token in DATOM_GIT_TOKEN, or use a "
        "local path or file:// URL."
    )


def local_remote_path(url: str) -> str:
    """The filesystem path of a local-path or ``file://`` remote."""
    if url.lower().startswith("file://"):
        return unquote(urlsplit(url).path)
    return url


def resolve_credentials(
    explicit: GitCredentials | None, token_env: str | None
) -> GitCredentials | None:
    """Explicit credentials win; else the token in ``token_env`` (read now, never cached)."""
    if explicit is not None:
        return explicit
    token = os.environ.get(token_env) if token_env else None
    if not token:
        return None
    username = os.environ.get(USERNAME_ENV) or DEFAULT_USERNAME
    return GitCredentials(token=token, username=username)


def scrub(text: str, *secrets: str | None) -> str:
    """Remove every secret and any ``scheme://userinfo@`` from ``text``."""
    for secret in secrets:
        if secret:
            # A token can reach a message URL-encoded as well as verbatim.
            for form in {secret, quote(secret, safe="")}:
                text = text.replace(form, "***")
    return _USERINFO.sub(r"\1***@", text)
