"""The package as a user gets it: sdist and wheel built by ``python -m build``, the wheel
installed into a fresh virtual environment, and the CLI, a write/read and a Dagster
materialization run from that install (not from this checkout)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

import datom_core
from tests.childsignals import default_signals
from tests.packaging.venvs import ROOT, clean_env, make_venv, pip_install, run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

_SKIP = shutil.ignore_patterns(
    ".git", ".venv", "site", ".demo", "build", "dist", "*.egg-info", "__pycache__",
    ".hypothesis", ".pytest_cache", ".ruff_cache", ".mypy_cache", "*.so",
)  # fmt: skip


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sdist and wheel built from a copy of the source tree (the wheel from the sdist)."""
    base = tmp_path_factory.mktemp("build")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=_SKIP)
    out = base / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], cwd=base)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_sdist_and_wheel_carry_the_license_and_the_one_version(dists: dict[str, Path]) -> None:
    version = datom_core.__version__
    assert dists["sdist"].name == f"datom_py-{version}.tar.gz"
    assert dists["wheel"].name.startswith(f"datom_py-{version}-")
    with tarfile.open(dists["sdist"]) as sdist:
        names = sdist.getnames()
    assert f"datom_py-{version}/LICENSE" in names
    assert f"datom_py-{version}/CHANGELOG.md" in names
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "datom_core/__init__.py" in names and "datom_dagster/__init__.py" in names
    assert "Name: datom-py\n" in text and f"Version: {version}\n" in text
    assert "License-Expression: MIT" in text
    extras = {
        line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Provides-Extra")
    }
    assert {"dagster", "dg", "ui", "demo", "docs", "test", "polars"} <= extras
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["dynamic"] == ["version"]


_SCRIPT = """
import json, sys
import pandas as pd
import datom_core as dc
from dagster import asset, materialize
from datom_dagster import DatomIOManager, DatomResource

assert "site-packages" in dc.__file__, dc.__file__   # the installed copy, not a checkout
conn = dc.connect(sys.argv[1])
frame = pd.DataFrame({"USUBJID": ["S1", "S2"], "AGE": [34, 51]})
written = conn.write("dm", frame, message="from the wheel")
back = conn.read("dm")
assert back.equals(frame), back

@asset
def adsl() -> pd.DataFrame:
    return pd.DataFrame({"USUBJID": ["S1"], "SAFFL": ["Y"]})

resource = DatomResource(project_name="PIPE", home=sys.argv[2])
result = materialize([adsl], resources={"io_manager": DatomIOManager(datom=resource)})
assert result.success
pipe = resource.connection()
from datom_core._identity import _chrenc  # the compiled encoder was built by the install
print(json.dumps({"version": written.version, "data_sha": written.data_sha,
                  "pipe_tables": [t.name for t in pipe.tables()],
                  "pipe_adsl": pipe.read("adsl").to_dict("list")}))
"""


@pytest.fixture(scope="module")
def installed(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel with its ``dg`` extra (which brings
    Dagster, its UI and ``dg``), plus ``create-dagster`` for the walk-through."""
    base = tmp_path_factory.mktemp("venv")
    bin_dir = make_venv(base / "venv")
    pip_install(bin_dir, f"{dists['wheel']}[dg]", "create-dagster", cwd=base)
    return bin_dir


def test_the_wheel_installs_and_runs_the_cli_a_write_and_a_materialization(
    installed: Path, tmp_path: Path
) -> None:
    bin_dir = installed
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(DAGSTER_HOME=str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    (tmp_path / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

    version = run([str(bin_dir / "datom"), "--version"], cwd=work, env=env).stdout
    assert version.strip() == f"datom, version {datom_core.__version__}"
    run([str(bin_dir / "datom"), "init", "study", "--project", "STUDY"], cwd=work, env=env)

    script = work / "use.py"
    script.write_text(_SCRIPT)
    out = run(
        [str(bin_dir / "python"), str(script), str(work / "study"), str(tmp_path / "home")],
        cwd=work,
        env=env,
    ).stdout
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["pipe_tables"] == ["adsl"]
    assert facts["pipe_adsl"] == {"USUBJID": ["S1"], "SAFFL": ["Y"]}

    listed = run(
        [str(bin_dir / "datom"), "--json", "--repo", str(work / "study"), "list"],
        cwd=work,
        env=env,
    ).stdout
    assert facts["version"] in listed and "dm" in listed
    # The installed package and this checkout agree on the identity of the same frame.
    import pandas as pd

    frame = pd.DataFrame({"USUBJID": ["S1", "S2"], "AGE": [34, 51]})
    assert datom_core.hash_table(frame).data_sha == facts["data_sha"]


def test_the_readme_dg_walk_through_works_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    """create-dagster, ``dg scaffold defs datom_dagster.DatomComponent``, ``dg check defs``,
    ``dg list defs`` and ``dg dev`` (serving, without Dagster's supersession warning)."""
    env = clean_env(
        PATH=f"{installed}{os.pathsep}{os.environ.get('PATH', '')}",
        DAGSTER_HOME=str(tmp_path / "dagster"),
        DATOM_HOME=str(tmp_path / "datom"),
    )
    (tmp_path / "dagster").mkdir()
    (tmp_path / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    run(["create-dagster", "project", "my-study"], cwd=tmp_path, env=env)
    project = tmp_path / "my-study"
    pip_install(installed, "--no-deps", "-e", str(project), cwd=tmp_path)
    run(
        ["dg", "scaffold", "defs", "datom_dagster.DatomComponent", "my_study"], cwd=project, env=env
    )
    (defs_yaml,) = project.glob("src/my_study/defs/my_study/defs.yaml")
    assert "type: datom_dagster.DatomComponent" in defs_yaml.read_text()
    checked = run(["dg", "check", "defs"], cwd=project, env=env)
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = run(["dg", "list", "defs", "--json"], cwd=project, env=env).stdout
    assert "MY_STUDY_inbox_sensor" in listed and '"dm"' in listed

    log = tmp_path / "dev.log"
    with log.open("w") as out:
        dev = subprocess.Popen(
            ["dg", "dev", "--port", str(_free_port())],
            cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=default_signals,  # SIGTERM below must reach it
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while "Serving dagster-webserver" not in log.read_text():
                assert dev.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.5)
        finally:
            os.killpg(dev.pid, signal.SIGTERM)
            try:
                dev.wait(timeout=60)
            except subprocess.TimeoutExpired:  # no server left running behind the test
                os.killpg(dev.pid, signal.SIGKILL)
                dev.wait()
                raise
    assert "SupersessionWarning" not in log.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
