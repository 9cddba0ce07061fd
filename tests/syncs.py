"""Which files a piece of code fsyncs: ``os.fsync`` wrapped to record each path."""

from __future__ import annotations

import os

import pytest


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on (for the test), the path of every fsynced descriptor, in order."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced
