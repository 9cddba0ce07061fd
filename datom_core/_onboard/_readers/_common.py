"""What every onboarding reader shares: where the file is, and how a failure is reported."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from datom_core._errors import OnboardingError

CONVERT_REMEDY = "convert it once to csv or parquet"
CORRUPT_REMEDY = (
    "check that the file is complete and is a genuine .{fmt} file (export it again from "
    "the source system), or " + CONVERT_REMEDY
)


@dataclass(frozen=True)
class Source:
    """One input file: a local path, or a path on an fsspec filesystem.

    ``filesystem`` is any fsspec ``AbstractFileSystem`` (s3, memory, ...); ``None`` means
    the local disk, read through the libraries' native I/O.
    """

    path: str
    fmt: str
    filesystem: Any = None

    def fail(self, problem: str, remedy: str) -> OnboardingError:
        """An :class:`OnboardingError` naming this file, its format, the problem and the remedy."""
        return OnboardingError(
            f"cannot onboard {self.path!r} as {self.fmt}: {problem}. Remedy: {remedy}."
        )

    def corrupt(self, error: BaseException) -> OnboardingError:
        """The error for a file the format's reader refused (raise it ``from error``)."""
        detail = str(error).strip() or type(error).__name__
        return self.fail(
            f"the file is unreadable or corrupt ({detail})", CORRUPT_REMEDY.format(fmt=self.fmt)
        )

    def size(self) -> int:
        """Size in bytes; a missing or unreachable file is an :class:`OnboardingError`."""
        try:
            if self.filesystem is None:
                return os.path.getsize(self.path)
            return int(self.filesystem.size(self.path))
        except FileNotFoundError as e:
            raise self.fail("the file does not exist", "check the path") from e
        except OSError as e:
            raise self.fail(f"the file cannot be opened ({e})", "check the path and access") from e

    @property
    def is_local(self) -> bool:
        """True when the native readers can open :attr:`path` themselves."""
        return self.filesystem is None

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The file opened for binary reading (streamed, not loaded whole)."""
        if self.filesystem is None:
            with open(self.path, "rb") as handle:
                yield handle
        else:
            with self.filesystem.open(self.path, "rb") as handle:
                yield handle

    @contextmanager
    def local_path(self) -> Iterator[str]:
        """A path on the local disk holding the file's bytes.

        ReadStat re-opens the file for every chunk and needs a seekable file it can find by
        name, so a file on a remote filesystem is first copied into a temporary directory
        (removed on exit).
        """
        if self.filesystem is None:
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="datom-onboard-") as tmp:
            local = os.path.join(tmp, "input." + self.fmt)
            with self.open() as remote, open(local, "wb") as copy:
                shutil.copyfileobj(remote, copy, length=1 << 20)
            yield local


def check_column_names(source: Source, names: Iterable[object]) -> None:
    """Refuse empty, non-string or duplicate column names (datom cannot version them)."""
    seen: set[str] = set()
    duplicates: list[str] = []
    for position, name in enumerate(names, start=1):
        if not isinstance(name, str) or name == "":
            raise source.fail(
                f"column {position} has no name",
                "give every column a unique, non-empty name in the header",
            )
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        listed = ", ".join(repr(n) for n in duplicates)
        raise source.fail(
            f"duplicate column names: {listed}",
            "rename the columns so that every name is unique, then onboard the file again",
        )
    if not seen:
        raise source.fail("the file has no columns", "export the table again with its columns")
