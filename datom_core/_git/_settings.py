"""Repository settings datom honours, or refuses clearly before anything changes (private
to the git layer).

* ``extensions.*``: dulwich refuses a repository naming an extension it does not know.
  ``extensions.preciousObjects`` ("never delete an object here") is one datom can honour:
  such a repository is opened, and datom never compacts it (compaction deletes the loose
  objects and packs it merged). Any other unknown extension is refused by name.
* ``extensions.objectFormat``: only SHA-1 repositories are supported; a SHA-256 one is
  refused by name (writing SHA-1 objects into it would corrupt it).
* ``core.splitIndex`` or ``index.sparse`` in a clone: datom patches ``.git/index`` in
  place and cannot patch a split or a sparse one (dulwich cannot read either), so a clone
  using one is refused before a write, naming the command that turns it off (an index
  version 4 is fine: dulwich rewrites it).
* A sparse checkout (``core.sparseCheckout``): a path datom writes outside its patterns
  is left out of the working tree and marked skip-worktree in the index, as git's own
  checkout does (:func:`sparse_filter`).
* A clone's ``config.worktree`` (``extensions.worktreeConfig``, where ``git
  sparse-checkout`` keeps its settings) is read with its ``config`` (``_types.config_stack``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from dulwich.config import Config, ConfigFile
from dulwich.repo import Repo, UnsupportedExtension
from dulwich.sparse_patterns import sparse_path_matcher

from .._errors import GitError
from ._ownership import check_owned
from ._read import beside_git
from ._types import command_settings, user_config_paths

__all__ = [
    "check_object_format",
    "check_index",
    "config_stamp",
    "open_repo",
    "precious",
    "sparse_filter",
]

_HONOURED = {b"preciousobjects", b"noop"}  # extensions datom honours on top of dulwich's


class _Honouring(Repo):
    """A repository whose extensions are all known to datom: dulwich is shown its config
    without the ones datom honours itself (see the module docstring)."""

    def get_config(self) -> ConfigFile:
        config = super().get_config()
        for name, _ in list(config.items((b"extensions",))):
            if name.lower() in _HONOURED:
                config.remove((b"extensions",), name)
        return config


def open_repo(path: str | os.PathLike[str], what: str, remote: bool = False) -> Repo:
    """Open the repository at ``path`` (``what``: how messages name it; ``remote``: a
    local remote), honouring the extensions datom can; :class:`GitError` naming any
    other, or an owner other than the user whom ``safe.directory`` does not trust."""
    try:
        try:
            repo = Repo(os.fspath(path))
        except UnsupportedExtension:
            repo = _Honouring(os.fspath(path))  # names again one it does not honour
    except UnsupportedExtension as e:
        raise GitError(
            f"{what} uses the git extension {e.extension} (extensions.{e.extension} in its "
            "config), which datom does not support: nothing was changed. Use a repository "
            "without it."
        ) from None
    try:
        check_owned(repo, what, remote)  # before anything of its configuration is used
    except GitError:
        repo.close()
        raise
    beside_git(repo.object_store)  # git may repack it while datom reads
    return repo


def config_stamp(r: Repo) -> tuple[object, ...]:
    """What tells that ``r``'s ``config`` (in the common git folder a linked worktree
    shares), its own ``config.worktree`` or the user's or system's configuration changed
    (git reads them for each command; a file they include is not watched), or git's
    environment's settings (``GIT_CONFIG_*``)."""
    return (
        _stamp(Path(r.commondir()) / "config"),
        _stamp(Path(r.controldir()) / "config.worktree"),
        *map(_stamp, user_config_paths()),
        command_settings(),
    )


def _stamp(path: str | Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def precious(r: Repo) -> bool:
    """Whether ``extensions.preciousObjects`` forbids deleting objects in ``r``."""
    try:
        config = ConfigFile.from_path(os.path.join(r.commondir(), "config"))
    except (OSError, ValueError):
        return False
    return _flag(config, b"extensions", b"preciousObjects")


def check_object_format(r: Repo, what: str) -> None:
    """:class:`GitError` unless ``r`` names its objects with SHA-1."""
    try:
        value = r.get_config().get((b"extensions",), b"objectFormat")
    except KeyError:
        return
    if value.strip().lower() not in (b"", b"sha1"):
        raise GitError(
            f"{what} uses {value.decode('utf-8', 'replace')} object names "
            "(extensions.objectFormat): datom supports SHA-1 repositories only, and "
            "nothing was changed. Use a remote made by git init --bare (the default "
            "--object-format=sha1)."
        )


def check_index(r: Repo, clone: Path, config: Config) -> None:
    """:class:`GitError` when the clone's index is, or git would make it, split or sparse
    (``config``: the clone's configuration). One listing of ``.git`` when it is not."""
    if _flag(config, b"core", b"splitIndex") or _links_shared(Path(r.controldir())):
        raise GitError(
            f"The clone {clone} uses a split index (core.splitIndex), which datom does not "
            f"update: nothing was changed. Turn it off (git -C {clone} config "
            f"core.splitIndex false && git -C {clone} update-index --no-split-index), "
            "then retry."
        )
    if _flag(config, b"index", b"sparse"):
        raise GitError(
            f"The clone {clone} uses a sparse index (index.sparse), which datom does not "
            "update: nothing was changed. Keep the sparse checkout with a full index (git "
            f"-C {clone} sparse-checkout reapply --no-sparse-index), then retry."
        )


def sparse_filter(controldir: Path, config: Config) -> Callable[[bytes], bool] | None:
    """Whether a path is in the clone's sparse checkout (``core.sparseCheckout``, the
    patterns of ``info/sparse-checkout``), as git matches them; None: no sparse checkout.
    Cone-mode patterns are a kind of full patterns, and matched as such (git's rule)."""
    if not _flag(config, b"core", b"sparseCheckout"):
        return None
    try:
        lines = (controldir / "info" / "sparse-checkout").read_text("utf-8").splitlines()
    except (OSError, ValueError):
        return None  # git, too, then checks everything out
    matches = sparse_path_matcher(lines, cone=False)
    return lambda path: matches(path.decode("utf-8", "replace"))


def _flag(config: Config, section: bytes, name: bytes) -> bool:
    try:
        return config.get_boolean((section,), name, False) is True
    except (KeyError, ValueError):
        return False


def _links_shared(controldir: Path) -> bool:
    """Whether the index names one of the shared index files beside it (its ``link``
    extension holds the shared index's id)."""
    shared = [p.name[len("sharedindex.") :] for p in controldir.glob("sharedindex.*")]
    if not shared:
        return False
    try:
        data = (controldir / "index").read_bytes()
    except OSError:
        return False
    return b"link" in data and any(bytes.fromhex(h) in data for h in shared if len(h) == 40)
