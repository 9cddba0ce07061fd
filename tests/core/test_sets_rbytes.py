"""The set.json bytes and data_sha against the real R datom 0.2.0 and its jsonlite.

R canonicalises each payload with its own tidy and order functions, writes it with
``jsonlite::write_json(auto_unbox = TRUE, pretty = TRUE)`` and hashes it with
``.datom_canonical_set_hash``; this package must produce the same bytes and hash.
Needs ``Rscript`` and R datom installed (``../shared/rdatom/setup.sh``, ``RDATOM_LIB``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from datom_core._sets import hash_set, normalise_payload, serialise_payload


def _rdatom_lib() -> Path | None:
    candidates = [
        os.environ.get("RDATOM_LIB"),
        "/tmp/rdatom",
        f"{os.environ.get('TMPDIR', '/tmp')}/datom-rdatom-lib",
    ]
    for c in candidates:
        if c and (Path(c) / "datom-0.2.0" / "datom" / "DESCRIPTION").is_file():
            return Path(c)
    return None


LIB = _rdatom_lib()
pytestmark = pytest.mark.skipif(
    shutil.which("Rscript") is None or LIB is None,
    reason="the real R datom 0.2.0 is not installed (run ../shared/rdatom/setup.sh)",
)

R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(file.path(args[[1]], "datom-0.2.0"), file.path(args[[1]], "shims"), .libPaths()))
suppressMessages(library(datom))
cases <- jsonlite::read_json(args[[2]], simplifyVector = FALSE)
out <- lapply(cases, function(case) {
  p <- datom:::.datom_tidy_set_payload(list(tags = case$tags, members = case$members))
  p$members <- datom:::.datom_order_set_members(p$members)
  tmp <- tempfile(fileext = ".json")
  jsonlite::write_json(p, tmp, auto_unbox = TRUE, pretty = TRUE)
  bytes <- readBin(tmp, "raw", file.info(tmp)$size)
  list(hex = paste(as.character(bytes), collapse = ""),
       sha = datom:::.datom_canonical_set_hash(p))
})
jsonlite::write_json(out, args[[3]], auto_unbox = TRUE)
"""

_ALPHABET = (
    list("abcXYZ019 _-.()/<>\"\\'")
    + ["\n", "\t", "\r", "\b", "\f", "\x01", "\x1f", "\x7f"]
    + ["\u00e9", "e\u0301", "\u00df", "\u2028", "\u4e2d", "\uff01", "\U0001f600", "</"]
)


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 6)))


def _tags(rng: random.Random) -> dict[str, Any]:
    tags: dict[str, Any] = {}
    for _ in range(rng.randint(0, 3)):
        n = rng.randint(0, 3)
        values = [_text(rng) for _ in range(n)] + (
            [] if n == 0 or rng.random() < 0.5 else [_text(rng)]
        )
        tags[_text(rng)] = values[0] if n == 1 and rng.random() < 0.5 else values
    return tags


def _case(rng: random.Random) -> dict[str, Any]:
    members = []
    for _ in range(rng.randint(1, 5)):
        ident = {
            "version": f"{rng.getrandbits(32):08x}",
            "name": rng.choice(["dm", "ae", "ADSL", "adsl", "b", "\u00e9t\u00e9"]),
            "project": rng.choice(["STUDY_001", "study_001", "OTHER"]),
            "kind": rng.choice(["table", "set"]),
        }
        record: dict[str, Any] = {"id": ident}
        if rng.random() < 0.7:
            record["tags"] = _tags(rng)
        members.append(record)
        if rng.random() < 0.2:
            members.append(json.loads(json.dumps(record)))  # an exact duplicate
    case: dict[str, Any] = {"members": members}
    if rng.random() < 0.7:
        case["tags"] = _tags(rng)
    return case


def test_bytes_and_data_sha_equal_r(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    cases = [_case(rng) for _ in range(300)]
    (tmp_path / "in.json").write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "run.R").write_text(R_SCRIPT)
    env = dict(os.environ, ARROW_SHIM_PYTHON=os.environ.get("ARROW_SHIM_PYTHON", sys.executable))
    subprocess.run(
        ["Rscript", "--vanilla", str(tmp_path / "run.R"), str(LIB), str(tmp_path / "in.json"),
         str(tmp_path / "out.json")],
        check=True, env=env, capture_output=True, timeout=600,
    )  # fmt: skip
    answers = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    checked = 0
    for case, answer in zip(cases, answers, strict=True):
        payload = normalise_payload(
            case["members"], case.get("tags"), name="zz-self", project="none"
        )
        assert serialise_payload(payload) == bytes.fromhex(answer["hex"]), case
        assert hash_set(payload) == answer["sha"], case
        checked += 1
    assert checked == 300
