"""What the compaction accelerator (``datom_core/_git/_fast/_compact.py``) pays on a long
run: two clones writing in turn, each write fetching the other's commit first.

Over HTTP (git's own ``git http-backend`` on loopback, as ``tests/gitbackend.py`` serves
it: it packs and ``gc --auto``\\ s its side itself) each fetch adds a small pack to the
writing clone; through a local remote each push adds loose objects to the remote. Two
projects run side by side in one process, their writes interleaved (the machine's load
falls on both alike): one accelerated, one with ``DATOM_PLAIN=compact`` (its plain path:
a clone's loose objects packed by dulwich, packs never merged, a local remote left as it
is). Prints, per remote, the mean time of the last writes in each mode, the ratio
plain / fast (the accelerator pays its way at >= 1.2), and what the repositories hold at
the end (packs, loose objects, bytes on disk), and for the local remote the time of a
colleague's ``git clone`` of it.

``--writes`` sets the run's length (default 600), ``--last`` how many final writes are
timed (default 100), ``--only http`` / ``--only local`` one remote.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import datom_core as dc

REPO_ROOT = Path(__file__).resolve().parents[1]
MODES = {"fast": "0", "plain": "compact"}


def _table(i: int) -> pa.Table:
    return pa.table(
        {"USUBJID": [f"S{i}-{k}" for k in range(5)], "AVAL": [float(i + k) for k in range(5)]}
    )


def _footprint(folder: Path) -> tuple[int, int, int]:
    """(packs, loose objects, bytes on disk) of the objects under ``folder``."""
    packs = loose = size = 0
    for path in folder.rglob("*"):
        if path.is_file():
            size += path.stat().st_blocks * 512
            packs += path.suffix == ".pack"
            loose += len(path.parent.name) == 2 and path.parent.parent.name == "objects"
    return packs, loose, size


def _git_clone(remote: Path, into: Path) -> float:
    """Seconds ``git clone --no-local`` of ``remote`` takes (git's own transport: every
    object read, as over the network)."""
    start = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--no-local", str(remote), str(into)], check=True)
    return time.perf_counter() - start


def _pair(root: Path, url: str | None) -> tuple[dc.Connection, dc.Connection, Path]:
    """Two clones of one new project (``url``: its remote; None: an embedded local one),
    and the remote's objects folder (None over HTTP)."""
    store = dc.LocalStore(root / "store")
    a = dc.init_repo(root / "a", "BENCH", store, url)
    remote = url or a.repo.remote_url
    b = dc.clone(remote, root / "b", store=store)
    return a, b, Path(remote) / "objects" if url is None else root / "none"


def run(kind: str, root: Path, writes: int, last: int) -> None:
    server = None
    if kind == "http":
        sys.path.insert(0, str(REPO_ROOT))
        from tests.gitbackend import GitBackendServer

        (root / "served").mkdir(parents=True)
        server = GitBackendServer(root / "served", secrets.token_urlsafe(24))
        server.start()
        os.environ["DATOM_GIT_TOKEN"] = server.token
    try:
        pairs = {}
        for mode in MODES:
            url = None
            if server is not None:
                server.create_bare(f"proj-{mode}")
                url = server.url_for(f"proj-{mode}")
            os.environ["DATOM_PLAIN"] = MODES[mode]
            pairs[mode] = _pair(root / mode, url)
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for i in range(writes):
            for mode in MODES if i % 2 else reversed(list(MODES)):  # alternate who goes first
                os.environ["DATOM_PLAIN"] = MODES[mode]
                a, b, _ = pairs[mode]
                conn = b if i % 2 else a
                start = time.perf_counter()
                conn.write(f"t{i % 10}", _table(i))
                times[mode].append(time.perf_counter() - start)
        fast, plain = (statistics.fmean(times[m][-last:]) for m in MODES)
        print(
            f"{kind}: {writes} writes, the last {last}: plain / fast = {plain / fast:5.2f} "
            f"({fast * 1e3:.1f} vs {plain * 1e3:.1f} ms a write; first {last}: "
            + " vs ".join(f"{statistics.fmean(times[m][:last]) * 1e3:.1f}" for m in MODES)
            + " ms)"
        )
        for mode, (a, b, remote) in pairs.items():
            held = [("clone a", a.repo.path / ".git"), ("clone b", b.repo.path / ".git")]
            held += [("remote", remote)] if remote.exists() else []
            parts = [
                f"{name} {p} packs, {n} loose, {size / 1e6:.1f} MB"
                for name, folder in held
                for p, n, size in [_footprint(folder)]
            ]
            print(f"  {mode:>5}: " + "; ".join(parts))
        if server is None:  # a colleague joining with git: the remote read whole
            took = {m: _git_clone(pairs[m][2].parent, root / f"{m}-git") for m in MODES}
            print(
                f"  a colleague's git clone of the remote: plain / fast = "
                f"{took['plain'] / took['fast']:5.2f} ({took['fast']:.2f} vs {took['plain']:.2f} s)"
            )
    finally:
        os.environ.pop("DATOM_PLAIN", None)
        if server is not None:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=600)
    parser.add_argument("--last", type=int, default=100)
    parser.add_argument("--only", choices=["http", "local"], action="append")
    args = parser.parse_args(argv)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        os.environ.pop(name, None)
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    with tempfile.TemporaryDirectory(prefix="datom-bench-compaction-") as tmp:
        for kind in args.only or ["http", "local"]:
            run(kind, Path(tmp) / kind, args.writes, args.last)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
