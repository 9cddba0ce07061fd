"""The compiled ``chr`` encoder under AddressSanitizer and UBSan.

``_chrenc.c`` reads Arrow buffers by raw offsets, copies short values as 16-byte blocks and
writes into a caller's buffer: a slip reads or writes memory it does not own, which the
byte-for-byte tests only see when the stray bytes happen to differ. Here it is built with
``-fsanitize=address,undefined`` and the encoder tests run against that build in a Python
whose allocations are all visible to the sanitizer (``PYTHONMALLOC=malloc``, Arrow's
system allocator, the test arrays' buffers allocated to their exact size). A second build,
with one bound check loosened, shows that the run catches a read past the data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cv1_cases import TEST_BUILD_ENV

pytestmark = pytest.mark.slow

_ROOT = Path(__file__).resolve().parents[2]
SOURCE = _ROOT / "datom_core" / "_identity" / "_chrenc.c"
_FLAGS = ["-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer"]
_SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
# The bound that keeps a block copy inside the data: loosened, the last short values of
# a large data buffer are copied as 16 bytes that run past its end.
_BOUND = "first + BLOCK <= s->readable"


def _compiler() -> str:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    found = shutil.which(cc) or shutil.which("cc")
    if found is None:
        pytest.skip("no C compiler here: the compiled encoder is not built either")
    return found


def _runtime(cc: str) -> str:
    path = subprocess.run(
        [cc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not path or not Path(path).is_file():
        pytest.skip(f"{cc} has no AddressSanitizer runtime (libasan) here")
    return path


def _build(cc: str, source: str, out: Path) -> Path:
    out.mkdir(parents=True)
    c_file = out / "_chrenc.c"
    c_file.write_text(source)
    module = out / f"_chrenc{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        [cc, *_FLAGS, *_SANITIZE, f"-I{include}", str(c_file), "-o", str(module)], check=True
    )
    return module


def _encoder_tests(cc: str, module: Path, select: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "LD_PRELOAD": _runtime(cc),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "PYTHONMALLOC": "malloc",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        TEST_BUILD_ENV: str(module),
    }
    command = [
        # --capture=sys: a sanitizer report goes to file descriptor 2 and the process
        # exits at once; pytest's descriptor capture would swallow it.
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--capture=sys",
        "tests/core/test_identity_encoders.py", "-k", select or "compiled or refuses",
    ]  # fmt: skip
    return subprocess.run(command, cwd=_ROOT, env=env, capture_output=True, text=True)


def test_the_compiled_encoder_passes_its_tests_under_the_sanitizers(tmp_path: Path) -> None:
    cc = _compiler()
    module = _build(cc, SOURCE.read_text(), tmp_path / "sanitized")
    run = _encoder_tests(cc, module)
    report = run.stdout[-4000:] + run.stderr[-4000:]
    assert run.returncode == 0, report
    assert " passed" in run.stdout and "Sanitizer" not in run.stderr, report


def test_the_sanitized_run_catches_a_read_past_the_data(tmp_path: Path) -> None:
    cc = _compiler()
    source = SOURCE.read_text()
    assert source.count(_BOUND) == 1, "the bound this test loosens moved: update _BOUND"
    mutant = source.replace(_BOUND, "first <= s->readable")
    module = _build(cc, mutant, tmp_path / "mutant")
    run = _encoder_tests(cc, module, "compiled and large_data_short_tail and exact_buffers")
    assert run.returncode != 0
    assert "AddressSanitizer: heap-buffer-overflow" in run.stderr, run.stderr[-4000:]
