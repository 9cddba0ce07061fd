"""Writes across a WAN: the git remote (smart HTTP) and S3 (moto) behind a latency proxy.

Both servers run on loopback behind :class:`_latency.LatencyProxy`, which delays every
chunk by RTT/2 each way (default RTT 50 ms) and counts the HTTP requests it forwards,
git's and S3's separately. Prints:

1. one writer's small writes: per-write latency (median, in ms and in RTTs) and requests
   per write (git, S3), plus one write's request sequence, so each round trip is named
   (targets: git <= 2 round trips; the whole small write <= 6 RTT); then the same writes
   with the kept ref advertisements (``_git/_fast/_advert``) on and on their plain path
   (``DATOM_PLAIN=advert``), alternated in one run: "plain / fast";
2. aggregate writes/s for 1, 4, 8, 16 writer processes, each its own clone, first to
   distinct tables then to one shared table: failures (target 0), p90 and max latency,
   git requests per write, and throughput over one writer's (target: 16 writers >= 1).

Each phase starts writes for ``--budget`` seconds (default 12; a writer makes up to
``--writes``, default 3) and cuts off writes still running at twice that, so the default
run stays near 3 minutes even where writers queue for minutes; cut-off writers are
printed. Each writer process makes a first write of its own before the phase starts (a
cold process's first write costs ~15 warm ones in CPU); ``--cold`` measures from the
first. ``--quick``: 1 and 4 writers, 2 writes each. ``--rtt`` in ms. ``--git-backend`` serves git
with ``git http-backend`` (threaded) instead of dulwich's single-threaded server.
``--compare NAME`` runs each phase under ``DATOM_PLAIN=NAME`` and with the accelerator,
interleaved, and prints "fast / plain" (``group`` with ``--one-clone``: group commit).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wan_setup import World, store_of, wan_world  # noqa: E402

_RUNS = itertools.count()  # each phase its own remote


def _table(tag: str, i: int) -> pa.Table:
    return pa.table({"USUBJID": [f"{tag}-{i}-{k}" for k in range(5)], "AVAL": [1.0 * i] * 5})


def _counts(world: World) -> tuple[int, int]:
    return world.git_proxy.counts()[0], world.s3_proxy.counts()[0]


def single_writer(world: World, rtt: float, writes: int) -> None:
    import datom_core as dc

    world.git_server.create_bare("single")
    conn = dc.init_repo(world.tmp / "single", "WAN", world.store("single"), world.remote("single"))
    conn.write("warm", _table("warm", 0))  # first-write costs (imports, directories)
    rows: list[tuple[float, int, int]] = []
    sequence: list[str] = []
    for i in range(writes):
        world.git_proxy.reset_counts()
        world.s3_proxy.reset_counts()
        t0 = time.perf_counter()
        began = time.monotonic()  # the proxies' clock
        conn.write("small", _table("small", i))
        took = time.perf_counter() - t0
        git, s3 = _counts(world)
        rows.append((took, git, s3))
        if i == writes - 1:  # a later write: the steady state, not the table's creation
            sequence = _timeline(world, began, rtt)
    took = statistics.median(r[0] for r in rows)
    git_median = statistics.median(r[1] for r in rows)
    s3_median = statistics.median(r[2] for r in rows)
    print(f"one writer, {writes} small writes, RTT {rtt * 1000:.0f} ms (medians):")
    print(f"  latency        {took * 1000:7.0f} ms = {took / rtt:5.1f} RTT   (target <= 6 RTT)")
    print(f"  git requests   {git_median:7.0f} per write           (target <= 2)")
    print(f"  S3 requests    {s3_median:7.0f} per write")
    print("  one write's requests, in RTT from the write's start (sent -> answer received):")
    for line in sequence:
        print(f"    {line[:120]}")


def advert_ratio(world: World, rtt: float, writes: int) -> None:
    """Small writes alternating between the kept advertisements and their plain path
    (the order flipped every pair): median latency and git requests of each."""
    import datom_core as dc

    world.git_server.create_bare("advert")
    conn = dc.init_repo(world.tmp / "advert", "WAN", world.store("advert"), world.remote("advert"))
    conn.write("warm", _table("warm", 0))
    seen: dict[str, list[tuple[float, int]]] = {"fast": [], "plain": []}
    before = os.environ.get("DATOM_PLAIN")
    try:
        for i in range(2 * writes):
            mode = ("fast", "plain")[(i + i // 2) % 2]  # fast, plain, plain, fast, ...
            os.environ["DATOM_PLAIN"] = "advert" if mode == "plain" else "0"
            world.git_proxy.reset_counts()
            t0 = time.perf_counter()
            conn.write("small", _table("small", i))
            seen[mode].append((time.perf_counter() - t0, _counts(world)[0]))
    finally:
        if before is None:
            del os.environ["DATOM_PLAIN"]
        else:
            os.environ["DATOM_PLAIN"] = before
    took = {m: statistics.median(t for t, _ in rows) for m, rows in seen.items()}
    git = {m: statistics.median(g for _, g in rows) for m, rows in seen.items()}
    print(f"kept ref advertisements (_git/_fast/_advert), {writes} writes each, alternated:")
    for m in ("fast", "plain"):
        print(
            f"  {m:5}  {took[m] * 1000:7.0f} ms = {took[m] / rtt:5.1f} RTT, {git[m]:.0f} git requests"
        )
    print(f"  plain / fast = {took['plain'] / took['fast']:4.2f}")


def _timeline(world: World, began: float, rtt: float) -> list[str]:
    """Each request of the write just made, git's and S3's, in the order they left."""
    rows = [(t, a, "git", p) for p, t, a in world.git_proxy.timeline]
    rows += [(t, a, "s3 ", p) for p, t, a in world.s3_proxy.timeline]
    out = []
    for t, answered, where, path in sorted(rows):
        end = f"{(answered - began) / rtt:5.2f}" if answered is not None else "  ..."
        out.append(f"{(t - began) / rtt:5.2f} -> {end}  {where} {path}")
    return out


def _writer(spec: dict[str, Any], remote: str, name: str, table: str, writes: int, start: Any,
            out: Any, budget: float) -> None:  # fmt: skip
    """Clone, make a first write to a table of its own (unless ``spec["cold"]``), wait for
    the others, then write until ``writes`` are done or ``budget`` seconds have passed;
    each outcome is reported as it happens. The first write of a process costs ~0.5 s
    of CPU (lazy imports, the S3 client, the clone's caches) against ~0.03 s for the next:
    16 cold writers on 2 cores measure their start, not their throughput."""
    import os

    os.environ["DATOM_PLAIN"] = spec.get("plain", "0")  # ``--compare``
    import datom_core as dc

    try:
        if spec.get("one_clone"):  # every writer through the project's one clone
            conn = dc.connect(spec["one_clone"], store=store_of(spec))
        else:
            conn = dc.clone(remote, Path(spec["tmp"]) / "clones" / name, store_of(spec))
        if not spec.get("cold"):
            conn.write(f"warm{name.rsplit('-', 1)[1]}", _table(name, -1))
    except Exception as e:
        start.wait()
        out.put(("fail", f"clone: {type(e).__name__}: {e}"[:300]))
        out.put(("done", None))
        return
    start.wait()
    began = time.perf_counter()
    for i in range(writes):
        if time.perf_counter() - began > budget:
            break  # no new write after the phase's budget
        t0 = time.perf_counter()
        try:
            conn.write(table, _table(name, i))
            out.put(("ok", time.perf_counter() - t0))
        except Exception as e:  # a failure is what this benchmark counts
            out.put(("fail", f"{type(e).__name__}: {e}"[:300]))
            traceback.print_exc()
    out.put(("done", None))


def many_writers(world: World, ctx: Any, n: int, shared: bool, writes: int, budget: float,
                 one_clone: bool = False, plain: str = "0", cold: bool = False) -> float:  # fmt: skip
    """One phase: ``n`` writer processes; aggregate writes/s. Writes still running
    ``2 x budget`` seconds after the start are cut off (their processes ended) and
    reported as unfinished: on code whose writers queue behind each other a single
    write can take minutes."""
    import queue

    import datom_core as dc

    kind = f"{'shared' if shared else 'distinct'}{'-one' if one_clone else ''}-{plain}"
    repo = f"many-{n}-{kind}-{next(_RUNS)}"
    world.git_server.create_bare(repo)
    dc.init_repo(world.tmp / repo, "WAN", world.store(repo), world.remote(repo))
    start = ctx.Barrier(n + 1)
    out = ctx.Queue()
    procs = []
    for w in range(n):
        table = "shared" if shared else f"w{w}"
        spec = world.spec(repo) | ({"one_clone": str(world.tmp / repo)} if one_clone else {})
        spec["plain"] = plain
        spec["cold"] = cold
        args = (spec, world.remote(repo), f"{repo}-{w}", table, writes, start, out,
                budget)  # fmt: skip
        procs.append(ctx.Process(target=_writer, args=args))
    for p in procs:
        p.start()
    start.wait()
    world.git_proxy.reset_counts()
    world.s3_proxy.reset_counts()
    t0 = time.perf_counter()
    latencies: list[float] = []
    failures: list[str] = []
    done = 0
    while done < n:
        try:
            kind, value = out.get(timeout=max(0.0, t0 + 2 * budget - time.perf_counter()))
        except queue.Empty:
            break
        if kind == "ok":
            latencies.append(value)
        elif kind == "fail":
            failures.append(value)
        else:
            done += 1
    elapsed = time.perf_counter() - t0
    for p in procs:
        if p.is_alive():
            p.terminate()  # only the benchmark's own writer processes
        p.join()
    git, s3 = _counts(world)
    latencies.sort()
    ok = len(latencies)
    rate = ok / elapsed
    p90 = latencies[int(0.9 * (ok - 1))] if ok else float("nan")
    cut = f", {n - done} writer(s) cut off at {2 * budget:.0f} s" if done < n else ""
    print(
        f"  {n:2d} writers {'shared  ' if shared else 'distinct'}{' one clone' if one_clone else ''}"
        f"{' plain' if plain != '0' else ''}: "
        f"{rate:5.2f} writes/s, "
        f"{ok} done, {len(failures)} failed, p90 {p90:5.2f} s, max {max(latencies, default=0):5.2f} s, "
        f"git req/write {git / max(ok, 1):4.1f}, S3 req/write {s3 / max(ok, 1):4.1f}{cut}"
    )
    for f in failures[:5]:
        print(f"      failure: {f}")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtt", type=float, default=50.0, help="round-trip time, ms")
    parser.add_argument("--quick", action="store_true", help="1 and 4 writers, 2 writes each")
    parser.add_argument("--writes", type=int, default=3, help="writes per writer process")
    parser.add_argument("--single", type=int, default=6, help="one writer's measured writes")
    parser.add_argument("--writers", default="1,4,8,16",
                        help="writer counts ('0': one writer's small writes only)")  # fmt: skip
    parser.add_argument("--budget", type=float, default=12.0,
                        help="seconds a phase starts writes for (cut off at twice that)")  # fmt: skip
    parser.add_argument("--git-backend", action="store_true", help="git http-backend server")
    parser.add_argument("--threaded-dulwich", action="store_true",
                        help="dulwich's server with a thread per request")  # fmt: skip
    parser.add_argument("--one-clone", action="store_true",
                        help="every writer through one shared clone (group commit)")  # fmt: skip
    parser.add_argument("--cold", action="store_true",
                        help="writers start measured with their first write (no warm-up)")  # fmt: skip
    parser.add_argument("--tables", choices=("both", "distinct", "shared"), default="both",
                        help="the writers' tables: one each, one shared, or both phases")  # fmt: skip
    parser.add_argument("--compare", help="an accelerator to run plain too (DATOM_PLAIN=NAME)")
    args = parser.parse_args()
    counts = [1, 4] if args.quick else [int(x) for x in args.writers.split(",") if int(x)]
    writes = 2 if args.quick else args.writes
    rtt = args.rtt / 1000
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["datom_core", "pyarrow", "pandas", "s3fs"])
    began = time.perf_counter()
    with wan_world(rtt, git_backend=args.git_backend, threaded=args.threaded_dulwich) as world:
        single_writer(world, rtt, 3 if args.quick else args.single)
        advert_ratio(world, rtt, 3 if args.quick else args.single)
        if not counts:
            return
        where = "one clone shared by all" if args.one_clone else "each writer its own clone"
        where += ", cold writers" if args.cold else ", each warmed by a write of its own"
        print(f"aggregate writes/s, {where}, {writes} writes each:")
        phases = {"both": (False, True), "distinct": (False,), "shared": (True,)}
        for shared in phases[args.tables]:
            base = None
            for i, n in enumerate(counts):
                if args.compare and n > 1:  # the order alternates: --writers 8,8 for both
                    kw, r = (world, ctx, n, shared, writes, args.budget, args.one_clone), {}
                    for mode in ("0", args.compare) if i % 2 else (args.compare, "0"):
                        r[mode] = many_writers(*kw, plain=mode, cold=args.cold)
                    print(f"      fast / plain = {r['0'] / r[args.compare]:4.2f}")
                    continue
                rate = many_writers(world, ctx, n, shared, writes, args.budget, args.one_clone,
                                    cold=args.cold)  # fmt: skip
                base = base or rate
                if n > 1:
                    print(f"      {n} writers / 1 writer = {rate / base:4.2f}  (target >= 1)")
    print(f"(benchmark took {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
