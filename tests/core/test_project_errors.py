"""One error tree: bad input to every public function raises a specific DatomError subclass.

Each row calls one public function of ``datom_core`` (or a Connection method) with a bad
argument and names the error it must raise; nothing else may escape.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import datom_core as dc
from tests.core.projects import frame, new_project


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> dc.Connection:
    c = new_project(tmp_path_factory.mktemp("errors"))
    c.write("dm", frame())
    return c


@pytest.fixture(scope="module")
def reader(conn: dc.Connection) -> dc.Connection:
    return dc.connect(store=conn.store, project_name=conn.project_name)


Case = tuple[str, Callable[[dc.Connection, dc.Connection, Path], Any], type[dc.DatomError]]

CASES: list[Case] = [
    # identity
    ("canonical_json(not a dict)", lambda c, r, t: dc.canonical_json("x"), dc.InvalidArgumentError),  # type: ignore[arg-type]
    (
        "canonical_json(object)",
        lambda c, r, t: dc.canonical_json({"custom": object()}),
        dc.UnsupportedInputError,
    ),
    ("metadata_sha(number)", lambda c, r, t: dc.metadata_sha(5), dc.InvalidArgumentError),  # type: ignore[arg-type]
    ("hash_table(text)", lambda c, r, t: dc.hash_table("x"), dc.UnsupportedInputError),
    (
        "hash_table(list column)",
        lambda c, r, t: dc.hash_table(pd.DataFrame({"a": [[1]]})),
        dc.UnhashableColumnsError,
    ),
    ("check_hashable(None)", lambda c, r, t: dc.check_hashable(None), dc.UnsupportedInputError),
    ("file_sha(missing)", lambda c, r, t: dc.file_sha(t / "missing.csv"), dc.NotFoundError),
    ("validate_table_name(5)", lambda c, r, t: dc.validate_table_name(5), dc.InvalidNameError),
    (
        "validate_table_name(reserved)",
        lambda c, r, t: dc.validate_table_name("datom"),
        dc.InvalidNameError,
    ),
    ("validate_version(XYZ)", lambda c, r, t: dc.validate_version("XYZ"), dc.InvalidNameError),
    (
        "read_extract(missing)",
        lambda c, r, t: dc.read_extract(t / "missing.csv"),
        dc.OnboardingError,
    ),
    ("read_extract(format)", lambda c, r, t: dc.read_extract(t / "x.doc"), dc.OnboardingError),
    # projects
    (
        "init_repo(bad name)",
        lambda c, r, t: dc.init_repo(t / "a", "no spaces!", c.store),
        dc.InvalidNameError,
    ),
    (
        "init_repo(store=text)",
        lambda c, r, t: dc.init_repo(t / "b", "P", "store"),
        dc.InvalidArgumentError,
    ),  # type: ignore[arg-type]
    (
        "init_repo(taken store)",
        lambda c, r, t: dc.init_repo(t / "c", "P", c.store),
        dc.ProjectExistsError,
    ),
    ("connect()", lambda c, r, t: dc.connect(), dc.InvalidArgumentError),
    (
        "connect(wrong project)",
        lambda c, r, t: dc.connect(store=c.store, project_name="OTHER"),
        dc.NotFoundError,
    ),
    (
        "connect(no project)",
        lambda c, r, t: dc.connect(store=dc.LocalStore(t / "empty"), project_name="P"),
        dc.NotFoundError,
    ),
    ("clone(missing remote)", lambda c, r, t: dc.clone(t / "no.git", t / "d"), dc.GitError),
    # writing
    ("write(bad name)", lambda c, r, t: c.write("../dm", frame()), dc.InvalidNameError),
    ("write(text data)", lambda c, r, t: c.write("dm", "not a frame"), dc.UnsupportedInputError),
    (
        "write(parents=5)",
        lambda c, r, t: c.write("dm", frame(), parents=5),
        dc.InvalidArgumentError,
    ),  # type: ignore[arg-type]
    (
        "write(parents=[5])",
        lambda c, r, t: c.write("dm", frame(), parents=[5]),
        dc.InvalidArgumentError,
    ),  # type: ignore[list-item]
    (
        "write(unknown parent)",
        lambda c, r, t: c.write("x", frame(), parents="nope"),
        dc.NotFoundError,
    ),
    (
        "write(metadata=list)",
        lambda c, r, t: c.write("dm", frame(), metadata=[1]),
        dc.InvalidArgumentError,
    ),  # type: ignore[arg-type]
    (
        "write(metadata=NaN)",
        lambda c, r, t: c.write("dm", frame(), metadata={"x": float("nan")}),
        dc.InvalidArgumentError,
    ),
    (
        "write(message=5)",
        lambda c, r, t: c.write("dm", frame(), message=5),
        dc.InvalidArgumentError,
    ),  # type: ignore[arg-type]
    ("reader.write", lambda c, r, t: r.write("dm", frame()), dc.ReadOnlyError),
    ("reader.sync", lambda c, r, t: r.sync(), dc.ReadOnlyError),
    ("reader.validate", lambda c, r, t: r.validate(), dc.ReadOnlyError),
    ("reader.scan_inbox()", lambda c, r, t: r.scan_inbox(), dc.ReadOnlyError),
    ("sync([5])", lambda c, r, t: c.sync([5]), dc.OnboardingError),  # type: ignore[list-item]
    # reading
    ("read(unknown table)", lambda c, r, t: r.read("nope"), dc.NotFoundError),
    ("read(bad version)", lambda c, r, t: r.read("dm", "XYZ"), dc.InvalidNameError),
    ("read(unknown version)", lambda c, r, t: r.read("dm", "abcdef12"), dc.NotFoundError),
    ("read(columns=text)", lambda c, r, t: r.read("dm", columns="AGE"), dc.InvalidArgumentError),
    ("read(unknown column)", lambda c, r, t: r.read("dm", columns=["NOPE"]), dc.NotFoundError),
    ("read(as_=csv)", lambda c, r, t: r.read("dm", as_="csv"), dc.InvalidArgumentError),  # type: ignore[arg-type]
    ("version(5)", lambda c, r, t: r.version("dm", 5), dc.InvalidNameError),  # type: ignore[arg-type]
    ("metadata(unknown)", lambda c, r, t: r.metadata("nope"), dc.NotFoundError),
    ("history(bad name)", lambda c, r, t: r.history("a/b"), dc.InvalidNameError),
    ("parent(unknown)", lambda c, r, t: r.parent("nope"), dc.NotFoundError),
    ("resolve(ambiguous-free miss)", lambda c, r, t: r.resolve("dm", "0000000"), dc.NotFoundError),
    ("lineage(depth)", lambda c, r, t: r.lineage("dm", depth="all"), dc.InvalidArgumentError),  # type: ignore[arg-type]
    ("diff(key=5)", lambda c, r, t: r.diff("dm", key=5), dc.InvalidArgumentError),  # type: ignore[arg-type]
    (
        "diff(key not a column)",
        lambda c, r, t: r.diff("dm", key="NOPE"),
        dc.NotFoundError,
    ),  # as read(columns=) says
    ("diff(unknown)", lambda c, r, t: r.diff("nope"), dc.NotFoundError),
    ("parquet_key(path)", lambda c, r, t: r.parquet_key("../x", "a" * 64), dc.InvalidNameError),
    ("commit_of(reader)", lambda c, r, t: r.commit_of("dm"), dc.ReadOnlyError),
    ("scan_inbox(missing)", lambda c, r, t: c.scan_inbox(t / "no-such-inbox"), dc.NotFoundError),
]


@pytest.mark.parametrize(("name", "call", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_the_named_error(
    conn: dc.Connection, reader: dc.Connection, tmp_path: Path, name: str, call: Any, expected: type
) -> None:
    with pytest.raises(dc.DatomError) as info:
        call(conn, reader, tmp_path)
    assert isinstance(info.value, expected), (name, type(info.value), info.value)
    assert type(info.value) is not dc.DatomError  # never the bare base class
    assert str(info.value)  # a message, naming what to do


def test_every_public_error_is_in_one_tree() -> None:
    errors = [getattr(dc, n) for n in dc.__all__ if n.endswith("Error")]
    assert len(errors) >= 16 and all(issubclass(e, dc.DatomError) for e in errors)
    assert {dc.InvalidArgumentError, dc.UnsupportedInputError, dc.ProjectExistsError} <= set(errors)
    assert {dc.ProjectConfigError, dc.FormatError} <= set(errors)
