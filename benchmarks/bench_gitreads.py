"""History reads of one clone, each named accelerator against its plain path in one run.

Prints, for a table with ``--versions`` versions (one commit each, 50 commits of other
tables on top) in a 200-table project, the median time of ``log`` of its metadata file,
``log`` of the last 60 commits, ``last_commit_touching``, the newest version's commit and
every version's commit (``datom_core._project._commits``), each with an accelerator
(``history``: the path index and first parents; ``commits``: parsed commits kept by
id) on its plain path (``DATOM_PLAIN=<name>``) and with all on, calls alternated; and
"plain / fast" (an accelerator pays its way at >= 1.2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from bench_scale import new_project, seed_tables, seed_versions, small_table, timed
from datom_core._project._commits import commits_by_version, newest_commit_of


def interleaved(
    name: str, call: Callable[[], object], n: int, warm: int = 3
) -> tuple[float, float]:
    """Median seconds of ``call`` with every accelerator and with ``name`` plain."""
    times: dict[str, list[float]] = {"0": [], name: []}
    for i in range(n + warm):
        for mode in ("0", name) if i % 2 else (name, "0"):
            os.environ["DATOM_PLAIN"] = mode
            try:
                took = timed(call)
            finally:
                os.environ.pop("DATOM_PLAIN", None)
            if i >= warm:
                times[mode].append(took)
    return statistics.median(times["0"]), statistics.median(times[name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="datom-bench-gitreads-") as tmp:
        conn = new_project(Path(tmp), "p")
        seed_tables(conn, [f"s{i:04d}" for i in range(200)])
        seed_versions(conn, "old", args.versions)
        for i in range(50):
            conn.write(f"s{i:04d}", small_table())
        repo, path = conn.repo, "old/metadata.json"
        newest = json.loads(repo.read("old/version_history.json") or b"")[0]["version"]
        calls: dict[str, Callable[[], object]] = {
            "log of one file": lambda: repo.log(path),
            "log, last 60 commits": lambda: repo.log(max_entries=60),
            "last_commit_touching": lambda: repo.last_commit_touching(path),
            "the newest version's commit": lambda: newest_commit_of(repo, "old", newest),
            "every version's commit": lambda: commits_by_version(repo, "old"),
        }
        for name in ("history", "commits"):
            for label, call in calls.items():
                fast, plain = interleaved(name, call, args.rounds)
                print(
                    f"{f'{label}, {name} plain / all fast':<48} = {plain / fast:7.2f}  "
                    f"({fast * 1e3:.2f} -> {plain * 1e3:.2f} ms)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
