"""The example pipeline on a real distributed executor: Dagster's celery executor.

A Redis broker (Debian's ``redis-server``) and four celery workers are started on
loopback for the test and stopped at its end. Each worker has its own ``$DATOM_HOME``, so
each is its own machine as far as datom knows: its own clone of one HTTPS-style git remote
(token auth), all sharing one S3 store (moto) and one S3 inbox. Three monthly deliveries
then an identical re-run go through the full pipeline (onboarding, derived tables, datom
checks), launched on a real temporary Dagster instance.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from dulwich.repo import Repo

import datom_core as dc
from dagster import DagsterEventType, DagsterInstance, execute_job, reconstructable
from example_project.generator import DOMAINS, drop_month
from tests.childsignals import default_signals

from . import defs_celery
from .conftest import meta
from .defs_celery import PREFIX, PROJECT

pytestmark = [
    pytest.mark.slow,
    # "signal": a timeout raises in the test, so that the servers it started are stopped.
    pytest.mark.timeout(600, method="signal"),
    # dagster-celery registers its step task anew for every step it submits.
    pytest.mark.filterwarnings("ignore::celery.exceptions.DuplicateTaskNameWarning"),
]

BIN = Path(sys.executable).parent
WORKERS = 4
MONTHS = (1, 2, 3)
DERIVED_FROM = {"adsl": ("dm", "ex"), "adae": ("ae", "adsl"), "lab_summary": ("lb", "adsl")}
TABLES = (*DOMAINS, *DERIVED_FROM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def _server(command: list[str], env: Mapping[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """A process (in its own session) for the block; then SIGTERM, SIGKILL after 20 s."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            command,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=default_signals,  # the SIGTERM below stops it cleanly
        )
    try:
        yield process
    finally:
        deadline = time.monotonic() + 20
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        while (process.poll() is None or _group_alive(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _wait_for(
    what: str, ready: Callable[[], bool], logs: list[Path], processes: list[subprocess.Popen]
) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        dead = [p.args for p in processes if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            tails = "\n".join(f"--- {log}\n{log.read_text()[-3000:]}" for log in logs)
            pytest.fail(f"{what} never became ready (exited: {dead})\n{tails}")
        time.sleep(0.2)


def _pong(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.exceptions.ConnectionError:
        return False


def _redis(stack: ExitStack, tmp_path: Path) -> str:
    """A Redis server on a free loopback port for the stack's lifetime; its URL.

    Another process may take the port between our probe and Redis binding it: then Redis
    exits at once and another port is tried.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: apt-get install redis-server")
    logs = []
    for attempt in range(3):
        port = _free_port()
        logs.append(tmp_path / f"redis-{attempt}.log")
        command = [
            binary,
            "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
            "--dir", str(tmp_path), "--protected-mode", "yes",
        ]  # fmt: skip
        with ExitStack() as attempt_stack:
            process = attempt_stack.enter_context(_server(command, os.environ, logs[-1]))
            client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
            attempt_stack.callback(client.close)
            deadline = time.monotonic() + 60
            while process.poll() is None and not _pong(client) and time.monotonic() < deadline:
                time.sleep(0.1)
            if process.poll() is None and _pong(client):
                stack.push(attempt_stack.pop_all())
                return f"redis://127.0.0.1:{port}/0"
    tails = "\n".join(f"--- {log}\n{log.read_text()[-2000:]}" for log in logs)
    pytest.fail(f"redis-server did not start\n{tails}")


def _workers(stack: ExitStack, tmp_path: Path, broker: str, env: Mapping[str, str]) -> list[Path]:
    """Four celery workers of one process each; their datom homes."""
    config = tmp_path / "celery_config"
    config.mkdir()
    (config / "dagster_celery_config.py").write_text(
        f"broker_url = {broker!r}\nresult_backend = {broker!r}\n"
    )
    homes, logs, processes = [], [], []
    for i in range(WORKERS):
        home = tmp_path / f"worker-{i}" / "datom"
        home.mkdir(parents=True)
        log = tmp_path / f"worker-{i}.log"
        worker_env = {
            **env,
            "DATOM_HOME": str(home),
            "PYTHONPATH": os.pathsep.join([str(config), env["PYTHONPATH"]]),
        }
        command = [
            str(BIN / "celery"), "-A", "dagster_celery.app", "worker",
            "--pool", "solo", "--concurrency", "1", "--prefetch-multiplier", "1",
            "--without-gossip", "--without-mingle", "-n", f"worker-{i}@%h", "-l", "INFO",
        ]  # fmt: skip
        processes.append(stack.enter_context(_server(command, worker_env, log)))
        homes.append(home)
        logs.append(log)
    app = Celery(broker=broker)
    stack.callback(app.close)

    def all_online() -> bool:
        replies = app.control.ping(timeout=1.0) or []
        return len({name for reply in replies for name in reply}) == WORKERS

    _wait_for("the celery workers", all_online, logs, processes)
    return homes


def _deliver(month: int, tmp_path: Path, s3: Any, bucket: str) -> None:
    """The month's extracts into the S3 inbox, replacing the previous month's files."""
    local = tmp_path / "edc" / f"month-{month}"
    files = {p.name: p for p in drop_month(month, local)}
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="inbox/").get("Contents", [])
    for item in listed:
        if item["Key"].removeprefix("inbox/") not in files:
            s3.delete_object(Bucket=bucket, Key=item["Key"])
    for name, path in files.items():
        s3.put_object(Bucket=bucket, Key=f"inbox/{name}", Body=path.read_bytes())


def _materializations(instance: DagsterInstance, run_id: str) -> dict[str, dict[str, Any]]:
    entries = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        materialization = entry.asset_materialization
        assert materialization is not None
        key = materialization.asset_key.to_user_string()
        assert key not in found, f"{key} materialized twice in run {run_id}"
        found[key] = {k: meta(materialization, k) for k in materialization.metadata}
    return found


def _celery_hosts(instance: DagsterInstance, run_id: str) -> dict[str, str]:
    """Step key -> the celery worker that executed it."""
    hosts = {}
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        data = event.engine_event_data if event else None
        if data and entry.step_key and "Celery worker" in data.metadata:
            hosts[entry.step_key] = str(data.metadata["Celery worker"].value)
    return hosts


def _parents(records: Iterable[Mapping[str, Any]], digits: int = 64) -> dict[str, str]:
    return {p["table"]: p["version"][:digits] for p in records}


def _shown_parents(value: Any) -> dict[str, str]:
    """The ``datom/parents`` entry of a materialization as {table: 12-digit version prefix}.

    Shown as a table of rows, or as a plain list of records.
    """
    records = getattr(value, "records", None)
    rows = [dict(r.data) for r in records] if records is not None else list(value)
    return _parents(rows, 12)


def test_example_pipeline_on_four_celery_workers(
    fresh_instance, tmp_path, s3_endpoint, s3_bucket, s3_admin, git_http_server, monkeypatch
):
    started = time.monotonic()
    token = git_http_server.token
    git_http_server.create_bare("s001-metadata")
    remote = git_http_server.url_for("s001-metadata")
    coordinator_home = tmp_path / "coordinator" / "datom"
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "DAGSTER_HOME": fresh_instance.root_directory,
        "DATOM_GIT_TOKEN": token,
        "STUDY_BUCKET": s3_bucket,
        "STUDY_S3_ENDPOINT": s3_endpoint,
        "STUDY_GIT_REMOTE": remote,
        "STUDY_INBOX": f"s3://{s3_bucket}/inbox",
    }
    for name in ("STUDY_BUCKET", "STUDY_S3_ENDPOINT", "STUDY_GIT_REMOTE", "STUDY_INBOX"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("DATOM_GIT_TOKEN", token)
    monkeypatch.setenv("DATOM_HOME", str(coordinator_home))  # must stay unused
    defs_celery.definitions.cache_clear()

    run_ids = []
    with ExitStack() as stack:
        broker = _redis(stack, tmp_path)
        homes = _workers(stack, tmp_path, broker, env)
        run_config = {"execution": {"config": {"broker": broker, "backend": broker}}}
        for month in (*MONTHS, MONTHS[-1]):  # the last delivery twice: nothing may change
            _deliver(month, tmp_path, s3_admin, s3_bucket)
            with execute_job(
                reconstructable(defs_celery.celery_job),
                instance=fresh_instance,
                run_config=run_config,
                tags={"month": str(month)},
                raise_on_error=True,
            ) as result:
                assert result.success
                run_ids.append(result.run_id)

    used = _assert_spread_over_workers(fresh_instance, run_ids)
    assert not coordinator_home.exists(), "the run's own process opened a datom clone"
    clones = [home / PROJECT / "repo" for home in homes if (home / PROJECT).exists()]
    assert len(clones) == len(used), (used, clones)  # each worker its own clone

    runs = [_materializations(fresh_instance, run_id) for run_id in run_ids]
    reader = dc.clone(
        remote,
        tmp_path / "reader",
        store=dc.S3Store(s3_bucket, PREFIX, endpoint_url=s3_endpoint),
        token_env="DATOM_GIT_TOKEN",
    )
    _assert_each_version_once(reader, runs)
    _assert_parents_exact(reader, runs)
    report = reader.validate()
    assert report.ok and not report.problems, str(report)
    for clone in clones:
        worker = dc.connect(clone, token_env="DATOM_GIT_TOKEN")
        worker.pull()
        assert worker.repo.head() == reader.repo.head()
        assert worker.validate(verify_data=False).ok

    _assert_token_nowhere(token, reader, [*clones, reader.path], tmp_path, s3_admin, s3_bucket)
    print(f"celery: {len(run_ids)} runs on {dict(used)} in {time.monotonic() - started:.0f} s")


def _assert_spread_over_workers(instance: DagsterInstance, run_ids: list[str]) -> Counter[str]:
    """Every step of every run ran in one of our celery workers, more than one worker in all."""
    hosts = [_celery_hosts(instance, run_id) for run_id in run_ids]
    steps = 1 + len(DERIVED_FROM) * 2  # onboarding, three derived assets, three checks
    assert all(len(h) == steps for h in hosts), hosts
    used = Counter(host.split("@")[0] for h in hosts for host in h.values())
    assert set(used) <= {f"worker-{i}" for i in range(WORKERS)} and len(used) >= 2, used
    return used


def _assert_each_version_once(reader: dc.Connection, runs: list[dict[str, dict[str, Any]]]) -> None:
    """Each month gave every table one new version, recorded once; the re-run recorded none."""
    for run in runs:
        assert set(run) == set(TABLES)
    assert all(m["datom/change"] == "none" for m in runs[-1].values()), runs[-1]
    monthly = runs[: len(MONTHS)]
    for table in TABLES:
        assert "none" not in [run[table]["datom/change"] for run in monthly], table
        written = [run[table]["datom/version"] for run in monthly]
        history = [v.version for v in reader.history(table)]
        assert history == written[::-1], (table, history, written)
        assert runs[-1][table]["datom/version"] == history[0]
    assert {t.name: t.version_count for t in reader.tables()} == dict.fromkeys(TABLES, len(MONTHS))
    # One commit per version after the project's first: no retry committed twice.
    assert len(reader.repo.log()) == 1 + len(TABLES) * len(MONTHS)


def _assert_parents_exact(reader: dc.Connection, runs: list[dict[str, dict[str, Any]]]) -> None:
    """Each derived version's parents are the upstream versions of the same run."""
    for run in runs:
        for table, upstream in DERIVED_FROM.items():
            expected = {u: run[u]["datom/version"] for u in upstream}
            recorded = reader.metadata(table, run[table]["datom/version"])["parents"]
            assert _parents(recorded) == expected, (table, recorded)
            shown = _shown_parents(run[table]["datom/parents"])
            assert shown == _parents([{"table": t, "version": v} for t, v in expected.items()], 12)


def _assert_token_nowhere(
    token: str,
    reader: dc.Connection,
    clones: list[Path],
    tmp_path: Path,
    s3: Any,
    bucket: str,
) -> None:
    """Not in any file of the test (git configs, worker and broker logs, the Dagster
    instance's run and event storage), any git object, any store object or any metadata."""
    secret = token.encode()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path
    for clone in clones:
        assert token not in (clone / ".git" / "config").read_text(), clone
        repo = Repo(str(clone))
        try:
            for sha in repo.object_store:
                assert secret not in repo.object_store[sha].as_raw_string(), sha
        finally:
            repo.close()
    for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        assert secret not in s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read(), item
    for table in TABLES:
        for version in reader.history(table):
            assert token not in json.dumps(dict(reader.metadata(table, version.version)))
