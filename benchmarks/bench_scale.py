"""Write latency as a project grows: ratios measured in one run (the machine may be loaded).

Prints:
  growing project (30 tables): median of writes 251-300 / median of writes 11-60   <= 1.2
  a write into a 3,000-table project / into a 10-table project                      <= 1.3
  a write to a table with 1,000 versions / to a table with 1 version                <= 1.3
  the median small write at 10 tables, in ms (printed, not asserted; aim <= 25 ms)
  into 3,000 tables from two processes: a write after the other's / after its own
    (for reference: each write of concurrent clones meets a manifest another printed)
  the same for a table with 1,000 versions written by both (for reference)
  a pipeline's run writing each of 100 tables of 333 versions in turn / of 1 version
    (for reference)

Each part runs twice in one run: with the accelerators, then with ``DATOM_PLAIN=1`` (their
plain paths, see ``docs/performance.md``); each line prints the accelerated figure and,
after ``plain:``, the plain one. Targets apply to the accelerated figures.

Big projects are seeded fast (documents copied from one real write, committed once); every
measured write goes through ``Connection.write``. ``--quick`` scales the sizes down (150
growing writes, 1,000 tables, 300 versions) for a smoke run; ``--fast-only`` skips the
plain runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any

import pyarrow as pa

import datom_core as dc
from datom_core._plain import NAMED

_values = count()


def small_table() -> pa.Table:
    """A few rows, different data every call: each measured write is a real new version."""
    i = next(_values)
    return pa.table(
        {"USUBJID": [f"S{i}-{k}" for k in range(5)], "AVAL": [float(i + k) for k in range(5)]}
    )


def new_project(root: Path, name: str) -> dc.Connection:
    return dc.init_repo(root / name / "repo", "BENCH", dc.LocalStore(root / name / "store"))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _entries(manifest: dict, table: str) -> dict:
    """The manifest's per-table mapping (whatever its key is called) holding ``table``."""
    for value in manifest.values():
        if isinstance(value, dict) and table in value:
            return value
    raise SystemExit(f"cannot find {table!r} in the manifest: {list(manifest)}")


def seed_tables(conn: dc.Connection, names: list[str]) -> None:
    """Add ``names`` as tables with one version each: one real write copied, one commit."""
    conn.write("template", small_table())
    repo = conn.repo
    meta = repo.read("template/metadata.json")
    hist = repo.read("template/version_history.json")
    raw_manifest = repo.read(".datom/manifest.json")
    assert meta is not None and hist is not None and raw_manifest is not None
    manifest = json.loads(raw_manifest)
    entries = _entries(manifest, "template")
    files: dict[str, bytes] = {}
    for name in names:
        files[f"{name}/metadata.json"] = meta
        files[f"{name}/version_history.json"] = hist
        entries[name] = entries["template"]
    summary = manifest.get("summary")
    if isinstance(summary, dict) and "total_tables" in summary:
        summary["total_tables"] = len(entries)
    files[".datom/manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    repo.commit(files, f"Seed {len(names)} tables")
    repo.push()


def seed_deep_tables(conn: dc.Connection, names: list[str], versions: int) -> None:
    """:func:`seed_tables`, each table's history holding ``versions`` versions (a squashed
    history: synthetic entries no commit produced), in one more commit."""
    seed_tables(conn, names)
    entry = json.loads(conn.repo.read(f"{names[0]}/version_history.json") or b"")[0]
    fakes = [dict(entry, version=f"{i:064x}") for i in range(versions - 1, 0, -1)]
    doc = (json.dumps([entry, *fakes], indent=2) + "\n").encode()
    conn.repo.commit({f"{n}/version_history.json": doc for n in names}, "Seed deep histories")
    conn.repo.push()


def seed_versions(conn: dc.Connection, table: str, versions: int) -> None:
    """Give ``table`` ``versions`` versions, one commit each (synthetic history entries)."""
    conn.write(table, small_table())
    repo = conn.repo
    meta = repo.read(f"{table}/metadata.json")
    hist = repo.read(f"{table}/version_history.json")
    assert meta is not None and hist is not None
    entry = json.loads(hist)[0]
    history = [entry]
    for i in range(1, versions):
        fake = dict(entry, version=f"{i:064x}", data_sha=f"{i:064x}")
        history.insert(0, fake)
        doc = (json.dumps(history, indent=2) + "\n").encode()
        body = json.loads(meta)
        body["datom_bench_seq"] = i  # a different document per commit
        repo.commit(
            {
                f"{table}/version_history.json": doc,
                f"{table}/metadata.json": (json.dumps(body, indent=2) + "\n").encode(),
            },
            f"Seed version {i} of {table}",
        )
    # The last real document again, so the next write sees a well-formed current version.
    history.insert(0, entry)
    repo.commit(
        {
            f"{table}/metadata.json": meta,
            f"{table}/version_history.json": (json.dumps(history, indent=2) + "\n").encode(),
        },
        f"Seed the current version of {table}",
    )
    repo.push()


def interleaved(a: Callable[[], object], b: Callable[[], object], n: int) -> tuple[float, float]:
    """Median times of ``a`` and ``b``, alternating so machine drift hits both alike."""
    ta, tb = [], []
    for _ in range(n):
        ta.append(timed(a))
        tb.append(timed(b))
    return statistics.median(ta), statistics.median(tb)


def _write_new(conn: dc.Connection, name: str) -> object:
    return conn.write(name, small_table())


def growing(root: Path, writes: int, tables: int = 30) -> tuple[float, float, float]:
    conn = new_project(root, "growing")
    latencies = []
    for i in range(writes):
        name = f"t{i % tables:02d}"
        latencies.append(timed(partial(_write_new, conn, name)))
    early = statistics.median(latencies[10:60])
    late = statistics.median(latencies[writes - 50 : writes])
    return late / early, early, late


def wide(root: Path, big: int, n: int) -> tuple[float, float, float]:
    small_conn, big_conn = new_project(root, "ten"), new_project(root, "wide")
    seed_tables(small_conn, [f"s{i:04d}" for i in range(9)])
    seed_tables(big_conn, [f"s{i:04d}" for i in range(big - 1)])
    for c in (small_conn, big_conn):
        c.write("s0001", small_table())  # warm-up
    ten, many = interleaved(
        lambda: small_conn.write("s0001", small_table()),
        lambda: big_conn.write("s0001", small_table()),
        n,
    )
    return many / ten, ten, many


def deep(root: Path, versions: int, n: int) -> tuple[float, float, float]:
    conn = new_project(root, "deep")
    seed_versions(conn, "old", versions)
    conn.write("young", small_table())
    conn.write("old", small_table())  # warm-up
    old, young = interleaved(
        lambda: conn.write("old", small_table()), lambda: conn.write("young", small_table()), n
    )
    return old / young, young, old


def pipeline(root: Path, tables: int, versions: int) -> tuple[float, float, float]:
    """Median write of a pipeline's run, each of ``tables`` tables written in turn (after
    a first run), when each has ``versions`` versions / when each has one (the two
    projects' writes interleaved)."""
    names = [f"p{i:03d}" for i in range(tables)]
    projects = []
    for name, depth in (("pipeline-young", 1), ("pipeline-deep", versions)):
        conn = new_project(root, name)
        seed_deep_tables(conn, names, depth)
        for table in names:  # the first run
            conn.write(table, small_table())
        projects.append(conn)
    young, deep = [], []
    for table in names:
        young.append(timed(partial(_write_new, projects[0], table)))
        deep.append(timed(partial(_write_new, projects[1], table)))
    a, b = statistics.median(young), statistics.median(deep)
    return b / a, a, b


def _other_writer(clone: str, store: str, asks: Any, answers: Any) -> None:
    """A second process writing into the same project through its own clone: each write
    it is asked for is timed there."""
    conn = dc.connect(clone, store=dc.LocalStore(store))
    while (table := asks.get()) is not None:
        answers.put(timed(partial(_write_new, conn, table)))


def two_processes(root: Path, big: int, n: int) -> tuple[float, float, float]:
    """Median times of a write in the second process right after one of the first's (it
    meets a manifest another process printed), and right after one of its own."""
    conn = new_project(root, "shared")
    seed_tables(conn, [f"s{i:04d}" for i in range(big)])
    names = [f"s{i:04d}" for i in range(20)]  # the first 20 rounds write each once first

    def tables(i: int) -> tuple[str, str, str]:
        return names[i % 20], names[(i + 7) % 20], names[(i + 11) % 20]

    return _alternating(conn, tables, n, warm=20)


def after_other_without(root: Path, name: str, big: int, n: int) -> tuple[float, float]:
    """Median times of a write right after another clone's (in this process: the two
    modes interleaved), with every accelerator and with ``name`` on its plain path."""
    conn = new_project(root, "shared")
    seed_tables(conn, [f"s{i:04d}" for i in range(big)])
    other = dc.clone(conn.repo.remote_url, root / "other", store=conn.store)
    rounds = count()

    def once(plain_path: bool) -> float:
        i = next(rounds)
        conn.write(f"s{i % 20:04d}", small_table())
        if plain_path:
            os.environ["DATOM_PLAIN"] = name
        try:
            return timed(partial(_write_new, other, f"s{(i + 7) % 20:04d}"))
        finally:
            os.environ.pop("DATOM_PLAIN", None)

    for _ in range(20):
        once(False)
    fast, alone = [], []
    for _ in range(n):
        fast.append(once(False))
        alone.append(once(True))
    return statistics.median(fast), statistics.median(alone)


def deep_two_processes(root: Path, versions: int, n: int) -> tuple[float, float, float]:
    """The same for one table with ``versions`` versions (a squashed history: no commit
    produced them), written by both processes: each write meets the history and the store
    copy the other process made."""
    conn = new_project(root, "deep-shared")
    seed_versions(conn, "old", versions)
    return _alternating(conn, lambda i: ("old", "old", "old"), n, warm=5)


def _alternating(
    conn: dc.Connection, tables: Callable[[int], tuple[str, str, str]], n: int, warm: int
) -> tuple[float, float, float]:
    """Round ``i``: ``conn`` writes ``tables(i)[0]``, then a second process (its own
    clone) writes ``[1]`` and then ``[2]``; the medians of those two, past ``warm``
    rounds, and their ratio."""
    other = conn.path.parent / "other"
    dc.clone(conn.repo.remote_url, other, store=conn.store)
    ctx = mp.get_context("spawn")
    asks, answers = ctx.Queue(), ctx.Queue()
    store = str(conn.path.parent / "store")
    proc = ctx.Process(target=_other_writer, args=(str(other), store, asks, answers))
    proc.start()
    try:
        after_other, after_own = [], []
        for i in range(n + warm):
            first, then, again = tables(i)
            conn.write(first, small_table())
            asks.put(then)
            waited = answers.get(timeout=600)
            asks.put(again)
            own = answers.get(timeout=600)
            if i >= warm:
                after_other.append(waited)
                after_own.append(own)
    finally:
        asks.put(None)
        proc.join(timeout=600)
    a, b = statistics.median(after_other), statistics.median(after_own)
    return a / b, a, b


def _report(label: str, ratio: float, target: float, detail: str, plain: str = "") -> bool:
    ok = ratio <= target
    print(
        f"{label:<58} = {ratio:5.2f}  (target <= {target}; {detail}) {'ok' if ok else 'MISSED'}"
        + (f"  plain: {plain}" if plain else "")
    )
    return ok


def _modes(run: Callable[[Path], Any], root: Path, fast_only: bool) -> tuple[Any, Any]:
    """``run`` in a fresh folder with the accelerators, then with ``DATOM_PLAIN=1``
    (None for the second with ``fast_only``)."""
    fast = run(root / "fast")
    if fast_only:
        return fast, None
    os.environ["DATOM_PLAIN"] = "1"
    try:
        return fast, run(root / "plain")
    finally:
        del os.environ["DATOM_PLAIN"]


def _without(name: str, run: Callable[[Path], Any], root: Path) -> Any:
    """``run`` with only the accelerator ``name`` on its plain path (``DATOM_PLAIN=name``)."""
    os.environ["DATOM_PLAIN"] = name
    try:
        return run(root)
    finally:
        del os.environ["DATOM_PLAIN"]


def _ms(pair: tuple[float, ...] | None, ratio_fmt: str) -> str:
    if pair is None:
        return ""
    r, a, b = pair
    return ratio_fmt.format(r=r, a=a * 1e3, b=b * 1e3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--fast-only", action="store_true", help="skip the DATOM_PLAIN=1 runs")
    parser.add_argument("--only", choices=["growing", "wide", "two", "deep"], action="append")
    args = parser.parse_args(argv)
    writes, big, versions, n = (150, 1000, 300, 9) if args.quick else (300, 3000, 1000, 41)
    parts = set(args.only or ["growing", "wide", "two", "deep"])
    ok = True
    with tempfile.TemporaryDirectory(prefix="datom-bench-scale-") as tmp:
        root = Path(tmp)

        def both(name: str, run: Callable[[Path], Any]) -> tuple[Any, Any]:
            return _modes(run, root / name, args.fast_only)

        if "growing" in parts:
            (r, early, late), plain = both("growing", lambda p: growing(_mk(p), writes))
            ok &= _report(
                f"growing (30 tables): writes {writes - 49}-{writes} / 11-60", r, 1.2,
                f"{early * 1e3:.1f} -> {late * 1e3:.1f} ms",
                _ms(plain, "{r:5.2f} ({a:.1f} -> {b:.1f} ms)"),
            )  # fmt: skip
        if "wide" in parts:
            (r, ten, many), plain = both("wide", lambda p: wide(_mk(p), big, n))
            ok &= _report(
                f"a write into {big} tables / into 10 tables", r, 1.3,
                f"{ten * 1e3:.1f} vs {many * 1e3:.1f} ms",
                _ms(plain, "{r:5.2f} ({a:.1f} vs {b:.1f} ms)"),
            )  # fmt: skip
            print(
                f"{'small write at 10 tables (ms, aim <= 25, not asserted)':<58} = {ten * 1e3:5.1f}"
                + (f"  plain: {plain[1] * 1e3:5.1f}" if plain else "")
            )
            print(
                f"{f'small write at {big} tables (ms, not asserted)':<58} = {many * 1e3:5.1f}"
                + (f"  plain: {plain[2] * 1e3:5.1f}" if plain else "")
            )
        if "two" in parts:
            (r, after_other, after_own), plain = both(
                "two", lambda p: two_processes(_mk(p), big, n)
            )
            print(
                f"{f'into {big} tables, two processes: after the other / own':<58} = {r:5.2f}"
                f"  (for reference; {after_other * 1e3:.1f} vs {after_own * 1e3:.1f} ms)"
                + _ms(plain, "  plain: {r:5.2f} ({a:.1f} vs {b:.1f} ms)")
            )
            for name in sorted(NAMED) if not args.fast_only else []:
                fast, alone = after_other_without(_mk(root / f"two-{name}"), name, big, n)
                print(
                    f"{f'  the same in one process, {name} plain / all fast':<58} = "
                    f"{alone / fast:5.2f}  ({fast * 1e3:.1f} -> {alone * 1e3:.1f} ms; "
                    "an accelerator pays its way at >= 1.2)"
                )
        if "deep" in parts:
            (r, young, old), plain = both("deep", lambda p: deep(_mk(p), versions, n))
            ok &= _report(
                f"a write to a table with {versions} versions / with 1", r, 1.3,
                f"{young * 1e3:.1f} vs {old * 1e3:.1f} ms",
                _ms(plain, "{r:5.2f} ({a:.1f} vs {b:.1f} ms)"),
            )  # fmt: skip
            (r, young, deep_), plain = both(
                "pipeline", lambda p: pipeline(_mk(p), 100, versions // 3)
            )
            print(
                f"{f'100 tables of {versions // 3} versions written in turn / of 1':<58} = {r:5.2f}"
                f"  (for reference; {young * 1e3:.1f} vs {deep_ * 1e3:.1f} ms)"
                + _ms(plain, "  plain: {r:5.2f} ({a:.1f} vs {b:.1f} ms)")
            )
            (r, after_other, after_own), plain = both(
                "deep-two", lambda p: deep_two_processes(_mk(p), versions, n)
            )
            print(
                f"{f'{versions} versions, two processes: after the other / own':<58} = {r:5.2f}"
                f"  (for reference; {after_other * 1e3:.1f} vs {after_own * 1e3:.1f} ms)"
                + _ms(plain, "  plain: {r:5.2f} ({a:.1f} vs {b:.1f} ms)")
            )
    return 0 if ok else 1


def _mk(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
