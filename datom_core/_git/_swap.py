"""Replacing a file by a complete new one, without ext4's flush on rename (private to the
git layer).

``rename(new, old)`` over an existing file makes ext4 (``auto_da_alloc``, on by default)
start writing the new file's data out before the call returns, a heuristic for programs
that replace files without ``fsync``. For the clone's working-tree files and its index
(large for a big project: a 3,000-table manifest, a 6,000-entry index) that costs
milliseconds per write on a busy disk, for files that only mirror objects git already holds
(a power cut is repaired from HEAD, see ``_repo``). An atomic exchange of the two names
(``renameat2(RENAME_EXCHANGE)``, Linux) is not subject to it: the final name then holds the
new bytes, exactly as after a rename, and the temporary name the old ones, which are
unlinked. Elsewhere, or where a filesystem refuses the exchange, it is a plain
:func:`os.replace`.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import Any

__all__ = ["replace_file"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                errno.EPERM}  # fmt: skip


def _load() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2  # glibc >= 2.28
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2: Any = _load()


def _exchange(tmp: Path, final: Path) -> bool:
    """Swap the two names; False where that is not possible (``final`` missing, no
    support here), so the caller renames instead."""
    global _renameat2
    if _renameat2 is None:
        return False
    a, b = os.fsencode(tmp), os.fsencode(final)
    if _renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) == 0:
        return True
    if ctypes.get_errno() in _UNSUPPORTED:
        _renameat2 = None  # this filesystem (or kernel) does not exchange: stop asking
    return False


def replace_file(tmp: Path, final: Path) -> None:
    """``os.replace(tmp, final)`` for a regular file ``tmp`` (see the module docstring).

    Atomic for readers of ``final`` either way. A process killed between the exchange and
    the unlink leaves the old bytes under the temporary name, as a kill before the rename
    leaves the new ones.
    """
    if not _exchange(tmp, final):
        os.replace(tmp, final)
        return
    try:
        os.unlink(tmp)
    except IsADirectoryError:  # ``final`` was a directory: put it back, fail as a rename does
        _exchange(tmp, final)
        os.replace(tmp, final)
