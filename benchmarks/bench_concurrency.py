"""Concurrent writers, each with its own clone of one local bare remote, or all through one
(ratios in one run).

8 processes, 10 writes each, first to distinct tables, then all to one shared table, then
(for reference) to distinct tables all through one clone, as the steps of Dagster's
multiprocess executor with one ``DATOM_HOME`` do. Prints per phase: failed writes (target
0), versions recorded once (every successful write's version exactly once in its table's
history), ``validate`` clean, and aggregate writes/s over one writer's writes/s (target
>= 0.8 for the first two). One writer alone and the phases are run
``--rounds`` times (default 3) interleaved, with one writer alone once more at the end;
each rate is the best of its runs (the runs are printed too). Then the same for the git
layer alone (``MetadataRepo.commit_and_push`` of a table's documents and a manifest, as
the write path calls it): failures and versions are checked there too; its ratio is for
reference (the target is the write's), as most of a bare ``commit_and_push`` runs inside
the writers' turn, where writers queue. The machine may be loaded: read the ratios.
``--git-only`` skips the ``Connection.write`` phases.

``--compare NAME`` measures one accelerator of the clone side (``group``: group commit, 8
writers through one clone; ``share``: each writer its own clone of a local remote, reading
its objects in place) against its plain path (``DATOM_PLAIN=NAME``), ``--rounds`` runs of
each interleaved, and prints "fast / plain" of the best rates.

``--servers`` runs the server phases instead (also run at the end of a full run): for
each remote (dulwich's smart-HTTP server, git's own ``git http-backend``, the local bare
remote), 2 and 8 writers, each with its clone, writing distinct tables, alone and with a
colleague's ``git push`` loop beside them (``_colleague.py``): failed writes (target 0),
every version recorded once, ``validate`` clean, and the colleague's pushes all kept.
The colleague pauses ``--colleague-pause`` seconds (0.5) after each push: git gives no
turns, and beside a loop that never pauses a writer whose fetch and push take longer than
the loop's own push loses every race. git's own clients do: nine ``git push`` loops on
``git http-backend``, 60 s, pushed 300, 2, 1 and 0 (six) times, the eight losers giving
up after 50 tries each; eight datom writers beside one pause-less loop recorded nothing in
420 s (it pushed 8,419 times). At 0.1 s a run's last writer on dulwich's server lost
124 races in a row and gave up after 300 s. ``--colleague-pause 0`` runs the loop
without pauses.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

import datom_core as dc
from datom_core._git import MetadataRepo, TreeReader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _colleague import SERVERS, Colleague, remote  # noqa: E402
from _measure import file_churn_cost  # noqa: E402

_DISTINCT, _SHARED, _ONE_CLONE = "distinct tables", "one shared table", "one clone"


def _table(writer: int, i: int) -> pa.Table:  # writer numbers differ between rounds
    return pa.table({"USUBJID": [f"W{writer}-{i}-{k}" for k in range(5)], "AVAL": [1.0 * i] * 5})


def _after_imports() -> None:
    """The fresh interpreter's first full garbage collection, done before the clock starts.

    It scans everything the imports made (pandas, pyarrow, fsspec: 35-50 ms) and would
    otherwise fall inside the 10 measured writes of whichever writers happen to cross
    the threshold, a once-per-process cost of importing, not of writing (measured: it
    alone moved the 8-writer CPU per write from ~13 to ~7 ms on tmpfs).
    """
    gc.collect()


def _writer(clone: str, store: str, writer: int, writes: int, shared: bool, start: Any,
            out: Any) -> None:  # fmt: skip
    local = dc.LocalStore(store)
    conn = dc.connect(clone, store=local)
    name = f"shared{writer // 100}" if shared else f"w{writer}"  # a shared table per round
    results: list[tuple[str, str | None, str | None]] = []
    # What the first write would import lazily (pyarrow's pandas shim, the filesystem
    # layer the store reads a parquet footer with) is imported before the clock starts, as
    # datom itself is: the benchmark measures writes, not 8 interpreters importing at once
    # on a 2-core machine.
    _table(writer, -1)
    local.exists(".metadata/manifest.json")
    importlib.import_module("fsspec.implementations.local")
    _after_imports()
    start.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(writes):
        try:
            results.append((name, conn.write(name, _table(writer, i)).version, None))
        except Exception as e:  # a failure is what this benchmark counts
            results.append((name, None, f"{type(e).__name__}: {e}"[:300]))
    out.put((writer, time.perf_counter() - t0, results, time.process_time() - cpu0))


def _documents(table: str, entry: str):  # noqa: ANN202
    """A build like the write path's: this table's history grows, the manifest is redone."""

    def build(tree: TreeReader) -> dict[str, bytes]:
        history = json.loads(tree.read(f"{table}/version_history.json") or b"[]")
        manifest = json.loads(tree.read(".datom/manifest.json") or b"{}")
        history.insert(0, {"version": entry})
        manifest.setdefault("tables", {})[table] = {"current_version": entry}
        return {
            f"{table}/metadata.json": json.dumps({"version": entry}).encode(),
            f"{table}/version_history.json": json.dumps(history, indent=2).encode(),
            ".datom/manifest.json": json.dumps(manifest, indent=2).encode(),
        }

    return build


def _git_writer(clone: str, store: str, writer: int, writes: int, shared: bool, start: Any,
                out: Any) -> None:  # fmt: skip
    repo = MetadataRepo.open(clone)
    name = "shared" if shared else f"w{writer}"
    results: list[tuple[str, str | None, str | None]] = []
    _after_imports()
    start.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(writes):
        entry = f"{writer}-{i}-{'shared' if shared else 'own'}-{writes}"
        try:
            repo.commit_and_push(_documents(name, entry), f"Update {name}")
            results.append((name, entry, None))
        except Exception as e:
            results.append((name, None, f"{type(e).__name__}: {e}"[:300]))
    out.put((writer, time.perf_counter() - t0, results, time.process_time() - cpu0))


def _check_git(repo: MetadataRepo, results: list[Any]) -> tuple[int, bool]:
    repo.fetch_and_reset()
    failures = len([r for r in results if r[2]])
    once = True
    for table in {t for t, _, _ in results}:
        recorded = Counter(
            h["version"] for h in json.loads(repo.read(f"{table}/version_history.json") or b"[]")
        )
        wanted = [v for t, v, _ in results if t == table and v]
        once &= all(recorded[v] == 1 for v in wanted) and max(recorded.values()) == 1
    return failures, once


def _run(clones: list[Path], store: Path, writes: int, shared: bool, target: Any = None,
         base: int = 0) -> tuple[float, list[Any], float]:  # fmt: skip
    """(seconds from the barrier to the last write, the writes' results, CPU seconds per
    write over all writers: what bounds aggregate throughput when writers outnumber cores).
    Writer ``w`` writes table ``w<base + w>`` (or the shared one) with data of its own."""
    ctx = mp.get_context("spawn")
    # Every writer and this process meet at the barrier once the writers have imported
    # and opened everything: the clock starts when the last one is ready.
    start, out = ctx.Barrier(len(clones) + 1), ctx.Queue()
    procs = [
        ctx.Process(
            target=target or _writer,
            args=(str(c), str(store), base + w, writes, shared, start, out),
        )
        for w, c in enumerate(clones)
    ]
    for p in procs:
        p.start()
    start.wait(timeout=600)
    t0 = time.perf_counter()
    reports = [out.get(timeout=1800) for _ in procs]
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join()
    results = [r for _, _, rs, _ in reports for r in rs]
    return elapsed, results, sum(cpu for *_, cpu in reports) / max(len(results), 1)


def _one_writer(clone: Path, store: Path, writes: int, base: int = 0) -> tuple[float, float]:
    """(writes/s, CPU seconds per write) of one writer alone."""
    single, _, cpu = _run([clone], store, writes, shared=False, base=base)
    return writes / single, cpu


def _check(conn: dc.Connection, results: list[Any]) -> tuple[int, bool]:
    failures = [err for _, _, err in results if err]
    for err in failures[:3]:
        print("   failure:", err)
    once = True
    for table in {t for t, _, _ in results}:
        recorded = Counter(v.version for v in conn.history(table))
        wanted = [v for t, v, _ in results if t == table and v]
        once &= all(recorded[v] == 1 for v in wanted) and max(recorded.values()) == 1
    return len(failures), once


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--git-only", action="store_true")
    parser.add_argument("--servers", action="store_true", help="only the server phases")
    parser.add_argument("--compare", choices=("group", "share"), help="fast / plain of one")
    parser.add_argument("--colleague-pause", type=float, default=0.5, help="seconds")
    args = parser.parse_args(argv)
    if args.servers:
        return 0 if _servers(args.writes, args.colleague_pause) else 1
    if args.compare:
        with tempfile.TemporaryDirectory(prefix="datom-bench-cmp-") as tmp:
            return 0 if _compare(Path(tmp), args.compare, args, args.rounds) else 1
    ok = True
    with tempfile.TemporaryDirectory(prefix="datom-bench-conc-") as tmp:
        root = Path(tmp)
        if args.git_only:
            return 0 if _git_only(root, args.writers, args.writes) else 1
        store = root / "store"
        origin = dc.init_repo(root / "origin", "BENCH", dc.LocalStore(store))
        remote = origin.repo.remote_url
        clones = [root / f"clone{w}" for w in range(args.writers)]
        for c in clones:
            dc.clone(remote, c, dc.LocalStore(store))
        try:
            baselines, phases = _rounds(clones, store, args.writes, args.rounds)
        except Exception:
            traceback.print_exc()
            return 1
        one_rate, one_cpu = max(baselines)
        print(f"after the writes, {file_churn_cost(root)}")
        print(f"one writer, best of {len(baselines)} runs ({_rates(b for b, _ in baselines)} "
              f"writes/s): {one_rate:.1f} writes/s, CPU {1000 * one_cpu:.1f} ms per write")  # fmt: skip
        for label, runs in phases.items():
            origin.pull()
            results = [r for _, rs, _ in runs for r in rs]
            failed, once = _check(origin, results)
            report = origin.validate()
            rates = [(len([r for r in rs if r[1]]) / elapsed, cpu) for elapsed, rs, cpu in runs]
            rate, cpu = max(rates)
            ratio = rate / one_rate
            targeted = label != _ONE_CLONE
            good = failed == 0 and once and report.ok and (ratio >= 0.8 or not targeted)
            ok &= good
            verdict = "ok" if good else ("MISSED" if targeted else "FAILED")
            print(
                f"{args.writers} writers x {args.writes} writes, {label:<16}: failures {failed}, "
                f"versions once {once}, validate {'clean' if report.ok else 'NOT clean'}, "
                f"best of {len(rates)} ({_rates(r for r, _ in rates)}) {rate:.1f} writes/s = "
                f"{ratio:.2f} x one writer "
                f"({'target >= 0.8' if targeted else 'for reference'}) {verdict}; CPU "
                f"{1000 * cpu:.1f} ms per write = {cpu / one_cpu:.2f} x one writer's"
            )
            if not report.ok:
                print("  ", str(report).replace("\n", "\n   ")[:2000])
        ok &= _git_only(root, args.writers, args.writes)
    ok &= _servers(args.writes, args.colleague_pause)
    return 0 if ok else 1


def _servers(writes: int, pause: float) -> bool:
    """The server phases (see the module docstring); whether every one was clean."""
    ok = True
    for kind in SERVERS:
        for writers in (2, 8):
            for colleague in (False, True):
                with tempfile.TemporaryDirectory(prefix="datom-bench-srv-") as tmp:
                    try:
                        ok &= _server_phase(
                            kind, writers, writes, pause if colleague else None, Path(tmp)
                        )
                    except Exception:
                        traceback.print_exc()
                        ok = False
    return ok


def _server_phase(
    kind: str, writers: int, writes: int, colleague: float | None, root: Path
) -> bool:
    """``colleague``: the pause of its push loop (seconds), None for no colleague."""
    import os

    with remote(kind, root) as (url, token):
        if token:
            os.environ["DATOM_GIT_TOKEN"] = token  # the spawned writers read it too
        store = root / "store"
        origin = dc.init_repo(root / "origin", "BENCH", dc.LocalStore(store), url)
        url = origin.repo.remote_url
        clones = [root / f"clone{w}" for w in range(writers)]
        for c in clones:
            dc.clone(url, c, dc.LocalStore(store))
        pusher = (
            Colleague(url, token, root / "colleague", colleague) if colleague is not None else None
        )
        if pusher:
            pusher.start()
        try:
            elapsed, results, _cpu = _run(clones, store, writes, shared=False)
        finally:
            if pusher:
                pusher.stop()
        origin.pull()
        failed, once = _check(origin, results)
        report = origin.validate()
        kept = ""
        good = failed == 0 and once and report.ok
        if pusher:
            notes = pusher.notes_on(url, token, root / "check")
            good &= notes == pusher.pushes and not pusher.failures
            kept = f", colleague pushes {pusher.pushes} (pause {colleague:g} s) kept {notes}"
        print(
            f"{kind:<16} {writers} writers x {writes}, "
            f"{'no' if pusher is None else 'with':>4} git push loop: failed writes {failed}, versions "
            f"once {once}, validate {'clean' if report.ok else 'NOT clean'}{kept}; "
            f"{len([r for r in results if r[1]]) / elapsed:.1f} writes/s "
            f"{'ok' if good else 'FAILED'}",
            flush=True,
        )
        if not report.ok:
            print("  ", str(report).replace("\n", "\n   ")[:1500])
        os.environ.pop("DATOM_GIT_TOKEN", None)
        return good


def _rounds(
    clones: list[Path], store: Path, writes: int, rounds: int
) -> tuple[list[tuple[float, float]], dict[str, list[Any]]]:
    """One writer alone, then the distinct-table, shared-table and one-clone phases,
    ``rounds`` times, and one writer alone once more: every rate is the best of its runs,
    measured interleaved (as ``bench_dagster`` does), so a load spike on this shared
    machine during one short run (80 writes take well under a second) flatters or spoils
    no ratio. Each round writes new tables (its own shared one too) and new data (writer
    numbers ``100 * round + w``; the one-clone phase ``100 * round + 60 + w``), so the
    rounds are alike."""
    baselines: list[tuple[float, float]] = []
    phases: dict[str, list[Any]] = {_DISTINCT: [], _SHARED: [], _ONE_CLONE: []}
    for r in range(rounds):
        baselines.append(_one_writer(clones[0], store, writes * 4, base=100 * r + 50))
        for label, shared in ((_DISTINCT, False), (_SHARED, True)):
            phases[label].append(_run(clones, store, writes, shared, base=100 * r))
        # Dagster's multiprocess executor with one DATOM_HOME: every step writes through
        # the same clone, taking turns at its lock.
        one = [clones[0]] * len(clones)
        phases[_ONE_CLONE].append(_run(one, store, writes, False, base=100 * r + 60))
    baselines.append(_one_writer(clones[0], store, writes * 4, base=100 * rounds + 50))
    return baselines, phases


def _rates(values: Any) -> str:
    return ", ".join(f"{v:.0f}" for v in values)


def _git_only(root: Path, writers: int, writes: int) -> bool:
    """The git layer alone: commit_and_push of a table's documents and the manifest."""
    origin = MetadataRepo.init(root / "git-origin", None)
    origin.commit_and_push(lambda tree: {".datom/manifest.json": b"{}"}, "seed")
    clones = [root / f"git-clone{w}" for w in range(writers)]
    for c in clones:
        MetadataRepo.clone(origin.remote_url, c)
    single, _, one_cpu = _run(clones[:1], root, writes * 4, False, _git_writer)
    rows = [(shared, *_run(clones, root, writes, shared, _git_writer)) for shared in (False, True)]
    again, _, again_cpu = _run(clones[:1], root, writes * 4, False, _git_writer, len(clones))
    one_rate, one_cpu = max((writes * 4 / single, one_cpu), (writes * 4 / again, again_cpu))
    print(
        f"git layer, one writer (commit_and_push, the faster of before and after): "
        f"{one_rate:.1f} commits/s, CPU {1000 * one_cpu:.1f} ms per commit"
    )
    ok = True
    for shared, elapsed, results, cpu in rows:
        failed, once = _check_git(origin, results)
        rate = len([r for r in results if r[1]]) / elapsed
        good = failed == 0 and once
        ok &= good
        label = "one shared table" if shared else "distinct tables"
        print(
            f"git layer, {writers} writers x {writes}, {label:<16}: failures {failed}, versions "
            f"once {once} {'ok' if good else 'MISSED'}, {rate:.1f} commits/s = "
            f"{rate / one_rate:.2f} x one writer (for reference); CPU {1000 * cpu:.1f} ms per "
            "commit"
        )
    return ok


def _compare(root: Path, name: str, args: Any, rounds: int) -> bool:
    """``--compare``: the accelerator ``name`` against ``DATOM_PLAIN=name``, interleaved."""
    store = root / "store"
    origin = dc.init_repo(root / "origin", "BENCH", dc.LocalStore(store))
    url = origin.repo.remote_url
    modes = {"plain": name, "fast": "0"}
    clones: dict[str, list[Path]] = {}
    for mode, env in modes.items():  # a clone shares the remote's objects from its making
        os.environ["DATOM_PLAIN"] = env
        made = [root / f"{mode}{w}" for w in range(args.writers)]
        for c in made[: 1 if name == "group" else None]:
            dc.clone(url, c, dc.LocalStore(store))
        clones[mode] = [made[0]] * args.writers if name == "group" else made
    rates: dict[str, list[float]] = {"plain": [], "fast": []}
    failed = 0
    for r in range(rounds):
        order = ("plain", "fast") if r % 2 == 0 else ("fast", "plain")
        for i, mode in enumerate(order):
            os.environ["DATOM_PLAIN"] = modes[mode]  # the spawned writers read it
            elapsed, results, _ = _run(
                clones[mode], store, args.writes, False, base=100 * r + 50 * i
            )
            failed += len([x for x in results if x[2]])
            rates[mode].append(len([x for x in results if x[1]]) / elapsed)
    os.environ.pop("DATOM_PLAIN", None)
    plain, fast = max(rates["plain"]), max(rates["fast"])
    print(
        f"{name}: {args.writers} writers x {args.writes} writes, failures {failed}; plain "
        f"({_rates(rates['plain'])}) best {plain:.1f} writes/s, fast ({_rates(rates['fast'])}) "
        f"best {fast:.1f} writes/s: fast / plain = {fast / plain:.2f}"
    )
    return failed == 0


if __name__ == "__main__":
    sys.exit(main())
