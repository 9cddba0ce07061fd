"""Sets against the real R datom 0.2.0: the set.json bytes and data_sha, and each side
reading the other's sets.

* R canonicalises random payloads with its own tidy and order functions, writes them with
  ``jsonlite::write_json(auto_unbox = TRUE, pretty = TRUE)`` and hashes them with
  ``.datom_canonical_set_hash``; this package must produce the same bytes and hash.
* A set R's ``datom_write_set`` wrote is read here from the store alone, and a set written
  here is read by R's ``datom_get_set`` from the store alone.

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

import datom_core as dc
from datom_core._sets import hash_set, normalise_payload, serialise_payload
from datom_core._sets._read import declare_member, read_set
from datom_core._sets._write import write_set
from tests.core.test_sets_support import frame, member_of, new_product, opener


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
pytestmark = [
    pytest.mark.skipif(
        shutil.which("Rscript") is None or LIB is None,
        reason="the real R datom 0.2.0 is not installed (run ../shared/rdatom/setup.sh)",
    ),
]

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


def rscript(workdir: Path, script: str, *args: Path | str) -> str:
    """Run ``script`` with R datom 0.2.0 loaded (``args[[1]]`` is the library root)."""
    path = workdir / "run.R"
    path.write_text(script, encoding="utf-8")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, R_LIBS_USER=os.devnull)
    env.setdefault("ARROW_SHIM_PYTHON", sys.executable)
    out = subprocess.run(
        ["Rscript", "--vanilla", str(path), str(LIB), *map(str, args)],
        env=env, capture_output=True, text=True, timeout=600, cwd=workdir,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


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
    rscript(tmp_path, R_SCRIPT, tmp_path / "in.json", tmp_path / "out.json")
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


R_WRITES = r"""
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(file.path(args[[1]], "datom-0.2.0"), file.path(args[[1]], "shims"), .libPaths()))
suppressMessages(library(datom))
root <- args[[2]]
remote <- file.path(root, "remote.git"); dir.create(remote); git2r::init(remote, bare = TRUE)
st <- function() datom_store(data = datom_store_local(file.path(root, "store")),
                            github_pat = "x", data_repo_url = remote, validate = FALSE)
datom_init_repo(file.path(root, "repo"), "STUDY_R", st(), mode = "product", set = "adam")
conn <- datom_get_conn(file.path(root, "repo"), st())
datom_write(conn, data = data.frame(a = c(1L, 2L)), name = "dm")
datom_write(conn, data = data.frame(b = c("x", "y")), name = "ae")
m <- list(
  datom_member(conn, "dm", datom_history(conn, "dm")$version[1],
               tags = list(type = "input", d = c("z", "a"))),
  datom_member(conn, "ae", datom_history(conn, "ae")$version[1]))
first <- datom_write_set(conn, m, tags = list(description = "R cut </x>"))
second <- datom_write_set(conn, m[1])
jsonlite::write_json(list(first = first$metadata_sha, second = second$metadata_sha,
                          data_sha = second$data_sha), file.path(root, "r.json"),
                     auto_unbox = TRUE)
"""


def test_python_reads_a_set_r_wrote(tmp_path: Path) -> None:
    rscript(tmp_path, R_WRITES, tmp_path)
    said = json.loads((tmp_path / "r.json").read_text())
    store = dc.LocalStore(tmp_path / "store")
    current = read_set(store, "STUDY_R", "adam")
    assert (current.version, current.data_sha) == (said["second"], said["data_sha"])
    assert [m.name for m in current.members] == ["dm"]
    first = read_set(store, "STUDY_R", "adam", said["first"][:8])
    assert dict(first.tags) == {"description": ("R cut </x>",)}
    assert dict(first.member("dm").tags) == {"d": ("a", "z"), "type": ("input",)}
    # Our canonical bytes of R's members are R's bytes.
    payload = normalise_payload(first.members, first.tag_json(), name="adam", project="STUDY_R")
    assert serialise_payload(payload) == store.read_bytes(f"adam/{first.data_sha}.json")
    assert hash_set(payload) == first.data_sha
    assert declare_member(store, "STUDY_R", "adam", said["first"]).kind == "set"
    # The pinned data R wrote, fetched through a store-only reader here.
    pinned = read_set(store, "STUDY_R", "adam", said["first"], opener=opener).member("ae")
    assert pinned.fetch()["b"].tolist() == ["x", "y"]


R_READS = r"""
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(file.path(args[[1]], "datom-0.2.0"), file.path(args[[1]], "shims"), .libPaths()))
suppressMessages(library(datom))
conn <- datom_get_conn(store = datom_store(data = datom_store_local(args[[2]]), validate = FALSE),
                       project_name = "STUDY_001")
read <- function(v) {
  x <- datom_get_set(conn, "adam", version = v)
  list(version = x$version, data_sha = x$data_sha, project = x$project,
       tags = x$tags, members = lapply(x$members, function(m) list(id = m$id, tags = m$tags)))
}
jsonlite::write_json(list(current = read(NULL), first = read(args[[3]])),
                     file.path(args[[4]], "py.json"), auto_unbox = TRUE)
"""


def test_r_reads_a_set_python_wrote(tmp_path: Path) -> None:
    conn = new_product(tmp_path)
    conn.write("dm", frame())
    conn.write("adsl", frame(seed=1), parents=["dm"])
    a = write_set(conn, [member_of(conn, "dm", type="input", d=["z", "a"])], tags={"d": "</x>"})
    b = write_set(conn, [member_of(conn, "dm"), member_of(conn, "adsl", type="output")])
    rscript(tmp_path, R_READS, tmp_path / "store", a.version[:8], tmp_path)
    said = json.loads((tmp_path / "py.json").read_text())
    assert (said["current"]["version"], said["current"]["data_sha"]) == (b.version, b.data_sha)
    assert said["current"]["project"] == "STUDY_001"
    assert [m["id"]["name"] for m in said["current"]["members"]] == ["adsl", "dm"]
    assert said["first"]["version"] == a.version
    assert said["first"]["tags"] == {"d": "</x>"}
    assert said["first"]["members"] == [
        {
            "id": {"kind": "table", "name": "dm", "project": "STUDY_001",
                   "version": conn.history("dm")[0].version},
            "tags": {"d": ["a", "z"], "type": "input"},
        }
    ]  # fmt: skip


R_OPENS_PRODUCT = r"""
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(file.path(args[[1]], "datom-0.2.0"), file.path(args[[1]], "shims"), .libPaths()))
suppressMessages(library(datom))
root <- args[[2]]; cut <- args[[3]]
st <- function() datom_store(data = datom_store_local(file.path(root, "cut.store")),
                            github_pat = "x", data_repo_url = file.path(root, "cut.remote.git"),
                            validate = FALSE)
conn <- datom_get_conn(file.path(root, "cut"), st())
x <- datom_get_set(conn, cut)
written <- datom_write_set(conn, x, tags = list(note = "relabelled in R"))
again <- datom_get_set(conn, cut)
v <- datom_validate(conn)
reader <- datom_get_conn(store = datom_store(data = datom_store_local(file.path(root, "cut.store")),
                                             validate = FALSE), project_name = "CUT_001")
from_store <- datom_get_set(reader, cut)
jsonlite::write_json(list(read = x$version, written = written$metadata_sha,
                          valid = isTRUE(v$valid), from_store = from_store$version,
                          members = I(vapply(again$members, function(m) m$id$name, "")),
                          project = again$members[[1]]$id$project),
                     file.path(root, "r.json"), auto_unbox = TRUE)
"""


def test_r_opens_a_product_repo_that_records_its_members_stores(tmp_path: Path) -> None:
    """The ``member_stores`` record in project.yaml leaves the repo an R product repo: R
    connects as a developer, reads the set and writes a new version; Python, after R's
    commit, still reads the members of the other project from the product repo."""
    study = dc.init_repo(tmp_path / "study", "STUDY_001", dc.LocalStore(tmp_path / "study.store"))
    study.write("dm", frame())
    cut = "DB lock"
    conn = dc.init_repo(tmp_path / "cut", "CUT_001", dc.LocalStore(tmp_path / "cut.store"),
                        mode="product", set=cut)  # fmt: skip
    first = conn.write_set([member_of(study, "dm")])
    assert b"member_stores:" in (tmp_path / "cut" / ".datom" / "project.yaml").read_bytes()

    rscript(tmp_path, R_OPENS_PRODUCT, tmp_path, cut)
    said = json.loads((tmp_path / "r.json").read_text())
    assert said["read"] == first.version
    assert (said["members"], said["project"]) == (["dm"], "STUDY_001")
    # R validates the product repo and reads the set from its store alone, beside the
    # store's copy of the record.
    assert said["valid"] is True and said["from_store"] == said["written"]
    assert (tmp_path / "cut.store" / "datom" / ".metadata" / "member_stores.json").is_file()

    again = dc.connect(tmp_path / "cut")
    again.pull()
    assert again.get_set().version == said["written"] != first.version
    assert dict(again.get_set().tags) == {"note": ("relabelled in R",)}
    pinned = again.get_set().member("dm").fetch(as_="arrow")  # through the recorded store
    assert pinned.num_rows == len(frame())
    reader = dc.connect(store=dc.LocalStore(tmp_path / "cut.store"), project_name="CUT_001")
    assert reader.get_set().member("dm").fetch(as_="arrow").num_rows == len(frame())
    assert again.validate().ok
