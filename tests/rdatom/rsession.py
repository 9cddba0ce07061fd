"""Drive the real R datom from Python: one long-lived ``Rscript`` per scenario.

R loads datom once (a few seconds) and then answers calls of the functions defined in
``r/lib_*.R``: each call is one JSON request line on R's stdin, answered by a JSON file and
a marker line on its stdout. datom's own messages (cli, on stderr) go to a log file that is
quoted in every error, so a failing R call says what R said.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

R_DIR = Path(__file__).resolve().parent / "r"
_MARKER = "\x01datom-r-done"
VERSIONS = ("0.2.0", "0.1.1")


def rdatom_lib() -> Path:
    """Where ``make rdatom`` (``../shared/rdatom/setup.sh``) installed the R packages."""
    default = Path(os.environ.get("TMPDIR", "/tmp")) / "datom-rdatom-lib"
    return Path(os.environ.get("RDATOM_LIB", str(default)))


def missing_r() -> str | None:
    """Why the real R datom cannot run here (None when it can)."""
    if shutil.which("Rscript") is None:
        return "Rscript is not on PATH"
    lib = rdatom_lib()
    for v in VERSIONS:
        if not (lib / f"datom-{v}" / "datom" / "DESCRIPTION").is_file():
            return f"R datom {v} is not installed under {lib} (RDATOM_LIB)"
    if not (lib / "shims" / "arrow" / "DESCRIPTION").is_file():
        return f"the arrow shim is not installed under {lib / 'shims'}"
    return None


class RError(AssertionError):
    """An R call failed; the message carries R's error and the tail of its log."""


class RSession:
    """One R process with one datom version loaded."""

    def __init__(self, version: str, workdir: Path, timeout: float = 300.0) -> None:
        self.version = version
        self.timeout = timeout
        self._dir = workdir
        self._dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self._dir / f"r-{version}.log"
        env = dict(os.environ)
        env["RDATOM_LIB"] = str(rdatom_lib())
        env.setdefault("ARROW_SHIM_PYTHON", sys.executable)
        # git2r commits with the clone's local identity (datom sets one); no global config
        # of the machine leaks into the test.
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        env["R_LIBS_USER"] = os.devnull
        self._log = open(self.log_path, "wb")  # noqa: SIM115  (closed in close())
        self._proc = subprocess.Popen(
            ["Rscript", "--vanilla", str(R_DIR / "session.R"), version, str(R_DIR)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=self._dir,
            env=env,
            text=True,
            bufsize=1,
        )
        self._wait_marker("starting R")

    def _wait_marker(self, what: str) -> None:
        assert self._proc.stdout is not None
        while True:
            ready, _, _ = select.select([self._proc.stdout], [], [], self.timeout)
            if not ready:
                raise RError(
                    f"R datom {self.version}: no answer after {self.timeout}s {what}\n{self.log_tail()}"
                )
            line = self._proc.stdout.readline()
            if line == "":
                raise RError(f"R datom {self.version} exited while {what}\n{self.log_tail()}")
            if line.rstrip("\n") == _MARKER:
                return

    def log_tail(self, n: int = 40) -> str:
        self._log.flush()
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "--- R log (tail) ---\n" + "\n".join(lines[-n:])

    def call(self, fn: str, **args: Any) -> Any:
        """``fn(args)`` in R; the JSON value it returned (R errors raise :class:`RError`)."""
        out = self._dir / f"resp-{uuid.uuid4().hex}.json"
        request = json.dumps({"fn": fn, "args": _jsonable(args), "out": str(out)})
        assert self._proc.stdin is not None
        self._log.write(f"\n>>> {fn}({json.dumps(_jsonable(args))[:500]})\n".encode())
        self._log.flush()
        self._proc.stdin.write(request + "\n")
        self._proc.stdin.flush()
        self._wait_marker(f"running {fn}")
        response = json.loads(out.read_text())
        out.unlink()
        if not response["ok"]:
            raise RError(
                f"R datom {self.version}: {fn} failed: {response['error']}\n{self.log_tail()}"
            )
        return response["value"]

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._log.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
