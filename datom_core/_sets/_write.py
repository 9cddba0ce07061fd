"""Writing a set (SETS.md): every refusal first, then one commit, a push, and the mirror.

1. the gates and the write door: a product repo declaring this set, formats this build
   writes, no artifact of the other kind under the name;
2. the payload normalised and refused as SETS.md says, each own-project member's
   snapshot read (it must exist, and its parents must agree with the pins);
3. an identical payload is ``none`` (no commit); a ``data_sha`` seen before reuses the
   recorded ``document_sha`` and the stored bytes (a revert uploads nothing);
4. ``<name>/set.json``, ``metadata.json``, ``version_history.json`` and the manifest in
   one commit, pushed (a rejected push is redone on the new remote state);
5. the mirror: the payload object, the snapshot, the history with ``commit_sha``, the
   metadata and the manifest.
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from datom_core._checkpoint import checkpoint
from datom_core._errors import (
    DatomError,
    GitError,
    IntegrityError,
    PushRejectedError,
    ReadOnlyError,
    SetNameMismatchError,
)
from datom_core._git import MetadataRepo
from datom_core._interrupt import terminate_as_interrupt
from datom_core._project._build import MANIFEST_MOVED
from datom_core._project._outcome import may_have_been_recorded
from datom_core._sets import _manifest as M
from datom_core._sets._documents import (
    WRITTEN_BY,
    history_entry,
    manifest_entry,
    set_metadata,
    set_version,
)
from datom_core._sets._gates import check_parents, declared_set, member_stores
from datom_core._sets._json import document_sha, serialise_payload
from datom_core._sets._mirror import SetPlan, converge_set, mirror_set
from datom_core._sets._payload import normalise_payload
from datom_core._sets._records import SetVersion, SetWriteResult
from datom_core._sets._sources import mirror_member_stores, with_member_stores
from datom_core._sets._sv1 import hash_set
from datom_core._store import Store

__all__ = ["SetContext", "write_set"]

_MAX_ATTEMPTS = 20


class SetContext(Protocol):
    """What a set write needs: the project name, its store and its clone."""

    @property
    def project_name(self) -> str: ...

    @property
    def store(self) -> Store: ...

    @property
    def repo(self) -> MetadataRepo | None: ...


def write_set(
    ctx: SetContext,
    members: Sequence[Any] | SetVersion,
    tags: Mapping[str, Any] | None = None,
    message: str | None = None,
    *,
    name: str | None = None,
    datom_version: str = WRITTEN_BY,
) -> SetWriteResult:
    """Record ``members`` and ``tags`` as the new version of the repo's set.

    ``members``: member records or :class:`SetMember` objects, or a :class:`SetVersion` read
    back (its tags are kept unless ``tags`` is given; its name and project must be this
    repo's). ``tags``: set-level labels. ``message``: default ``Update <name>``.
    """
    with terminate_as_interrupt():
        return _write_set(ctx, members, tags, message, name, datom_version)


def _write_set(
    ctx: SetContext,
    members: Sequence[Any] | SetVersion,
    tags: Mapping[str, Any] | None,
    message: str | None,
    name: str | None,
    datom_version: str,
) -> SetWriteResult:
    if isinstance(members, SetVersion):
        members, tags, name = _unpack(ctx, members, tags, name)
    repo = ctx.repo
    if repo is None:
        raise ReadOnlyError(
            f"this connection to {ctx.project_name!r} is a reader (store only): open the "
            "product repo's clone to write its set"
        )
    with repo.lock():
        for attempt in range(_MAX_ATTEMPTS):
            repo.fetch_and_reset()
            plan = _plan(ctx, repo, members, tags, message, name, datom_version)
            if plan.change == "none":
                converge_set(ctx.store, repo, plan)
                if plan.project_yaml is None:
                    mirror_member_stores(ctx.store, repo.read(M.PROJECT_YAML))
                    return plan.result(None, False)
            checkpoint("set:planned")
            commit = repo.commit(*_commit_of(plan))
            checkpoint("set:committed")
            try:
                repo.push()
            except PushRejectedError:
                # Another writer landed first: back off (randomised, so racers spread out).
                time.sleep(random.uniform(0, min(2.0, 0.05 * 2**attempt)))
                continue
            except GitError as e:
                # The answer may be lost after the remote applied the push: ask it.
                # (An unchanged set's commit only records where its members live: the
                # history cannot tell whether that landed, so it is simply redone later.)
                if plan.change == "none" or not _landed(repo, plan, e):
                    raise
            checkpoint("set:pushed")
            mirror_member_stores(ctx.store, repo.read(M.PROJECT_YAML))
            if plan.change == "none":  # only where the members live was recorded
                return plan.result(None, False)
            uploaded = mirror_set(ctx.store, repo, plan, commit)
            checkpoint("set:mirrored")
            if plan.converted:
                warnings.warn(MANIFEST_MOVED, UserWarning, stacklevel=2)
            return plan.result(commit, uploaded)
    raise PushRejectedError(
        f"set {name or ''!r}: the remote kept moving; gave up after {_MAX_ATTEMPTS} attempts. "
        "Nothing was recorded; retry the write."
    )


def _commit_of(plan: SetPlan) -> tuple[dict[str, bytes], str]:
    """The files and message of the plan's commit: the set version's, or, for an
    unchanged set whose members' stores are new to project.yaml, that record alone."""
    if plan.change != "none":
        return plan.files, plan.message
    assert plan.project_yaml is not None
    return {M.PROJECT_YAML: plan.project_yaml}, f"Record where the members of {plan.name} live"


def _landed(repo: MetadataRepo, plan: SetPlan, error: GitError) -> bool:
    """Whether the remote records ``plan``'s version though its push raised ``error``
    (the clone then moves to that tip); the error notes it when the remote cannot say."""
    try:
        tip = repo.remote_tip()
    except DatomError as asked:
        error.add_note(
            may_have_been_recorded(f"set {plan.name!r}", plan.version, asked)
            + " (a set write puts nothing in the store before its push)"
        )
        return False
    raw = tip.read(M.git_history(plan.name))
    try:
        history = M.parsed_document(raw, M.git_history(plan.name)) if raw is not None else None
    except DatomError:
        history = None
    recorded = isinstance(history, list) and any(
        isinstance(h, Mapping) and h.get("version") == plan.version for h in history
    )
    try:
        repo.catch_up(tip.commit)
    except DatomError:
        if recorded:
            error.add_note(f"set {plan.name!r}: version {plan.version} is recorded; pull")
        return False
    return recorded


def _unpack(
    ctx: SetContext, x: SetVersion, tags: Mapping[str, Any] | None, name: str | None
) -> tuple[Sequence[Any], Mapping[str, Any] | None, str]:
    if name is not None and name != x.name:
        raise SetNameMismatchError(
            f"you asked to write set {name!r}, but the set you passed is {x.name!r}; drop "
            "name=, or write it from its own repo"
        )
    if x.project != ctx.project_name:
        raise SetNameMismatchError(
            f"set {x.name!r} belongs to project {x.project!r}, and this repo is project "
            f"{ctx.project_name!r}: write it from its own repo, or build this repo's set from "
            "its members (write_set(conn, x.members))"
        )
    return x.members, x.tag_json() if tags is None else tags, x.name


def _plan(
    ctx: SetContext,
    repo: MetadataRepo,
    members: Sequence[Any],
    tags: Mapping[str, Any] | None,
    message: str | None,
    name: str | None,
    datom_version: str,
) -> SetPlan:
    """Every refusal, then the documents of the write; nothing is written here."""
    project = ctx.project_name
    name = declared_set(repo, project, name)
    M.write_door(repo, name)
    current = M.parsed_document(repo.read(M.git_metadata(name)), M.git_metadata(name))
    payload = normalise_payload(members, tags, name=name, project=project)
    data_sha = hash_set(payload)
    count = len(payload["members"])
    history = list(M.parsed_document(repo.read(M.git_history(name)), M.git_history(name)) or [])
    stores = member_stores(project, ctx.store, members)
    others = {p: s for p, s in stores.items() if p != project}
    config = repo.read(M.PROJECT_YAML)
    recorded = with_member_stores(config, others) if config is not None else None
    if current is not None and current.get("data_sha") == data_sha:
        version = set_version(current)
        raw = repo.read(M.git_payload(name)) or b""
        return SetPlan(name, "none", data_sha, version, str(current.get("document_sha", "")),
                     count, raw, repo.read(M.git_metadata(name)) or b"", history,
                     repo.read(M.MANIFEST) or b"", False, "", project_yaml=recorded)  # fmt: skip
    # After the `none` case: an identical rewrite of a set R accepted (R checks only its
    # own project's members) records nothing, so there is nothing to refuse.
    check_parents(stores, name, payload["members"])
    body, doc_sha, upload = _payload_bytes(ctx.store, name, data_sha, payload, history)
    metadata = set_metadata(
        data_sha=data_sha, document_sha=doc_sha, project=project, datom_version=datom_version
    )
    version = set_version(metadata)
    text = message or f"Update {name}"
    if not any(isinstance(h, Mapping) and h.get("version") == version for h in history):
        author = repo.default_author()
        entry = history_entry(
            metadata, author_name=author.name, author_email=author.email, commit_message=text
        )
        history = [entry, *history]
    entry_doc = manifest_entry(
        metadata,
        member_count=count,
        version_count=len(history),
        last_updated=metadata["created_at"],
    )
    manifest, converted = M.manifest_with_set(
        repo.read(M.MANIFEST), project, name, entry_doc, metadata["created_at"]
    )
    return SetPlan(name, "full", data_sha, version, doc_sha, count, body, M.dump_document(metadata),
                   history, manifest, upload, text, converted, recorded)  # fmt: skip


def _payload_bytes(
    store: Store, name: str, data_sha: str, payload: Mapping[str, Any], history: list[Any]
) -> tuple[bytes, str, bool]:
    """(bytes for the clone, document_sha to record, whether to upload)."""
    fresh = serialise_payload(payload)
    recorded = next(
        (h["document_sha"] for h in history
         if isinstance(h, Mapping) and h.get("data_sha") == data_sha and h.get("document_sha")),
        None,
    )  # fmt: skip
    if recorded is None:
        return fresh, document_sha(fresh), True
    # A revert: the stored object is pinned by the earlier version, reuse it byte for byte.
    key = M.store_payload(name, data_sha)
    try:
        stored = store.read_bytes(key)
    except DatomError:
        stored = None
    if stored is not None and document_sha(stored) == recorded:
        return stored, recorded, False
    if document_sha(fresh) == recorded:
        return fresh, recorded, True  # the pinned object went missing: restore the same bytes
    raise IntegrityError(
        f"set {name!r}: an earlier version pins {key} with document_sha {recorded}, but the "
        "store holds other bytes and this payload serialises differently. Run validate() on "
        "this project before writing.",
        key=key,
        expected=recorded,
    )
