"""A fresh worker's first write against a warm one, by history length, over a WAN git remote.

A project's history is built fast: a few real writes (``Connection.write``, one per table)
and then commits made directly with dulwich in the bare remote, each shaped like a write's
(the table's ``version_history.json`` grows by one entry, its ``metadata.json`` and the
manifest are redone), spread over ``--tables`` tables, and the remote repacked as a
server's would be. Then, with the git server (dulwich smart HTTP) behind a latency proxy
(``--rtt``, default 50 ms) and the store (``--store``: a local directory, a shared volume's
stand-in, or S3 on moto behind a proxy of the same RTT, what an ephemeral worker of a
cloud executor writes to; ``both`` prints both):

* cold: a fresh worker (an empty home: no clone) clones the remote and writes a new table;
* warm: the same worker writes again.

Printed per history length, each the median of ``--repeat`` fresh workers (the machine's
noise is large beside a few hundred milliseconds): cold and warm seconds, cold / warm
(target <= 2, flat in history length), and the bytes and git requests of the cold worker.
``--quick``: 300 and 1,000 commits. ``--mode``: the fresh worker clones whole, shallow (``dc.clone(shallow=True)``) or both;
``--git-backend``: git's own ``git http-backend`` serves git instead of dulwich's server.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wan_setup import wan_world  # noqa: E402


def _entry(template: dict[str, Any], message: str) -> dict[str, Any]:
    entry = dict(template)
    for key in ("version", "data_sha", "parquet_sha"):
        if key in entry:
            entry[key] = secrets.token_hex(32)
    entry["commit_message"] = message
    return entry


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2) + "\n").encode()


def synthesize(bare: Path, commits: int, tables: list[str]) -> None:
    """Add ``commits`` write-shaped commits on top of the bare repository's ``main``."""
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    repo = Repo(str(bare))
    store = repo.object_store
    tip = repo.refs[b"refs/heads/main"]
    base = store[tip]
    root: Tree = store[base.tree]
    datom_tree: Tree = store[root[b".datom"][1]]
    manifest = json.loads(store[datom_tree[b"manifest.json"][1]].data)
    subtrees: dict[str, Tree] = {t: store[root[t.encode()][1]] for t in tables}
    histories: dict[str, list[Any]] = {}
    metadata: dict[str, dict[str, Any]] = {}
    for t in tables:
        sub: Tree = store[root[t.encode()][1]]
        histories[t] = json.loads(store[sub[b"version_history.json"][1]].data)
        metadata[t] = json.loads(store[sub[b"metadata.json"][1]].data)
    new: list[Any] = []
    parent = tip
    when = int(time.time())
    for k in range(commits):
        t = tables[k % len(tables)]
        message = f"Update {t}"
        entry = _entry(histories[t][0], message)
        histories[t].insert(0, entry)
        meta = dict(metadata[t])
        for key in ("version", "data_sha", "parquet_sha"):
            if key in meta:
                meta[key] = entry[key]
        metadata[t] = meta
        art = manifest["artifacts"][t]
        art["current_version"], art["version_count"] = entry["version"], len(histories[t])
        art["current_data_sha"] = entry.get("data_sha", art.get("current_data_sha"))
        blobs = {
            "history": Blob.from_string(_dump(histories[t])),
            "meta": Blob.from_string(_dump(meta)),
            "manifest": Blob.from_string(_dump(manifest)),
        }
        sub = Tree.from_raw_string(Tree.type_num, subtrees[t].as_raw_string())
        sub.add(b"version_history.json", 0o100644, blobs["history"].id)
        sub.add(b"metadata.json", 0o100644, blobs["meta"].id)
        subtrees[t] = sub
        datom_tree = Tree.from_raw_string(Tree.type_num, datom_tree.as_raw_string())
        datom_tree.add(b"manifest.json", 0o100644, blobs["manifest"].id)
        root = Tree.from_raw_string(Tree.type_num, root.as_raw_string())
        root.add(t.encode(), 0o040000, sub.id)
        root.add(b".datom", 0o040000, datom_tree.id)
        commit = Commit()
        commit.tree, commit.parents = root.id, [parent]
        commit.author = commit.committer = base.author
        commit.author_time = commit.commit_time = when + k
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message.encode() + b"\n"
        new.extend([*blobs.values(), sub, datom_tree, root, commit])
        parent = commit.id
    store.add_objects([(o, None) for o in new])
    repo.refs[b"refs/heads/main"] = parent
    repo.close()
    subprocess.run(["git", "-C", str(bare), "repack", "-adq"], check=True)


def _table(tag: str) -> pa.Table:
    return pa.table({"USUBJID": [f"{tag}-{k}" for k in range(5)], "AVAL": [1.0] * 5})


def build(world: Any, commits: int, n_tables: int, name: str, kind: str = "local") -> Any:
    """A project of ``commits`` commits on the server as ``name``, its store ``kind``
    (``local`` or ``s3``); returns its store."""
    import datom_core as dc

    bare = world.git_server.create_bare(name)
    store = dc.LocalStore(world.tmp / f"store-{name}") if kind == "local" else world.store(name)
    conn = dc.init_repo(world.tmp / f"builder-{name}", "COLD", store, remote=bare)
    tables = [f"t{i:03d}" for i in range(n_tables)]
    for t in tables:  # real writes: documents of the real shape, objects in the store
        conn.write(t, _table(t))
    synthesize(bare, max(commits - n_tables - 1, 0), tables)
    return store


def measure(
    world: Any, name: str, store: Any, shallow: bool, k: int
) -> tuple[float, float, float, int, int]:
    """(cold seconds, of which the clone, warm seconds, bytes and git requests of the
    cold write); ``shallow``: the fresh worker clones the tip only (``dc.clone(shallow=)``)."""
    import datom_core as dc

    world.git_proxy.reset_counts()
    t0 = time.perf_counter()
    where = world.tmp / f"fresh-{name}-{'s' if shallow else 'f'}{k}" / "repo"
    fresh = dc.clone(world.remote(name), where, store, shallow=shallow)
    cloned = time.perf_counter() - t0
    fresh.write(f"probe{k}", _table("cold"))
    cold = time.perf_counter() - t0
    requests, _, fetched = world.git_proxy.counts()
    t0 = time.perf_counter()
    fresh.write(f"probe{k}", _table("warm"))
    warm = time.perf_counter() - t0
    return cold, cloned, warm, fetched, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtt", type=float, default=50.0, help="round-trip time, ms")
    parser.add_argument("--quick", action="store_true", help="300 and 1,000 commits")
    parser.add_argument("--commits", default="300,3000,10000", help="history lengths")
    parser.add_argument("--tables", type=int, default=20, help="tables the history spans")
    parser.add_argument("--mode", choices=["both", "shallow", "full"], default="both",
                        help="how the fresh worker clones")  # fmt: skip
    parser.add_argument("--git-backend", action="store_true", help="git http-backend server")
    parser.add_argument("--repeat", type=int, default=5, help="fresh workers per length")
    parser.add_argument("--store", choices=["both", "local", "s3"], default="both",
                        help="the project's store: a local directory, S3 (moto), or both")  # fmt: skip
    args = parser.parse_args()
    modes = {"both": [False, True], "shallow": [True], "full": [False]}[args.mode]
    sizes = [300, 1000] if args.quick else [int(x) for x in args.commits.split(",")]
    print(f"fresh worker's first write / warm write, git over HTTP at RTT {args.rtt:.0f} ms")
    print(f"  (each the median of {args.repeat} fresh workers; ratios of one worker's writes)")
    kinds = ["local", "s3"] if args.store == "both" else [args.store]
    with wan_world(args.rtt / 1000, git_backend=args.git_backend) as world:
        for commits, kind in ((c, k) for c in sizes for k in kinds):
            t0 = time.perf_counter()
            name = f"hist{commits}{kind}"
            store = build(world, commits, args.tables, name, kind)
            built = time.perf_counter() - t0
            for shallow in modes:
                runs = [measure(world, name, store, shallow, k) for k in range(args.repeat)]
                ratio = statistics.median(cold / warm for cold, _, warm, _, _ in runs)
                cold, cloned, warm, fetched, requests = (
                    statistics.median(run[i] for run in runs) for i in range(5)
                )
                print(
                    f"  {kind:5s} {'shallow' if shallow else 'full   '} {commits:6d} commits: cold {cold:6.2f} s (clone {cloned:6.2f} s), "
                    f"warm {warm:5.2f} s, cold / warm {ratio:6.1f}  (target <= 2), "
                    f"fetched {fetched / 1e6:6.1f} MB in {requests:.0f} git requests "
                    f"(history built in {built:.0f} s)"
                )


if __name__ == "__main__":
    main()
