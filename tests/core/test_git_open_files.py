"""A failed operation leaves no pack of a clone or its remote open.

The caller of a failing call often keeps its error (``pytest.raises`` does; so does any
``except ... as e`` stored for later), and the error's traceback holds the handle in a
reference cycle. A pack still open in there is found by the garbage collector at some
later, unrelated point, where dulwich's finalizer warns about it. So an error leaving a
clone's lock closes the handle (it re-opens when used), and a clone or connect that
refuses the project closes the clone it opened.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import datom_core as dc
from datom_core._errors import GitError, NotFoundError, PushRejectedError
from datom_core._git import Author, MetadataRepo, TreeReader
from tests.gitcli import git, needs_git

pytestmark = [
    needs_git,
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc (Linux)"),
]

ME = Author("Ada Lovelace", "ada@example.org")


def held_open(*folders: Path) -> list[str]:
    """The files under ``folders`` this process holds open: a descriptor or a mapping."""
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed since the listing (the listing's own descriptor)
            continue
    with open("/proc/self/maps") as maps:
        names.update(f[5].strip() for f in (line.split(None, 5) for line in maps) if len(f) > 5)
    roots = tuple(str(p.resolve()) + os.sep for p in folders)
    return sorted(n for n in names if n.startswith(roots))


def _packed(tmp_path: Path) -> tuple[Path, MetadataRepo, MetadataRepo]:
    """A remote and two clones of it, each with its objects in a pack, the second behind
    the first by one pushed commit and ahead of it by one of its own."""
    a = MetadataRepo.init(tmp_path / "a", None)
    a.commit_and_push(lambda tree: {f"t{i}/metadata.json": b"{}" for i in range(20)}, "seed", ME)
    b = MetadataRepo.clone(a.remote_url, tmp_path / "b")
    a.commit_and_push(lambda tree: {"x": b"1"}, "x", ME)
    b.commit({"y": b"1"}, "y", ME)
    remote = Path(a.remote_url)
    a.close()
    b.close()
    for path in (remote, tmp_path / "a", tmp_path / "b"):
        git(path, "repack", "-a", "-d", "-q")
    return remote, MetadataRepo.open(tmp_path / "b"), MetadataRepo.open(tmp_path / "a")


def _build_fails(tree: TreeReader) -> dict[str, bytes]:
    absent: dict[bytes | None, bytes] = {}
    return {"z": absent[tree.read("x")]}  # a KeyError, met on origin's tip


_FAILURES: dict[str, tuple[type[Exception], Callable[[MetadataRepo], object]]] = {
    "push rejected": (PushRejectedError, lambda b: b.push()),
    "pull diverged": (GitError, lambda b: b.pull()),
    "a write's build raising": (KeyError, lambda b: b.commit_and_push(_build_fails, "z", ME)),
}


@pytest.mark.parametrize("failure", list(_FAILURES))
def test_an_error_leaving_an_operation_closes_the_clone(tmp_path: Path, failure: str) -> None:
    remote, b, a = _packed(tmp_path)
    a.close()
    assert b.has_unpushed_commits()  # b's packs (and the remote's) are open now
    assert held_open(tmp_path / "b", remote)
    error, call = _FAILURES[failure]
    with pytest.raises(error) as failed:
        call(b)
    assert held_open(tmp_path / "b", remote) == [], failed.value
    assert b.read("y") == b"1" and b.has_unpushed_commits()  # the handle re-opens
    b.close()


def test_a_clone_or_connect_that_refuses_the_project_leaves_nothing_open(
    tmp_path: Path,
) -> None:
    remote, b, a = _packed(tmp_path)  # a git repository, but no datom project
    a.close()
    b.close()
    with pytest.raises(NotFoundError, match="not a datom project") as cloning:
        dc.clone(str(remote), tmp_path / "c")
    assert held_open(tmp_path / "c", remote) == [], cloning.value  # the error kept
    with pytest.raises(NotFoundError, match="not a datom project") as connecting:
        dc.connect(tmp_path / "b")
    assert held_open(tmp_path / "b", remote) == [], connecting.value


def test_a_kept_error_leaves_the_garbage_collector_nothing_to_warn_about(
    tmp_path: Path,
) -> None:
    """The symptom itself: an error kept in a reference cycle, collected later (whether
    the old code warned here depended on the order the collector finalized the cycle in;
    the tests above look at the open files instead)."""
    remote, b, a = _packed(tmp_path)
    a.close()

    def fail(repo: MetadataRepo) -> None:  # the error and this frame hold each other
        with pytest.raises(PushRejectedError):
            repo.push()

    fail(b)
    del b  # only the garbage cycle holds the handle now
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
