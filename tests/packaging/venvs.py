"""Fresh virtual environments for the install tests, and a clean environment to run in.

A test that installs the package must run what it installed, not this checkout: the
session's ``PYTHONPATH`` (which points subprocesses at the checkout, see conftest) is
dropped, and commands run from a folder outside the source tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything pointing Python at this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def make_venv(path: Path) -> Path:
    """A fresh virtual environment at ``path``; returns its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def pip_install(bin_dir: Path, *requirements: str, cwd: Path) -> None:
    """``pip install`` into the environment (the machine's configured index), quietly."""
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", *requirements], cwd=cwd)


def run(
    cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; on failure, fail with its output (pip and build explain themselves)."""
    proc = subprocess.run(
        cmd, cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc
