"""Progress bars (rich) on stderr for long transfers; a silent stand-in when disabled."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

__all__ = ["Tracker", "tracker"]


class Tracker:
    """Reports the phases and steps of one long operation; does nothing when disabled."""

    def __init__(self, progress: Progress | None = None) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, description: str, total: int | None = None) -> None:
        """Start a phase; ``total=None`` is a phase of unknown length (a pulsing bar)."""
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, steps: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, steps)


@contextmanager
def tracker(console: Console, enabled: bool) -> Iterator[Tracker]:
    """A :class:`Tracker` drawing on ``console`` if ``enabled``; the bar vanishes at the end."""
    if not enabled:
        yield Tracker()
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        yield Tracker(progress)
