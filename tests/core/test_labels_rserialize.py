"""The R serialization datom writes for R arrow's ``r`` key is what R itself writes.

Each value is read by R's ``unserialize`` and written again by R's ``serialize(ascii =
TRUE)``: the bytes after the header (which names the writing R's version) must be ours.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from datom_core._rserialize import RChar, RList, RReal, RValue, serialize_ascii

RSCRIPT = shutil.which("Rscript") or ""

_EDGE_TEXT = [
    "",
    " ",
    "plain",
    "quote \" and ' apostrophe",
    "back\\slash? question",
    "tab\tnew\nline\rcr\x07\x08\x0b\x0c",
    "\x01\x1f\x7f",
    "Grüße – 日本語 🧪",
    "DATE9.",
]
_EDGE_REAL = [0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, 0.1, 1 / 3, float("inf"), float("-inf")]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return rng.choice(_EDGE_TEXT)
    alphabet = "abcXYZ019 _.-\"'\\?\t\n\x01é–日🧪"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random, depth: int = 0) -> RValue:
    kind = rng.choice(["null", "chr", "real", "list"] if depth < 3 else ["chr", "real"])
    n = rng.randint(0, 4)
    names = [_text(rng) for _ in range(n)] if rng.random() < 0.5 else None
    if kind == "null":
        return None
    if kind == "chr":
        return RChar([None if rng.random() < 0.1 else _text(rng) for _ in range(n)], names)
    if kind == "real":
        values = [
            None if rng.random() < 0.1 else rng.choice([*_EDGE_REAL, rng.uniform(-1e6, 1e6)])
            for _ in range(n)
        ]
        return RReal(values, names)
    return RList([(_text(rng), _value(rng, depth + 1)) for _ in range(n)])


_CHECK = r"""
for (path in commandArgs(TRUE)) {
  ours <- readBin(path, "raw", file.size(path))
  again <- serialize(unserialize(ours), NULL, ascii = TRUE)
  header <- function(x) which(x == as.raw(10))[6]  # A, format, versions, encoding
  same <- identical(ours[-seq_len(header(ours))], again[-seq_len(header(again))])
  cat(if (same) "OK" else "DIFF", path, "\n")
}
"""


@pytest.mark.skipif(not RSCRIPT, reason="R is not installed")
def test_r_reads_and_rewrites_the_same_bytes(tmp_path: Path) -> None:
    rng = random.Random(20261205)
    values: list[RValue] = [
        None,
        RChar([]),
        RReal([]),
        RList([]),
        RChar(_EDGE_TEXT, _EDGE_TEXT[::-1]),
        RReal([*_EDGE_REAL, float("nan"), None]),
        RList([("names", RChar(["names"], ["names"])), ("columns", None)]),
    ]
    values += [_value(rng) for _ in range(150)]
    paths = []
    for i, value in enumerate(values):
        path = tmp_path / f"v{i}.txt"
        path.write_text(serialize_ascii(value), encoding="ascii")
        paths.append(str(path))
    script = tmp_path / "check.R"
    script.write_text(_CHECK)
    out = subprocess.run(
        [RSCRIPT, "--vanilla", str(script), *paths], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    verdicts = [line.split()[0] for line in out.stdout.splitlines()]
    assert verdicts == ["OK"] * len(values), out.stdout
