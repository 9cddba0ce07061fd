"""Onboarding commands: ``scan``, ``sync`` (the inbox) and ``check-hashable``."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click

from datom_core import (
    SUPPORTED_FORMATS,
    HashabilityReport,
    NotFoundError,
    OnboardingError,
    SyncRow,
    check_hashable,
)
from datom_core import read_extract as read_file
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._exit import EXIT_FINDING
from datom_core.cli._progress import tracker
from datom_core.cli._render import emit_json, print_table, short, to_jsonable

__all__ = ["check_hashable_command", "scan_command", "sync_command"]


@click.command("scan")
@click.argument("path", required=False, metavar="[PATH]")
@json_option
@pass_state
def scan_command(state: AppState, path: str | None) -> None:
    """Show what sync would do with each inbox file.

    Each file is new, changed, stale (an earlier version's file, left behind by a newer
    version: sync leaves it), unchanged or refused (unsupported format, bad name...).
    PATH is an inbox folder or s3://bucket/prefix; default: the clone's input_files/.
    Nothing is written.
    """
    rows = state.connection().scan_inbox(path, storage_options=_inbox_options(state, path))
    if state.json:
        emit_json(rows)
        return
    table = [
        (r.name, _basename(r.file), r.format, r.status, short(r.original_file_sha), r.message)
        for r in rows
    ]
    headers = ("table", "file", "format", "status", "file sha", "message")
    print_table(state.out, headers, table, empty="(the inbox is empty)")
    _print_counts(state, (r.status for r in rows))


_ENCODING_HELP = (
    "Encoding of the files' text, e.g. cp1252, latin1, utf-8 (csv and SAS/SPSS/Stata; "
    "default: UTF-8 for csv, the declared one for SAS/SPSS/Stata, falling back to "
    "Windows-1252 with a note when their text is not valid in it)."
)


@click.command("sync")
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--stop-on-error",
    is_flag=True,
    help="Stop at the first file that fails (default: onboard the others, report it).",
)
@click.option(
    "--revert",
    is_flag=True,
    help="Also onboard stale files: make their earlier versions current again.",
)
@click.option("--encoding", metavar="CODEC", help=_ENCODING_HELP)
@json_option
@pass_state
def sync_command(
    state: AppState, path: str | None, stop_on_error: bool, revert: bool, encoding: str | None
) -> None:
    """Onboard the new and changed inbox files.

    One version (and commit) per table; exit 1 if any file could not be onboarded.
    A stale file (an earlier version's, left behind by a newer version) is skipped;
    --revert makes its version current again in place of the newer one.
    PATH is an inbox folder or s3://bucket/prefix; default: the clone's input_files/.
    """
    conn = state.connection()
    conn.repo  # noqa: B018  (a reader connection fails here, before the inbox is read)
    options = _inbox_options(state, path)
    rows = conn.scan_inbox(path, storage_options=options)
    results: list[SyncRow] = []
    with tracker(state.err, state.progress) as progress:
        if stop_on_error:
            # All rows at once: sync then refuses a scan holding failed rows before any write.
            progress.phase("onboarding")
            results = conn.sync(
                rows,
                continue_on_error=False,
                storage_options=options,
                revert=revert,
                encoding=encoding,
            )
        else:
            # One row at a time so the bar moves per file; each table is its own commit anyway.
            progress.phase("onboarding", total=len(rows))
            for row in rows:
                results.extend(
                    conn.sync([row], storage_options=options, revert=revert, encoding=encoding)
                )
                progress.advance()
    failed = [r for r in results if r.status == "error"]
    if state.json:
        emit_json(results)
    else:
        _print_sync(state, results)
    if failed:
        raise click.exceptions.Exit(EXIT_FINDING)


def _inbox_options(state: AppState, path: str | None) -> dict[str, Any] | None:
    """The S3 endpoint and region of the global options, for an ``s3://`` inbox."""
    if not path or not path.lower().startswith(("s3://", "s3a://")):
        return None
    options: dict[str, Any] = {}
    if state.options.endpoint_url:
        options["endpoint_url"] = state.options.endpoint_url
    if state.options.region:
        options["client_kwargs"] = {"region_name": state.options.region}
    return options or None


def _print_sync(state: AppState, results: Sequence[SyncRow]) -> None:
    table = [
        (r.name, _basename(r.file), r.status, r.change, short(r.version), r.message)
        for r in results
    ]
    headers = ("table", "file", "status", "change", "version", "message")
    print_table(state.out, headers, table, empty="(the inbox is empty)")
    _print_counts(state, (r.status for r in results))


def _print_counts(state: AppState, statuses: Iterable[str]) -> None:
    counts = Counter(statuses)
    if counts:
        state.out.print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))


def _basename(location: str | None) -> str:
    if not location:
        return "-"
    return location.rstrip("/").replace(os.sep, "/").rsplit("/", 1)[-1]


@click.command("check-hashable")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(SUPPORTED_FORMATS), case_sensitive=False),
    help="Read FILE as this format (default: from its extension).",
)
@click.option("--encoding", metavar="CODEC", help=_ENCODING_HELP)
@json_option
@pass_state
def check_hashable_command(
    state: AppState, file: Path, fmt: str | None, encoding: str | None
) -> None:
    """Check that datom can version FILE; exit 1 if not.

    Reads FILE as onboarding would and reports each column, with the recourse for any
    column datom cannot hash.
    """
    if not file.is_file():
        raise NotFoundError(f"file {str(file)!r} does not exist; check the path")
    known = fmt is not None or file.suffix.lower().lstrip(".") in SUPPORTED_FORMATS
    try:
        data = read_file(file, format=fmt, encoding=encoding)
    except OnboardingError as e:
        if not known:
            raise  # not a format datom onboards: a usage problem, not a finding
        _refused_file(state, file, e)  # e.g. duplicate or empty column names
        raise click.exceptions.Exit(EXIT_FINDING) from e
    report = check_hashable(data)
    if state.json:
        emit_json({"file": str(file), "ok": report.ok, **to_jsonable(report)})
    else:
        _print_hashability(state, file, report)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_FINDING)


def _refused_file(state: AppState, file: Path, error: OnboardingError) -> None:
    if state.json:
        emit_json({"file": str(file), "ok": False, "columns": [], "error": str(error)})
    else:
        state.out.print(f"{file.name} cannot be versioned: {error}", soft_wrap=True)


def _print_hashability(state: AppState, file: Path, report: HashabilityReport) -> None:
    rows = [(c.column, c.dtype, c.status, c.recourse) for c in report.columns]
    print_table(state.out, ("column", "dtype", "status", "recourse"), rows, empty="(no columns)")
    if report.ok:
        state.out.print(f"ok: datom can version {file.name}")
    else:
        n = len(report.unsupported)
        state.out.print(f"{file.name}: {n} column(s) cannot be versioned; see the recourse above")
