"""The paths two commits differ in, looked for only where they can (an accelerator of the
git layer; switched off by ``DATOM_PLAIN=1`` or ``DATOM_PLAIN=walk``, see
:mod:`datom_core._plain`).

Contract: :func:`changed_paths` gives exactly the files and symbolic links dulwich's
``tree_changes`` reports between two commits, with their new modes where not a plain
file's (``tests/core/test_git_walk.py`` compares the two). Plain path (beside it, in
:mod:`.._diff`): ``tree_changes``.

A tree this process made, or read as an edit of one it held (:mod:`._tree`), says which
names it changed: comparing two root trees then costs those names, not one per table.
Trees made elsewhere are compared entry by entry (as sets of items, in C), and only the
folders whose entries differ are looked into. Measured (3,000 tables, two commits one
table apart): 0.03 ms for a tree made here, 4.9 ms read cold, against 15 ms for
``tree_changes``; asked on every write that lands on another writer's commit and for
every commit the path history (:mod:`._history`) indexes.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, Tree

from .._objects import tree_of
from .._read import load
from ._tree import entries_of, made_from

__all__ = ["changed_paths", "commits_between", "root_tree"]

_PLAIN = 0o100644
_CHAIN_MAX = 4  # trees made from one another followed back before comparing entries


def root_tree(store: BaseObjectStore, commit: bytes | None) -> bytes | None:
    """The root tree of ``commit`` (None for no commit)."""
    if commit is None:
        return None
    obj = load(store, commit)
    return obj.tree if isinstance(obj, Commit) else None


def changed_paths(
    store: BaseObjectStore,
    old: bytes | None,
    new: bytes | None,
    modes: dict[bytes, int] | None = None,
) -> dict[bytes, bytes | None]:
    """``path -> blob id`` (None: removed) for every file and symbolic link differing
    between two commits; ``modes`` (when given) gets ``path -> new mode`` for those whose
    old or new mode is not a plain file's (an executable, a symbolic link)."""
    out: dict[bytes, bytes | None] = {}
    _diff(store, root_tree(store, old), root_tree(store, new), b"", out, modes)
    return out


def _diff(
    store: BaseObjectStore,
    old: bytes | None,
    new: bytes | None,
    prefix: bytes,
    out: dict[bytes, bytes | None],
    modes: dict[bytes, int] | None,
) -> None:
    if old == new:
        return
    a = tree_of(store, old) if old is not None else None
    b = tree_of(store, new) if new is not None else None
    for name in _names_between(old, new, a, b):
        was = a[name] if a is not None and name in a else None
        now = b[name] if b is not None and name in b else None
        if was == now:
            continue
        path = prefix + name
        was_dir = was is not None and stat.S_ISDIR(was[0])
        now_dir = now is not None and stat.S_ISDIR(now[0])
        if was_dir or now_dir:
            old_sub = was[1] if was is not None and was_dir else None
            new_sub = now[1] if now is not None and now_dir else None
            _diff(store, old_sub, new_sub, path + b"/", out, modes)
        if was is not None and not was_dir:
            out[path] = None
        if now is not None and (stat.S_ISREG(now[0]) or stat.S_ISLNK(now[0])):
            out[path] = now[1]
        if modes is not None and now is not None and out.get(path) is not None:
            was_mode = was[0] if was is not None and not was_dir else _PLAIN
            if now[0] != _PLAIN or was_mode != _PLAIN:
                modes[path] = now[0]


def _names_between(
    old: bytes | None, new: bytes | None, a: Tree | None, b: Tree | None
) -> Iterable[bytes]:
    """The names whose entries may differ between trees ``old`` and ``new``: those that
    changed when ``new`` was made from ``old`` here (followed back a few trees: a write on
    top of another writer's tree read as an edit of this clone's), else every name whose
    entry differs."""
    if old is not None and new is not None:
        names: frozenset[bytes] = frozenset()
        step: bytes = new
        for _ in range(_CHAIN_MAX):
            made = made_from(step)
            if made is None:
                break
            step, names = made[0], names | made[1]
            if step == old:
                return names
    if a is not None and b is not None:  # another writer's: the entries that differ, in C
        return {name for name, _ in entries_of(a).items() ^ entries_of(b).items()}
    return set(a or ()) | set(b or ())


def commits_between(store: BaseObjectStore, head: bytes, base: bytes | None) -> list[bytes] | None:
    """Commits from ``head`` back to (excluding) ``base`` along first parents, oldest first.

    None when ``base`` is not on that line (a merge, or unrelated histories).
    """
    chain, sha = [], head
    while sha != base:
        chain.append(sha)
        obj = load(store, sha)
        if not isinstance(obj, Commit) or len(obj.parents) > 1:
            return None
        if not obj.parents:
            if base is not None:
                return None
            break
        sha = obj.parents[0]
    chain.reverse()
    return chain
