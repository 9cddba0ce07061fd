"""Set commands: ``datom set write|show|members|diff``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click

from datom_core import SetMember, SetVersion, Store, connect
from datom_core.cli._app import AppState, json_option, pass_state
from datom_core.cli._commands_read import source_pairs
from datom_core.cli._connect import make_store
from datom_core.cli._render import emit_json, print_fields, print_table, short
from datom_core.cli._setref import SetRef, hex_lower, open_set

__all__ = ["set_group"]


@click.group("set")
def set_group() -> None:
    """Sets: one citable version pinning exact versions of tables (a product repo's set)."""


def _pairs(values: Sequence[str], option: str) -> list[tuple[str, str]]:
    out = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r}: use KEY=VALUE", param_hint=option)
        out.append((key, rest))
    return out


def _tag_map(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for key, value in pairs:
        tags.setdefault(key, []).append(value)
    return tags


def _declare(state: AppState, spec: str, sources: dict[str, str], tags: Any) -> SetMember:
    project, sep, rest = spec.rpartition(":")
    table, at, version = rest.partition("@")
    conn = state.connection()
    if sep and project != conn.project_name:
        if project not in sources:
            raise click.BadParameter(
                f"{spec!r}: give --source {project}=STORE_URL for members of another project",
                param_hint="--member",
            )
        store = make_store(sources[project], state.options, existing=True)
        conn = connect(store=store, project_name=project)
    return conn.member(table, hex_lower(version) if at else None, tags or None)


def _located(members: list[SetMember], stores: dict[str, Store]) -> list[SetMember]:
    """``members`` with the stores ``--source`` gives for their projects (recorded when
    the set is written, so the product repo knows where they live)."""
    return [replace(m, store=stores[m.project]) if m.project in stores else m for m in members]


@set_group.command("write")
@click.option(
    "--member",
    "members",
    multiple=True,
    metavar="[PROJECT:]TABLE[@VERSION]",
    help="A member (repeatable); the current version unless @VERSION is given.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="PROJECT=STORE_URL",
    help="Where another project's members live (repeatable); recorded in the product repo "
    "(project.yaml: member_stores), so that datom read --set can fetch them.",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="A set-level label (repeatable; a key given twice has two values).",
)
@click.option(
    "--member-tag",
    "member_tags",
    multiple=True,
    metavar="TABLE:KEY=VALUE",
    help="A label of the --member called TABLE (repeatable).",
)
@click.option(
    "--update",
    is_flag=True,
    help="Start from the current set and repoint this project's members to their current versions.",
)
@click.option("--message", "-m", help="The commit message (default: Update <set>).")
@json_option
@pass_state
def write_command(
    state: AppState, members: tuple[str, ...], sources: tuple[str, ...], tags: tuple[str, ...],
    member_tags: tuple[str, ...], update: bool, message: str | None,
) -> None:  # fmt: skip
    """Write a new version of this repo's set (nothing when the payload is unchanged)."""
    conn = state.connection()
    where = source_pairs(sources, "--source")
    stores = {
        p: make_store(url, state.options, existing=True)
        for p, url in where.items()
        if p != conn.project_name
    }
    labels: dict[str, list[tuple[str, str]]] = {}
    for spec in member_tags:
        table, sep, pair = spec.partition(":")
        if not sep:
            raise click.BadParameter(f"{spec!r}: use TABLE:KEY=VALUE", param_hint="--member-tag")
        labels.setdefault(table, []).extend(_pairs([pair], "--member-tag"))
    listed: list[SetMember] = []
    set_tags: Any = _tag_map(_pairs(tags, "--tag")) or None
    edit_message = message
    if update or not members:
        current = conn.get_set()
        edit = conn.update_members(current) if update else None
        listed = list(edit.members if edit else current.members)
        set_tags = set_tags if set_tags is not None else current.tag_json()
        edit_message = message or (edit.message(current.name) if edit else None)
    declared = [
        _declare(
            state, spec, where, _tag_map(labels.get(spec.rpartition(":")[2].partition("@")[0], []))
        )
        for spec in members
    ]
    chosen = _located(list(conn.add_members(listed, declared).members), stores)
    result = conn.write_set(chosen, set_tags, edit_message)
    if state.json:
        emit_json(result)
        return
    state.out.print(
        f"{result.name}: {result.change} {short(result.version)} "
        f"({result.member_count} members, data {short(result.data_sha)})"
    )


_SET_VERSION = click.argument("version", required=False, metavar="[VERSION]")


def _set_at(state: AppState, version: str | None) -> SetVersion:
    """VERSION: an id or prefix, or <project>/<set>[@<version>] as a data cut prints it."""
    ref = SetRef.parse(version) if version and ("/" in version or "@" in version) else None
    if ref is None:
        return state.connection().get_set(hex_lower(version))
    return open_set(state.connection(), ref, "VERSION")


@set_group.command("show")
@_SET_VERSION
@json_option
@pass_state
def show_command(state: AppState, version: str | None) -> None:
    """Show a version of this project's set (current by default).

    VERSION: a set version id or prefix, or <project>/<set>@<version> (a data cut's pin).
    """
    x = _set_at(state, version)
    if state.json:
        emit_json(x.to_json())
        return
    tags = "; ".join(f"{k}={'|'.join(v)}" for k, v in x.tags.items())
    print_fields(
        state.out,
        [("set", x.name), ("project", x.project), ("version", x.version),
         ("data_sha", x.data_sha), ("document_sha", x.document_sha),
         ("members", len(x.members)), ("tags", tags or None)],
    )  # fmt: skip


def _member_rows(x: SetVersion) -> list[tuple[Any, ...]]:
    return [
        (m.project, m.name, m.kind, short(m.version),
         "; ".join(f"{k}={'|'.join(v)}" for k, v in m.tags.items()) or None)
        for m in x.members
    ]  # fmt: skip


@set_group.command("members")
@_SET_VERSION
@json_option
@pass_state
def members_command(state: AppState, version: str | None) -> None:
    """List the members of a version of this project's set (VERSION as for set show).

    Read a member's data with datom read --set VERSION --member TABLE --out FILE.
    """
    x = _set_at(state, version)
    if state.json:
        emit_json([m.to_json() for m in x.members])
        return
    print_table(state.out, ("project", "name", "kind", "version", "tags"), _member_rows(x))


@set_group.command("diff")
@click.argument("v1", required=False)
@click.argument("v2", required=False)
@json_option
@pass_state
def diff_command(state: AppState, v1: str | None, v2: str | None) -> None:
    """What changed in this project's set from V1 to V2 (V2: current; V1: the one before)."""
    diff = state.connection().diff_sets(hex_lower(v1), hex_lower(v2))
    if state.json:
        emit_json(diff.to_json())
        return
    state.out.print(diff.to_markdown())
