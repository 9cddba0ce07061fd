"""Concurrent writers SIGKILLed at random moments: what is left must converge.

Each round starts writer processes (own clones, and two processes through one shared
clone) that write small versions of three tables, compacting the remote and their clones
at every push (the widest races), then SIGKILLs some of them at a random moment (seeded).
After the rounds it checks, and exits 1 on any miss:

  * every surviving writer exited cleanly (a killed one: -9);
  * ``validate`` on a fresh clone, before any repair, finds no version without its store
    snapshot (a killed writer may leave a lagging mirror, printed; never a version that
    cannot be read by id), then is clean after ``validate(fix=True)``;
  * every version a writer was told of is recorded, and once;
  * every recorded version reads from the store alone (no clone);
  * ``git fsck --strict`` passes on every clone (and on a local remote);
  * every writer's clone validates clean.

``--remote https`` writes through a smart-HTTP git server on loopback (token auth);
``--store s3`` through moto's S3 server on loopback. ``--faults`` puts a fault proxy
(``tests/faultproxy.py``) in front of each (so it needs ``--remote https`` or
``--store s3``) and drops one random fault at a time into the writers' traffic (lost
answers, 5xx, SlowDown, resets, truncated bodies, stalls); its writers run a failed write
again, as a user would. It checks after every round, with the faults off: every version
any writer was told of reads by id with its data (its ``data_sha``), ``validate`` is
clean after ``fix`` (orphaned objects of failed writes removed, none left), and
``git fsck`` passes on every clone and on the remote. Not part of ``make test`` (the seeded
kill test in ``tests/core/test_concurrency_clones.py`` is its small, fixed sibling); run it
after any change to the git layer or the write path:

  python benchmarks/stress_writers.py --rounds 5 --seed 7 --remote https --store s3
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

import datom_core as dc
from datom_core._git import MetadataRepo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.faultproxy import FaultProxy  # noqa: E402
from tests.gitserver import GitHTTPServer  # noqa: E402
from tests.kills import TABLES, kill_round, store_of, told  # noqa: E402
from tests.reliability.faultrun import (  # noqa: E402
    GIT_FAULTS,
    S3_FAULTS,
    Injector,
    fault_round,
    told_with_data,
)

_TOKEN = "stress-token"
_BUCKET = "datom-stress"
_MOTO_ENV = {  # dummy credentials, and no look for real ones: moto on loopback only
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


class _Servers:
    """The remote (a local bare repository or an HTTPS server) and the store's backend."""

    def __init__(self, tmp: Path, remote: str, store: str) -> None:
        self.http: GitHTTPServer | None = None
        self.moto: Any = None
        if store == "s3":
            os.environ.update(_MOTO_ENV)
            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request
            self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            self.moto.start()
            host, port = self.moto.get_host_and_port()
            endpoint = f"http://{host}:{port}"
            self.spec = {"kind": "s3", "bucket": _BUCKET, "prefix": "stress", "endpoint": endpoint}
            s3 = boto3.client("s3", endpoint_url=self.spec["endpoint"], region_name="us-east-1")
            s3.create_bucket(Bucket=_BUCKET)
        else:
            self.spec = {"kind": "local", "path": str(tmp / "store")}
        origin = tmp / "origin"
        if remote == "https":
            (tmp / "srv").mkdir()
            self.http = GitHTTPServer(tmp / "srv", _TOKEN)
            self.http.start()
            self.http.create_bare("proj")
            os.environ["DATOM_GIT_TOKEN"] = _TOKEN
            self.url = self.http.url_for("proj")
            self.conn = dc.init_repo(origin, "STRESS", store_of(self.spec), self.url)
        else:
            self.conn = dc.init_repo(origin, "STRESS", store_of(self.spec))
            self.url = str(MetadataRepo.embedded_remote_path(origin))

        # What the writers use: the same, or (with faults) through the fault proxies.
        self.proxies: list[tuple[FaultProxy, list[Any]]] = []
        self.writer_url, self.writer_spec = self.url, dict(self.spec)

    def add_faults(self) -> None:
        """Put a fault proxy in front of the git server and of S3 (those in use)."""
        if self.http is not None:
            git = FaultProxy(f"http://127.0.0.1:{self.http.port}")
            self.proxies.append((git, GIT_FAULTS))
            self.writer_url = git.url_for("proj")
        if self.moto is not None:
            s3 = FaultProxy(self.spec["endpoint"])
            self.proxies.append((s3, S3_FAULTS))
            self.writer_spec = {**self.spec, "endpoint": s3.url}

    def stop(self) -> None:
        for proxy, _ in self.proxies:
            proxy.close()
        if self.http is not None:
            self.http.stop()
        if self.moto is not None:
            self.moto.stop()


def _round(
    rng: random.Random, clones: list[Path], spec: dict[str, str], writes: int, logs: list[Path]
) -> list[str]:
    """One round (:func:`tests.kills.kill_round`); what went wrong."""
    try:
        codes = kill_round(rng, clones, spec, writes, logs, longest_pause=1.5)
    except TimeoutError as e:
        return [str(e)]
    return [f"writer exit codes {codes}"] if any(c not in (0, -9) for c in codes) else []


def _fault_round(
    rng: random.Random, servers: _Servers, clones: list[Path], writes: int, logs: list[Path]
) -> list[str]:
    """One round of tolerant writers with faults injected into their traffic."""
    with Injector(random.Random(rng.random()), servers.proxies) as injector:
        try:
            codes = fault_round(rng, clones, servers.writer_spec, writes, logs, 1.5)
        except TimeoutError as e:
            return [str(e)]
    print(f"  faults injected: {injector.injected}")
    return [f"writer exit codes {codes}"] if any(c not in (0, -9) for c in codes) else []


def _check(servers: _Servers, tmp: Path, clones: list[Path], logs: list[Path]) -> list[str]:
    """The checks listed in the module docstring; what failed."""
    problems: list[str] = []
    checker = dc.clone(servers.url, tmp / "checker", store_of(servers.spec))
    before = checker.validate()
    print(f"validate before any repair: {'clean' if before.ok else 'NOT clean'}")
    if not before.ok:
        print(before)
    missing = [p for p in before.problems if p.kind == "missing_snapshot"]
    if missing:
        problems.append(f"snapshots missing before any repair: {missing}")
    checker.validate(fix=True)
    after = checker.validate()
    if not after.ok:
        problems.append(f"validate after fix=True: {after}")
    landed = told(logs)
    reader = dc.connect(store=store_of(servers.spec), project_name="STRESS")
    recorded = 0
    for table in TABLES:
        versions = [v.version for v in checker.history(table)]
        recorded += len(versions)
        if len(versions) != len(set(versions)):
            problems.append(f"{table}: a version is recorded twice")
        lost = {v for t, v in landed if t == table} - set(versions)
        if lost:
            problems.append(f"{table}: versions writers were told of are missing: {lost}")
        for version in versions:
            if reader.read(table, version=version, as_="arrow").num_rows != 3:
                problems.append(f"{table} {version}: wrong rows read from the store")
    print(f"versions told of: {len(landed)}; recorded: {recorded}")
    repos = [*set(clones), tmp / "checker"]
    if servers.http is None:
        repos.append(Path(servers.url))
    for repo in repos:
        out = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True)
        if out.returncode:
            problems.append(f"git fsck {repo}: {out.stderr.decode()[-400:]}")
    for clone in set(clones):
        report = dc.connect(clone, store=store_of(servers.spec)).validate()
        if not report.ok:
            problems.append(f"clone {clone.name}: {report}")
    return problems


def _check_faults(servers: _Servers, tmp: Path, clones: list[Path], logs: list[Path]) -> list[str]:
    """The fault mode's checks after a round (the faults off); what failed."""
    problems: list[str] = []
    path = tmp / "fault-checker"
    if path.exists():
        checker = dc.connect(path, store=store_of(servers.spec))
    else:
        checker = dc.clone(servers.url, path, store_of(servers.spec))
    fixed = checker.validate(fix=True, grace_s=0)
    kinds = sorted({p.kind for p in fixed.problems})
    orphans = sum(p.kind == "orphaned_object" for p in fixed.problems)
    print(f"  validate(fix=True): {len(fixed.problems)} repaired {kinds}, {orphans} orphans")
    after = checker.validate(grace_s=0)
    if not after.ok:
        problems.append(f"validate after fix=True: {after}")
    landed, errors = told_with_data(logs)
    reader = dc.connect(store=store_of(servers.spec), project_name="STRESS")
    histories = {t: {v.version for v in checker.history(t)} for t in TABLES}
    for table, version, data_sha in landed:
        if version not in histories[table]:
            problems.append(f"{table} {version}: told of, not recorded")
            continue
        try:
            data = reader.read(table, version=version, as_="arrow")
        except dc.DatomError as e:
            problems.append(f"{table} {version}: told of, does not read by id: {e}")
            continue
        if dc.hash_table(data).data_sha != data_sha:
            problems.append(f"{table} {version}: reads other data than written")
    print(f"  versions told of: {len(landed)} (all read by id with their data unless listed); "
          f"errors the writers were told of: {errors}")  # fmt: skip
    repos = [*set(clones), path]
    repos.append(servers.http.root / "proj" if servers.http is not None else Path(servers.url))
    for repo in repos:
        out = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True)
        if out.returncode:
            problems.append(f"git fsck {repo}: {out.stderr.decode()[-400:]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--remote", choices=["local", "https"], default="local")
    parser.add_argument("--store", choices=["local", "s3"], default="local")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writes", type=int, default=15, help="per writer and round")
    parser.add_argument("--clones", type=int, default=4, help="own clones (plus 2 sharing one)")
    parser.add_argument("--keep", action="store_true", help="keep the project folder")
    parser.add_argument("--faults", action="store_true", help="inject infrastructure faults")
    args = parser.parse_args(argv)
    if args.faults and args.remote == "local" and args.store == "local":
        print("--faults needs --remote https or --store s3 (the faults are in their traffic)")
        return 2
    if shutil.which("git") is None:
        print("needs the git command line (for git fsck)")
        return 2
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="datom-stress-"))
    servers = _Servers(tmp, args.remote, args.store)
    started, problems = time.monotonic(), []
    try:
        if args.faults:
            servers.add_faults()
        clones = [tmp / f"c{w}" for w in range(args.clones)] + [tmp / "shared"] * 2
        for clone in set(clones):
            dc.clone(servers.writer_url, clone, store_of(servers.writer_spec))
        logs: list[Path] = []
        for round_ in range(args.rounds):
            mine = [tmp / f"log{round_}-{w}" for w in range(len(clones))]
            if args.faults:
                problems += _fault_round(rng, servers, clones, args.writes, mine)
                logs += mine
                problems += _check_faults(servers, tmp, clones, logs)
            else:
                problems += _round(rng, clones, servers.spec, args.writes, mine)
                logs += mine
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
        if not args.faults:  # (the fault mode checked each round)
            problems += _check(servers, tmp, clones, logs)
    finally:
        servers.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    took = time.monotonic() - started
    print(f"{args.remote} remote, {args.store} store, seed {args.seed}: {took:.0f} s")
    for problem in problems:
        print("FAILED:", problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
