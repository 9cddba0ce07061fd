"""``make demo``: the STUDY-001 story end to end, on the embedded default.

A local store and a local bare git remote under ``.demo/`` (no server, no account). Month
by month, the EDC extracts are dropped into the inbox; the inbox sensor requests one
onboarding run per new or changed file; the ``derive`` job rebuilds the analysis tables.
Month 3 is locked as the data cut ``STUDY-001 DB lock`` (one set version pinning every
table); after month 4's extracts arrive, a re-derivation pinned to the cut reproduces the
locked ``adsl``/``adae`` versions, then month 4 is derived as usual, and materializing the
lock again is refused (it is a locked cut: its members stay at month 3). Then everything runs
again to show that nothing changed, and the results are printed: tables and versions, the
history of ``dm``, the lineage of ``adae``, and ``validate``.
"""

import os
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.tree import Tree

MONTHS = (1, 2, 3)
LOCKED_MONTH = 3
QUIET = {
    "loggers": {"console": {"config": {"log_level": "WARNING"}}}
}  # the story, not Dagster's debug log
# A step refused on purpose: the story tells the refusal, not Dagster's error log of it.
REFUSAL_SHOWN_BELOW = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
console = Console(width=None if sys.stdout.isatty() else 110)


def main(argv: list[str] | None = None) -> int:
    root = Path(os.environ.get("DATOM_DEMO_DIR", ".demo")).absolute()
    if root.exists():
        shutil.rmtree(root)
    (root / "dagster").mkdir(parents=True)
    (root / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ["DATOM_HOME"] = str(root / "datom")
    os.environ["DAGSTER_HOME"] = str(root / "dagster")
    started = time.perf_counter()

    from dagster import DagsterInstance
    from example_project.definitions import PROJECT, defs
    from example_project.generator import drop_month

    instance = DagsterInstance.get()
    conn = defs.resources["datom"].connection()
    story = _Story(defs, instance)
    console.rule(f"[bold]STUDY-001 on datom[/] — project {PROJECT}, store {conn.store.url}")
    locked: dict = {}  # the lock's materialization metadata, once month 3 is derived
    for month in (*MONTHS, LOCKED_MONTH + 1):
        console.rule(f"Month {month} cut-off")
        files = drop_month(month, conn.path / "input_files")
        console.print("dropped " + ", ".join(p.name for p in files))
        story.onboard()
        if month > LOCKED_MONTH:
            _rederive_as_of(story, locked, conn)
        story.derive()
        if month == LOCKED_MONTH:
            locked = story.lock()
        elif month > LOCKED_MONTH:
            story.try_to_move_the_lock(locked)

    console.rule("Run everything again: nothing may change")
    before = {t.name: t.current_version for t in conn.tables()}
    assert story.onboard() == 0, "the inbox sensor requested runs for unchanged files"
    changes = story.derive()
    after = {t.name: t.current_version for t in conn.tables()}
    assert set(changes.values()) == {"none"} and before == after, "a re-run changed a version"
    console.print(
        "[green]proof:[/] no onboarding run requested; every derived asset reported change=none; all versions identical"
    )

    _show_tables(conn)
    _show_history(conn, "dm")
    _show_lineage(conn, "adae")
    story.check_lock()
    report = conn.validate()
    console.print(f"validate: [green]{report}[/]" if report.ok else f"validate: [red]{report}[/]")
    console.print(
        f"\nfinished in {time.perf_counter() - started:.0f} s. Open the Dagster UI on the same data:"
    )
    console.print(
        f"  . .venv/bin/activate && DATOM_HOME={root / 'datom'} DAGSTER_HOME={root / 'dagster'} dg dev",
        soft_wrap=True,
    )
    console.print(f"  .venv/bin/datom --repo {conn.path} list", soft_wrap=True)
    return 0 if report.ok else 1


class _Story:
    """Drives the definitions the way the Dagster daemon would: sensor ticks, then runs."""

    def __init__(self, defs, instance) -> None:
        self.defs, self.instance = defs, instance
        self.sensor = defs.resolve_sensor_def("datom_inbox_sensor")
        self.cursor: str | None = None
        self.versions: dict[str, str] = {}

    def onboard(self) -> int:
        from dagster import build_sensor_context

        context = build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"datom": self.defs.resources["datom"]},
        )
        result = self.sensor(context)
        self.cursor = result.cursor
        job = self.defs.resolve_implicit_global_asset_job_def()
        for request in result.run_requests:
            run = job.execute_in_process(
                instance=self.instance,
                asset_selection=request.asset_selection,
                tags=request.tags,
                run_config=QUIET,
            )
            key = request.asset_selection[0]
            meta = _metadata(run, key)
            console.print(
                f"  onboarded {key.to_user_string():<4} change={meta['datom/change']:<13} version={meta['datom/version'][:12]}"
            )
        if not result.run_requests:
            console.print(f"  sensor: {result.skip_reason.skip_message}")
        return len(result.run_requests)

    def lock(self) -> dict:
        """Materialize the ``STUDY-001 DB lock`` cut; its materialization's metadata."""
        from example_project.defs.cut import db_lock

        run = self.defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=self.instance, asset_selection=[db_lock.key], run_config=QUIET
        )
        meta = _metadata(run, db_lock.key)
        console.rule(f"Database lock: month {LOCKED_MONTH} is the cut '{meta['datom/set']}'")
        console.print(
            f"  cut {meta['datom/set']!r} version={meta['datom/set_version']} "
            f"members={meta['datom/member_count']} change={meta['datom/change']}"
        )
        table = Table(
            title=f"Members of {meta['datom/set']!r} (project {meta['datom/set_project']})"
        )
        for column in ("table", "version"):
            table.add_column(column)
        for record in meta["datom/members"].records:
            table.add_row(record.data["table"], record.data["version"][:12])
        console.print(table)
        return meta

    def try_to_move_the_lock(self, locked: dict) -> None:
        """Materialize the lock again after newer data arrived: it refuses and stays."""
        from example_project.defs.cut import db_lock

        run = self.defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=self.instance,
            asset_selection=[db_lock.key],
            run_config=REFUSAL_SHOWN_BELOW,
            raise_on_error=False,
        )
        assert not run.success, "the locked cut moved"
        [failure] = [e for e in run.all_events if e.is_step_failure]
        reason = str(getattr(failure.event_specific_data, "error", "")).splitlines()
        moves = [line for line in reason if line.startswith("- ")]
        console.print(
            f"[green]proof:[/] materializing the locked cut {locked['datom/set']!r} again was "
            f"refused; it stays at {locked['datom/set_version'][:12]} "
            f"({len(moves)} members would have moved)"
        )
        for line in moves:
            console.print(f"  {line}")

    def check_lock(self) -> None:
        """Run the lock's check: every locked version still resolves and matches its bytes."""
        from dagster import AssetSelection, materialize
        from example_project.defs.cut import db_lock, db_lock_check

        run = materialize(
            [db_lock, db_lock_check],
            instance=self.instance,
            resources={"io_manager": self.defs.resources["io_manager"]},
            selection=AssetSelection.checks(db_lock_check),
            run_config=QUIET,
        )
        [evaluation] = run.get_asset_check_evaluations()
        checked = evaluation.metadata["datom/members_checked"].value
        verdict = "[green]passed[/]" if evaluation.passed else "[red]failed[/]"
        console.print(f"lock check: {verdict} ({checked} locked versions resolve and verify)")

    def derive(self, tags: dict[str, str] | None = None) -> dict[str, str]:
        run = self.defs.resolve_job_def("derive").execute_in_process(
            instance=self.instance, run_config=QUIET, tags=tags
        )
        changes = {}
        self.versions = {}
        for event in run.get_asset_materialization_events():
            mat = event.step_materialization_data.materialization
            meta = {k: v.value for k, v in mat.metadata.items()}
            name = mat.asset_key.to_user_string()
            changes[name] = meta["datom/change"]
            self.versions[name] = meta["datom/version"]
            console.print(
                f"  derived   {name:<11} change={meta['datom/change']:<13} version={meta['datom/version'][:12]} rows={meta['dagster/row_count']}"
            )
        return changes


def _rederive_as_of(story: _Story, locked: dict, conn) -> None:
    """Re-derive with every input pinned to the lock: the locked outputs come back."""
    from datom_dagster import AS_OF_SET_TAG

    pin = locked["datom/as_of_set"].split("=", 1)[1]
    console.rule(f"Re-derive as of the lock ({AS_OF_SET_TAG}={pin})")
    changes = story.derive(tags={AS_OF_SET_TAG: pin})
    cut = {r.data["table"]: r.data["version"] for r in locked["datom/members"].records}
    for name in ("adsl", "adae"):
        assert story.versions[name] == cut[name], f"{name} as of the lock is not the locked version"
        assert changes[name] == "none", f"{name} as of the lock changed"
        parents = {p.table: p.version for p in conn.version(name).parents}
        assert all(cut[t] == v for t, v in parents.items()), f"{name}: parents not the lock's"
    console.print(
        f"[green]proof:[/] as of {locked['datom/set']!r}@{locked['datom/set_version'][:12]}, "
        f"adsl={story.versions['adsl'][:12]} and adae={story.versions['adae'][:12]} are the locked "
        "versions (change=none), built from the locked inputs, although month "
        f"{LOCKED_MONTH + 1}'s extracts are onboarded"
    )


def _metadata(run, key) -> dict:
    for event in run.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        if mat.asset_key == key:
            return {k: v.value for k, v in mat.metadata.items()}
    return {}


def _show_tables(conn) -> None:
    table = Table(title="Tables (from the store's manifest)")
    for column in ("table", "current version", "data_sha", "versions", "format", "size"):
        table.add_column(column)
    for t in conn.tables():
        fmt = t.original_format or "derived"
        table.add_row(
            t.name,
            t.current_version[:12],
            t.current_data_sha[:12],
            str(t.version_count),
            fmt,
            f"{t.size_bytes:,} B",
        )
    console.print(table)


def _show_history(conn, name: str) -> None:
    table = Table(title=f"History of {name} (newest first)")
    for column in ("version", "data_sha", "file sha-256", "when", "message"):
        table.add_column(column)
    for h in conn.history(name):
        table.add_row(
            h.version[:12],
            h.data_sha[:12],
            (h.original_file_sha or "")[:12],  # the dropped file's own bytes
            h.timestamp,
            h.commit_message,
        )
    console.print(table)


def _show_lineage(conn, name: str) -> None:
    node = conn.lineage(name, depth="parents")
    tree = Tree(f"[bold]{node.table}[/] {node.version[:12]}")
    _grow(tree, node)
    console.print(f"Lineage of {name} (exact parent versions):")
    console.print(tree)
    sources = conn.lineage(name)
    console.print("raw sources: " + ", ".join(f"{s.table}@{s.version_sha[:12]}" for s in sources))


def _grow(tree: Tree, node) -> None:
    for parent in node.parents:
        _grow(tree.add(f"{parent.table} {(parent.version or '')[:12]}"), parent)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
