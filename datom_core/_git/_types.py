"""Who wrote a commit, and what a commit says (no repository access here)."""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime

from dulwich.config import Config, StackedConfig
from dulwich.objects import Commit

from .._errors import InvalidNameError

__all__ = ["Author", "CommitInfo", "author_from", "commit_info"]


@dataclass(frozen=True)
class Author:
    """A git identity; :meth:`default` finds the configured one."""

    name: str
    email: str

    def __post_init__(self) -> None:
        for value in (self.name, self.email):
            if any(c in value for c in "<>\n\0"):
                raise InvalidNameError(f"Invalid git author {value!r}: no '<', '>' or newline.")

    @property
    def identity(self) -> str:
        """``Name <email>``, as git records it."""
        return f"{self.name} <{self.email}>"

    def __str__(self) -> str:
        return self.identity

    @classmethod
    def default(cls) -> Author:
        """``DATOM_AUTHOR_NAME``/``DATOM_AUTHOR_EMAIL``, else git's ``user.name``/``user.email``,
        else ``<login>@<hostname>``."""
        return author_from(StackedConfig.default())


@dataclass(frozen=True)
class CommitInfo:
    """One commit of the metadata history (``timestamp`` is the author time, in UTC)."""

    id: str
    message: str
    author: Author
    timestamp: datetime


def author_from(config: Config) -> Author:
    name = os.environ.get("DATOM_AUTHOR_NAME") or _config_value(config, b"name")
    email = os.environ.get("DATOM_AUTHOR_EMAIL") or _config_value(config, b"email")
    if not name or not email:
        login = _login()
        host = socket.gethostname() or "localhost"
        name = name or login
        email = email or f"{login}@{host}"
    return Author(name=name, email=email)


def _config_value(config: Config, key: bytes) -> str | None:
    try:
        value = config.get((b"user",), key)
    except KeyError:
        return None
    return value.decode("utf-8", "replace").strip() or None


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no USER/LOGNAME and no passwd entry (some containers)
        return "datom"


def commit_info(c: Commit) -> CommitInfo:
    name, _, email = c.author.decode("utf-8", "replace").rpartition(" <")
    return CommitInfo(
        id=c.id.decode(),
        message=c.message.decode("utf-8", "replace").removesuffix("\n"),
        author=Author(name=name, email=email.removesuffix(">")),
        timestamp=datetime.fromtimestamp(c.author_time, UTC),
    )
