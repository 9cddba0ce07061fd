"""Who wrote a commit, and what a commit says (no repository access here)."""

from __future__ import annotations

import getpass
import logging
import os
import socket
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime

from dulwich.config import Config, ConfigFile, StackedConfig, get_xdg_config_home_path
from dulwich.objects import Commit
from dulwich.repo import Repo

from .._errors import InvalidNameError

__all__ = [
    "Author",
    "CommitInfo",
    "author_from",
    "commit_info",
    "command_config",
    "command_settings",
    "config_stack",
    "repository_env",
    "user_config",
    "user_config_paths",
]

logger = logging.getLogger("datom_core.git")
_WARNED: set[str] = set()


# What decides where the user's and the system's files are: their paths are found once per
# value of these (config_stamp asks twice per write).
_PATH_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
)
_PATHS: dict[tuple[str | None, ...], tuple[str, ...]] = {}


def user_config_paths() -> tuple[str, ...]:
    """The user's and the system's git configuration files, as git finds them."""
    key = tuple(map(os.environ.get, _PATH_ENV))
    found = _PATHS.get(key)
    if found is None:
        paths = [os.environ["GIT_CONFIG_GLOBAL"]] if "GIT_CONFIG_GLOBAL" in os.environ else [
            os.path.expanduser("~/.gitconfig"), get_xdg_config_home_path("git", "config")
        ]  # fmt: skip
        if "GIT_CONFIG_SYSTEM" in os.environ:
            paths.append(os.environ["GIT_CONFIG_SYSTEM"])
        elif "GIT_CONFIG_NOSYSTEM" not in os.environ:
            paths.append("/etc/gitconfig")
        found = _PATHS[key] = tuple(paths)
    return found


def command_settings() -> tuple[tuple[str | None, str | None], ...]:
    """git's settings from its environment, as given: ``GIT_CONFIG_COUNT`` pairs of
    ``GIT_CONFIG_KEY_<n>`` and ``GIT_CONFIG_VALUE_<n>`` (what ``git -c`` passes on, and
    what CI and containers set); none when the count is absent or not a number."""
    count = os.environ.get("GIT_CONFIG_COUNT", "")
    return tuple(
        (os.environ.get(f"GIT_CONFIG_KEY_{n}"), os.environ.get(f"GIT_CONFIG_VALUE_{n}"))
        for n in range(int(count) if count.isdigit() else 0)
    )


# What git clears before it runs a command in another repository (its ``local_repo_env``:
# receive-pack in a local remote, a command in a submodule): what says where a repository,
# its index, objects and work tree are, and with ``config``, the command's settings.
_REPOSITORY_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
)  # fmt: skip
_CONFIG_ENV = ("GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")


def repository_env(config: bool = False, **given: str) -> dict[str, str]:
    """The environment for a git program run in a repository datom names (a clone's
    credential helper, a local remote's hooks): this process's, without what would point
    it at another repository (datom may run inside another's git hook, which sets
    ``GIT_DIR`` and ``GIT_INDEX_FILE``); ``config``: without the command's settings too,
    as git enters a local remote; ``given`` set over it."""

    def kept(name: str) -> bool:
        if name in _REPOSITORY_ENV:
            return False
        settings = name in _CONFIG_ENV or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
        return not (config and settings)

    return {**{k: v for k, v in os.environ.items() if kept(k)}, **given}


def command_config() -> list[ConfigFile]:
    """:func:`command_settings` as a configuration git reads above every file; a pair that
    is no setting is ignored with a warning."""
    settings = command_settings()
    config = ConfigFile()
    for n, (key, value) in enumerate(settings):
        section, _, name = (key or "").rpartition(".")
        if not section or not name or value is None:
            logger.warning("GIT_CONFIG_KEY_%d/GIT_CONFIG_VALUE_%d is not a setting: ignored", n, n)
            continue
        head, _, sub = section.partition(".")
        where = (head.encode(), sub.encode()) if sub else (head.encode(),)
        config.set(where, name.encode(), os.fsencode(value))
    return [config] if settings else []


def user_config(r: Repo | None = None) -> StackedConfig:
    """The user's and the system's git configuration, as git reads it for the repository
    ``r``: an ``includeIf "gitdir:..."`` (or ``onbranch:``) section applies where it names
    (a work identity, a company's proxy or certificate authority for the repositories
    under a folder). A file that cannot be read (an unreadable HOME, a directory in its
    place) is skipped with a warning, as git does, instead of failing every operation."""
    matchers = r._get_config_condition_matchers() if r is not None else None  # dulwich's
    backends = []
    for path in user_config_paths():
        try:
            backends.append(ConfigFile.from_path(path, condition_matchers=matchers))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:
            if path not in _WARNED:  # once per process and file
                _WARNED.add(path)
                logger.warning("git configuration %s is not readable (%s): ignored", path, e)
    return StackedConfig(backends)


def config_stack(r: Repo) -> StackedConfig:
    """``r.get_config_stack()`` with :func:`user_config`'s tolerance of unreadable files,
    and ``config.worktree`` (``extensions.worktreeConfig``: where ``git sparse-checkout``
    and ``git config --worktree`` write) ahead of the repository's file, as git reads it."""
    own = r.get_config()
    backends = [own, *user_config(r).backends]
    if own.get_boolean((b"extensions",), b"worktreeConfig", False):
        with suppress(OSError, ValueError):  # a linked worktree's own (dulwich reads the main's)
            path = os.path.join(r.controldir(), "config.worktree")
            backends.insert(0, ConfigFile.from_path(path))
    return StackedConfig([*command_config(), *backends], writable=own)  # environment first


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
        """``DATOM_AUTHOR_NAME``/``DATOM_AUTHOR_EMAIL``, else the author git would record
        (:func:`author_from`), else ``<login>@<hostname>``."""
        return author_from(StackedConfig([*command_config(), *user_config().backends]))


@dataclass(frozen=True)
class CommitInfo:
    """One commit of the metadata history (``timestamp`` is the author time, in UTC)."""

    id: str
    message: str
    author: Author
    timestamp: datetime


def author_from(config: Config) -> Author:
    """The author git would record (``GIT_AUTHOR_NAME``/``_EMAIL``, ``author.name``/``email``,
    ``user.name``/``email``, ``EMAIL``), ``DATOM_AUTHOR_NAME``/``_EMAIL`` over it."""
    name = (
        _env("DATOM_AUTHOR_NAME")
        or _env("GIT_AUTHOR_NAME")
        or _config_value(config, b"author", b"name")
        or _config_value(config, b"user", b"name")
    )
    email = (
        _env("DATOM_AUTHOR_EMAIL")
        or _env("GIT_AUTHOR_EMAIL")
        or _config_value(config, b"author", b"email")
        or _config_value(config, b"user", b"email")
        or _env("EMAIL")
    )
    if not name or not email:
        login = _utf8(_login())
        host = socket.gethostname() or "localhost"
        name = name or login
        email = email or f"{login}@{host}"
    return Author(name=name, email=email)


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return _utf8(value) if value else None


def _utf8(text: str) -> str:
    """``text`` as UTF-8 can record it: under a locale that is not UTF-8 (LANG=C) Python
    decodes the environment's UTF-8 bytes into surrogates, which git's UTF-8 commits
    cannot hold; the original bytes are read as UTF-8 again."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "replace")
    return text


def _config_value(config: Config, section: bytes, key: bytes) -> str | None:
    try:
        value = config.get((section,), key)
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
