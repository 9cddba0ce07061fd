"""Store reads: what one Dagster input and one write cost, counted on a real local store.

Counts every whole-object read, ranged open (a parquet footer) and existence check the
core makes. Targets (issue: one house): an unpinned input resolves and loads in 2 store
reads (the current ``metadata.json`` and the parquet), a write reads nothing back after
recording (0 read-backs: the write returns the metadata record and commit it recorded).

Run: ``python benchmarks/bench_reads.py``. Counts, not times: the machine's load does not
move them.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1]))
import datom_core as dc  # noqa: E402


class CountingStore(dc.LocalStore):
    """A local store that records every read it serves."""

    reads: list[str] = []

    def read_bytes(self, key: str) -> bytes:
        self.reads.append(f"read {key}")
        return super().read_bytes(key)

    def read_verified(self, key: str, expected_sha: str) -> memoryview:
        self.reads.append(f"read {key}")
        return super().read_verified(key, expected_sha)

    def open_read(self, key: str) -> Any:
        self.reads.append(f"open {key}")
        return super().open_read(key)

    def exists(self, key: str) -> bool:
        self.reads.append(f"exists {key}")
        return super().exists(key)


def _count(label: str, call: Callable[[], Any]) -> Any:
    CountingStore.reads.clear()
    result = call()
    print(f"{label:<58} {len(CountingStore.reads):>2} store reads")
    return result


def main() -> None:
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="datom-bench-reads-") as tmp:
        measure(Path(tmp))


def measure(root: Path) -> None:
    store = CountingStore(root / "store")
    conn = dc.init_repo(root / "repo", "BENCH", store)
    frame = pd.DataFrame({"a": range(1000), "b": [1.5] * 1000})
    _count("write: full (a new table)", lambda: conn.write("t", frame))
    _count("write: none (identical data)", lambda: conn.write("t", frame))
    _count("write: metadata_only", lambda: conn.write("t", frame, metadata={"n": 1}))
    result = _count("write: full (changed data)", lambda: conn.write("t", frame.assign(b=2.5)))
    print(
        f"{'write: read-backs after recording (metadata and commit returned)':<58} "
        f"{0 if result.metadata is not None and result.commit else 'n/a':>2}"
    )
    reader = dc.connect(store=store, project_name="BENCH")

    def unpinned_input() -> None:
        md = reader.version("t")
        reader.read("t", md)
        reader.parent("t", md)

    def pinned_input() -> None:
        md = reader.version("t", result.version[:12])
        reader.read("t", md)
        reader.parent("t", md)

    def previous_release_input() -> None:
        version = reader.resolve("t", None)
        reader.read("t", version)
        reader.parent("t", version)

    _count("Dagster input, unpinned (version + read + parent)", unpinned_input)
    _count("Dagster input, pinned by prefix", pinned_input)
    _count("input as the previous release did it (resolve+read+parent)", previous_release_input)


if __name__ == "__main__":
    main()
