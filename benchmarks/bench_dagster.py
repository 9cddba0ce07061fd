"""Dagster overhead of the datom IO manager, measured in one run (ratios only).

Twenty small pandas assets (a chain of 10 and a fan-out 1 -> 9) are materialized in
process with ``dagster.materialize``; every run writes new data unless it is a re-run.
Printed, each as the best of N runs measured interleaved (as ``_measure.ratio_of`` does),
in wall time (the target) and in CPU time of all threads (steadier on a loaded machine, but
blind to waiting on the disk):

  DatomIOManager / FilesystemIOManager, 20 new versions       target <= 1.5
  dagster-deltalake and dagster-iceberg IO managers / filesystem, the reference ratios
  identical re-run (every asset records none) / filesystem    target <= 1.2
  one 1,000,000-row asset / filesystem                        target <= 2.0
      (and dagster-deltalake's and dagster-iceberg's, measured in the same turns)

and the time datom, Delta and Iceberg add per asset over the filesystem manager. The
Iceberg manager (pandas, a SqlCatalog on sqlite in the run's folder) is optional:
"not installed" is printed without dagster-iceberg. The datom project
keeps its history across runs (it grows by 20 versions a run), as a deployment's does.
``--profile`` also prints where datom runs spend their time (cProfile: datom frames by
cumulative time, then all frames by own time), in a young project and in the measured one.
``--repeat N`` sets N (default 5).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

# This checkout's packages, wherever the virtualenv was installed from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dagster_deltalake import DeltalakeBaseArrowTypeHandler, DeltaLakeIOManager, LocalConfig  # noqa: E402

from _measure import file_churn_cost  # noqa: E402
from dagster import (  # noqa: E402
    AssetIn,
    AssetsDefinition,
    DagsterInstance,
    FilesystemIOManager,
    asset,
    materialize,
)
from datom_dagster import DatomIOManager, DatomResource, LocalStorage  # noqa: E402

CHAIN = 10
FANOUT = 9
ROWS = 200
BIG_ROWS = 1_000_000

# Dagster's console log at ERROR on both sides: the IO managers' cost, not the log's.
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}

# Bumped before every run that must write new data, read by every asset body.
STATE = {"run": 0}


def _small_frame(tag: str) -> pd.DataFrame:
    n = np.arange(ROWS)
    return pd.DataFrame(
        {
            "USUBJID": [f"S001-{i:04d}" for i in range(ROWS)],
            "PARAMCD": np.where(n % 2 == 0, "ALT", "AST"),
            "AVAL": n * 0.5 + STATE["run"],
            "VISITNUM": n % 7,
            "SOURCE": tag,
        }
    )


def _chain() -> list[AssetsDefinition]:
    assets: list[AssetsDefinition] = []

    @asset(name="chain_0")
    def first() -> pd.DataFrame:
        return _small_frame("chain_0")

    assets.append(first)
    for i in range(1, CHAIN):

        def make(i: int) -> AssetsDefinition:
            @asset(name=f"chain_{i}", ins={"upstream": AssetIn(key=f"chain_{i - 1}")})
            def link(upstream: pd.DataFrame) -> pd.DataFrame:
                out = upstream.copy()
                out["AVAL"] = out["AVAL"] + 1
                out["SOURCE"] = f"chain_{i}"
                return out

            return link

        assets.append(make(i))
    return assets


def _fanout() -> list[AssetsDefinition]:
    @asset(name="fan_root")
    def root() -> pd.DataFrame:
        return _small_frame("fan_root")

    def make(i: int) -> AssetsDefinition:
        @asset(name=f"fan_{i}", ins={"upstream": AssetIn(key="fan_root")})
        def leaf(upstream: pd.DataFrame) -> pd.DataFrame:
            out = upstream[upstream["VISITNUM"] != i % 7].reset_index(drop=True)
            out["SOURCE"] = f"fan_{i}"
            return out

        return leaf

    return [root, *(make(i) for i in range(1, FANOUT + 1))]


SMALL_ASSETS = [*_chain(), *_fanout()]


def _big_base() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = np.arange(BIG_ROWS)
    return pd.DataFrame(
        {
            "USUBJID": pd.Series(n // 200).map(lambda s: f"S001-{s:05d}"),
            "PARAMCD": np.array(["ALT", "AST", "BILI", "CREAT"])[n % 4],
            "AVAL": rng.normal(40.0, 12.0, BIG_ROWS),
            "VISITNUM": (n % 20).astype("int64"),
            "ADT": pd.Timestamp("2024-01-01") + pd.to_timedelta(n % 365, unit="D"),
        }
    )


BIG = {"base": pd.DataFrame()}


@asset(name="big")
def big_asset() -> pd.DataFrame:
    out = BIG["base"].copy()
    out.loc[0, "AVAL"] = float(STATE["run"])  # new data every run: a full write
    return out


# -- IO managers ------------------------------------------------------------------------------


class _PandasHandler(DeltalakeBaseArrowTypeHandler[pd.DataFrame]):
    """pandas <-> arrow for dagster-deltalake (what dagster-deltalake-pandas provides)."""

    def from_arrow(self, obj: pa.RecordBatchReader, target_type: type) -> pd.DataFrame:
        return obj.read_pandas()

    def to_arrow(self, obj: pd.DataFrame) -> tuple[pa.RecordBatchReader, dict[str, Any]]:
        return pa.Table.from_pandas(obj, preserve_index=False).to_reader(), {}

    @property
    def supported_types(self) -> Sequence[type]:
        return [pd.DataFrame]


class DeltaLakePandasIOManager(DeltaLakeIOManager):
    @staticmethod
    def type_handlers() -> Sequence[Any]:
        return [_PandasHandler()]

    @staticmethod
    def default_load_type() -> type | None:
        return pd.DataFrame


def iceberg_io_manager(root: Path, name: str) -> Any | None:
    """dagster-iceberg's pandas IO manager on a sqlite catalog under ``root``; None when
    dagster-iceberg is not installed."""
    try:
        from dagster_iceberg.config import IcebergCatalogConfig
        from dagster_iceberg.io_manager.pandas import PandasIcebergIOManager
        from pyiceberg.catalog.sql import SqlCatalog
    except ImportError:
        return None
    # Its preview notices and pyiceberg's "Delete operation did not match any records" (an
    # overwrite of a new table) would bury the ratios.
    warnings.filterwarnings("ignore", message=r".* is currently in preview")
    warnings.filterwarnings("ignore", message="Delete operation did not match any records")
    # Iceberg's v2 tables hold microseconds: the big asset's nanosecond dates are cut down.
    os.environ.setdefault("PYICEBERG_DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE", "true")
    folder = root / name
    (folder / "warehouse").mkdir(parents=True)
    properties = {
        "uri": f"sqlite:///{folder}/catalog.db",
        "warehouse": f"file://{folder}/warehouse",
    }
    # The namespace made first: dagster-iceberg 0.3 lists it before creating it, which
    # pyiceberg 0.12's SQL catalog refuses for a namespace that does not exist yet.
    SqlCatalog("bench", **properties).create_namespace("bench")
    return PandasIcebergIOManager(
        name="bench", config=IcebergCatalogConfig(properties=properties), namespace="bench"
    )


def datom_io_manager(root: Path, name: str) -> DatomIOManager:
    """A datom IO manager on a local project (store and embedded git remote under ``root``)."""
    project = DatomResource(
        project_name="BENCH",
        clone_path=str(root / name / "repo"),
        storage=LocalStorage(path=str(root / name / "store")),
    )
    return DatomIOManager(datom=project)


# -- measuring --------------------------------------------------------------------------------


def _runner(
    assets: list[AssetsDefinition], io_manager: Any, *, new_data: bool
) -> Callable[[], None]:
    def run() -> None:
        if new_data:
            STATE["run"] += 1
        with DagsterInstance.ephemeral() as instance:
            result = materialize(
                assets,
                instance=instance,
                resources={"io_manager": io_manager},
                run_config=QUIET,
                raise_on_error=True,
            )
        assert result.success

    return run


def _changes(assets: list[AssetsDefinition], io_manager: DatomIOManager) -> set[str]:
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            assets, instance=instance, resources={"io_manager": io_manager}, run_config=QUIET
        )
    return {
        str(e.step_materialization_data.materialization.metadata["datom/change"].value)
        for e in result.get_asset_materialization_events()
    }


@dataclass(frozen=True)
class Timing:
    """The best wall time and the best CPU time (all threads) of a run, in seconds."""

    wall: float
    cpu: float

    def ratio(self, other: Timing) -> str:
        return f"{self.wall / other.wall:5.2f} wall, {self.cpu / other.cpu:5.2f} CPU"


def fastest(runs: Sequence[Callable[[], None]], repeat: int) -> list[Timing]:
    """Best-of-``repeat`` wall and CPU times of each run, the runs measured in turn.

    As in ``_measure.ratio_of``: alternating spreads the machine's drift over every side;
    CPU time is the work done, which other load on the machine barely changes (it leaves
    out waiting on the disk, which the wall time counts).
    """
    walls: list[list[float]] = [[] for _ in runs]
    cpus: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, wall, cpu in zip(runs, walls, cpus, strict=True):
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            run()
            wall.append(time.perf_counter() - wall_start)
            cpu.append(time.process_time() - cpu_start)
    return [Timing(min(w), min(c)) for w, c in zip(walls, cpus, strict=True)]


def _profile(run: Callable[[], None], title: str, limit: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    for order, restriction, where in (
        ("cumulative", "datom_", "datom frames, by cumulative time"),
        ("tottime", "", "all frames, by own time"),
    ):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(order)
        stats.print_stats(restriction, limit) if restriction else stats.print_stats(limit)
        print(f"\n== profile: {title} ({where}) ==")
        print(_trim(out.getvalue()))


def _trim(report: str) -> str:
    lines = report.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    checkout = f"{Path(__file__).resolve().parents[1]}/"
    shown = (line.replace(checkout, "").replace(sys.prefix, "<venv>") for line in lines[start:])
    return "\n".join(shown)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-lines", type=int, default=40)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="datom-bench-dagster-"))
    try:
        started = time.perf_counter()
        datom = datom_io_manager(root, "small")
        filesystem = FilesystemIOManager(base_dir=str(root / "fs"))
        shape = f"{CHAIN}-chain + 1->{FANOUT} fan-out, {ROWS} rows each"
        print(f"{len(SMALL_ASSETS)} small pandas assets ({shape}), best of {args.repeat},")
        print("interleaved; ratios only (the machine may be loaded)")
        print(f"before: {file_churn_cost(root)}")
        measure_new_versions(datom, filesystem, root, args.repeat)
        measure_rerun(datom, filesystem, args.repeat)
        measure_big(datom_io_manager(root, "big"), filesystem, root, max(3, args.repeat // 2))
        commits = len(datom.connection().repo.log())
        elapsed = time.perf_counter() - started
        print(f"after: {file_churn_cost(root)}")
        print(f"(measured in {elapsed:.0f} s; the project grew to {commits} commits)")
        if args.profile:
            profile_runs(datom, datom_io_manager(root, "young"), args.profile_lines)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure_new_versions(
    datom: DatomIOManager, filesystem: FilesystemIOManager, root: Path, repeat: int
) -> None:
    """datom, filesystem, Delta and Iceberg on 20 assets that all get new data, in turn."""
    managers = {"datom": datom, "filesystem": filesystem, **_peers(root, "small")}
    runs = [_runner(SMALL_ASSETS, m, new_data=True) for m in managers.values()]
    for warm in runs:  # first use: project creation, imports
        warm()
    timings = dict(zip(managers, fastest(runs, repeat), strict=True))
    fs_time = timings["filesystem"]
    n = len(SMALL_ASSETS)
    print(
        f"datom / filesystem, new versions      = {timings['datom'].ratio(fs_time)}  "
        "(target <= 1.5)"
    )
    for name in ("delta", "iceberg"):
        shown = timings[name].ratio(fs_time) if name in timings else "not installed"
        print(f"{name + ' / filesystem (reference)':37s} = {shown}")
    added = ", ".join(
        f"{name} {(t.wall - fs_time.wall) / n * 1000:.1f} ms"
        for name, t in timings.items()
        if name != "filesystem"
    )
    print(f"added per asset (wall): {added} (filesystem run {fs_time.wall * 1000:.0f} ms)")


def _peers(root: Path, name: str) -> dict[str, Any]:
    """The table formats' IO managers under ``root``: Delta, and Iceberg if installed."""
    delta = DeltaLakePandasIOManager(
        root_uri=str(root / f"delta-{name}"), storage_options=LocalConfig()
    )
    iceberg = iceberg_io_manager(root, f"iceberg-{name}")
    return {"delta": delta, **({"iceberg": iceberg} if iceberg is not None else {})}


def measure_rerun(datom: DatomIOManager, filesystem: FilesystemIOManager, repeat: int) -> None:
    """The same 20 assets again on unchanged data: datom records none for every one."""
    datom_again = _runner(SMALL_ASSETS, datom, new_data=False)
    fs_again = _runner(SMALL_ASSETS, filesystem, new_data=False)
    datom_again()  # the current data, once: from now on every asset records none
    changes = _changes(SMALL_ASSETS, datom)
    assert changes == {"none"}, f"an identical re-run recorded {changes}"
    datom_time, fs_time = fastest([datom_again, fs_again], repeat)
    print(f"datom / filesystem, identical re-run  = {datom_time.ratio(fs_time)}  (target <= 1.2)")
    added = (datom_time.wall - fs_time.wall) / len(SMALL_ASSETS) * 1000
    print(
        f"added per asset (wall): datom {added:.1f} ms (filesystem run {fs_time.wall * 1000:.0f} ms)"
    )


def measure_big(
    datom: DatomIOManager, filesystem: FilesystemIOManager, root: Path, repeat: int
) -> None:
    """One asset of BIG_ROWS rows, new data each run: datom, filesystem, Delta, Iceberg."""
    BIG["base"] = _big_base()
    managers = {"datom": datom, "filesystem": filesystem, **_peers(root, "big")}
    runs = [_runner([big_asset], m, new_data=True) for m in managers.values()]
    for warm in runs:
        warm()
    timings = dict(zip(managers, fastest(runs, repeat), strict=True))
    fs_time = timings["filesystem"]
    print(
        f"datom / filesystem, 1M-row asset      = {timings['datom'].ratio(fs_time)}  "
        "(target <= 2.0)"
    )
    for name in ("delta", "iceberg"):
        shown = timings[name].ratio(fs_time) if name in timings else "not installed"
        print(f"{name + ' / filesystem, 1M-row asset':37s} = {shown}")


def profile_runs(grown: DatomIOManager, young: DatomIOManager, limit: int) -> None:
    """Profiles of new versions and re-runs in a young project (one earlier run: the fixed
    costs) and in the measured one (what grows with history), then of the big asset."""
    n = len(SMALL_ASSETS)
    for label, io_manager in (("young", young), ("grown", grown)):
        new = _runner(SMALL_ASSETS, io_manager, new_data=True)
        again = _runner(SMALL_ASSETS, io_manager, new_data=False)
        new()
        commits = len(io_manager.connection().repo.log())
        title = f"{n} small assets, new versions, {label} project ({commits} commits)"
        _profile(new, title, limit)
        again()
        _profile(again, f"{n} small assets, identical re-run, {label} project", limit)
    big = _runner([big_asset], grown, new_data=True)
    big()
    _profile(big, f"one {BIG_ROWS:,}-row asset", limit)


if __name__ == "__main__":
    main()
