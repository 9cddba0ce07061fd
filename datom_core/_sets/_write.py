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

import json
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from datom_core._errors import (
    DatomError,
    GitError,
    IntegrityError,
    PushRejectedError,
    ReadOnlyError,
)
from datom_core._git import MetadataRepo
from datom_core._names import validate_table_name
from datom_core._sets import _manifest as M
from datom_core._sets._documents import (
    WRITTEN_BY,
    history_entry,
    history_with_commits,
    manifest_entry,
    set_metadata,
    set_version,
)
from datom_core._sets._errors import (
    InconsistentParentsError,
    NotProductRepoError,
    SetNameMismatchError,
)
from datom_core._sets._json import document_sha, serialise_payload
from datom_core._sets._payload import normalise_payload
from datom_core._sets._read import read_json, snapshot_of
from datom_core._sets._records import SetMember, SetVersion, SetWriteResult
from datom_core._sets._sv1 import hash_set
from datom_core._store import Store

__all__ = ["SetContext", "check_parents", "declared_set", "write_set"]

_MAX_ATTEMPTS = 20
_READERS = 16

MANIFEST_MOVED = (
    "manifest format moved from v1 to v2; R datom 0.1.x collaborators will list this project "
    "as empty until they upgrade"
)


class SetContext(Protocol):
    """What a set write needs: the project name, its store and its clone."""

    @property
    def project_name(self) -> str: ...

    @property
    def store(self) -> Store: ...

    @property
    def repo(self) -> MetadataRepo | None: ...


@dataclass(frozen=True)
class _Plan:
    name: str
    change: str
    data_sha: str
    version: str
    document_sha: str
    member_count: int
    payload: bytes
    metadata: bytes
    history: list[dict[str, Any]]
    manifest: bytes
    upload: bool
    message: str
    converted: bool = False  # the clone's manifest moved from format 1 to format 2

    @property
    def files(self) -> dict[str, bytes]:
        return {
            M.git_payload(self.name): self.payload,
            M.git_metadata(self.name): self.metadata,
            M.git_history(self.name): M.dump_document(self.history),
            M.MANIFEST: self.manifest,
        }

    def result(self, commit: str | None, uploaded: bool) -> SetWriteResult:
        return SetWriteResult(
            self.name, "none" if self.change == "none" else "full", self.version, self.data_sha, self.document_sha,
            self.member_count, commit, uploaded,
        )  # fmt: skip


def write_set(
    ctx: SetContext,
    members: Sequence[Any],
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
    if isinstance(members, SetVersion):
        members, tags, name = _unpack(ctx, members, tags, name)
    repo = ctx.repo
    if repo is None:
        raise ReadOnlyError(
            f"this connection to {ctx.project_name!r} is a reader (store only): open the "
            "product repo's clone to write its set"
        )
    with repo.lock():
        for _ in range(_MAX_ATTEMPTS):
            repo.fetch_and_reset()
            plan = _plan(ctx, repo, members, tags, message, name, datom_version)
            if plan.change == "none":
                _converge(ctx, repo, plan)
                return plan.result(None, False)
            commit = repo.commit(plan.files, plan.message)
            try:
                repo.push()
            except PushRejectedError:
                continue
            except GitError:
                repo.fetch_and_reset()
                raise
            uploaded = _mirror(ctx, repo, plan, commit)
            if plan.converted:
                warnings.warn(MANIFEST_MOVED, UserWarning, stacklevel=2)
            return plan.result(commit, uploaded)
    raise PushRejectedError(
        f"set {name or ''!r}: the remote kept moving; gave up after {_MAX_ATTEMPTS} attempts. "
        "Nothing was recorded; retry the write."
    )


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


def _load(raw: bytes | None, key: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IntegrityError(
            f"{key} in the clone is not valid JSON ({e}); restore it from git "
            "(validate(fix=True)) before writing",
            key=key,
        ) from e


def declared_set(repo: MetadataRepo, project_name: str, name: str | None) -> str:
    """The set this product repo declares, after the product-mode and name gates."""
    raw = repo.read(M.PROJECT_YAML)
    if raw is None:
        raise NotProductRepoError(f"{repo.path} holds no {M.PROJECT_YAML}: not a datom project")
    try:
        config = yaml.safe_load(raw) or {}
    except yaml.YAMLError as e:
        raise NotProductRepoError(f"{M.PROJECT_YAML} does not parse ({e})") from e
    M.check_writer_floor(config)
    mode = config.get("mode")
    if mode != "product":
        said = "declares no mode" if mode is None else f"declares mode {mode!r}"
        raise NotProductRepoError(
            f"writing a set needs a product repo, and {M.PROJECT_YAML} {said}. Create one with "
            'init_repo(path, project, store, mode="product", set="<name>"): one repo holds one set.'
        )
    declared = config.get("set")
    if not isinstance(declared, str) or not declared:
        raise NotProductRepoError(
            f"this repo declares mode: product but names no set; add set: <name> to {M.PROJECT_YAML}"
        )
    if name is not None and name != declared:
        raise SetNameMismatchError(
            f"this repo's set is {declared!r}, not {name!r}: one repo holds one set. Write "
            f"{declared!r} here, or write {name!r} from its own repo."
        )
    if config.get("project_name") != project_name:
        raise SetNameMismatchError(
            f"{M.PROJECT_YAML} declares project {config.get('project_name')!r}, and this "
            f"connection is for {project_name!r}"
        )
    return validate_table_name(declared)


def _plan(
    ctx: SetContext,
    repo: MetadataRepo,
    members: Sequence[Any],
    tags: Mapping[str, Any] | None,
    message: str | None,
    name: str | None,
    datom_version: str,
) -> _Plan:
    """Every refusal, then the documents of the write; nothing is written here."""
    project = ctx.project_name
    name = declared_set(repo, project, name)
    manifest = _load(repo.read(M.MANIFEST), M.MANIFEST)
    if manifest is not None:
        M.check_manifest(manifest)
    current = _load(repo.read(M.git_metadata(name)), M.git_metadata(name))
    M.check_metadata(current, name=name, expected_kind="set", key=M.git_metadata(name))
    payload = normalise_payload(members, tags, name=name, project=project)
    check_parents(_stores(ctx, members), name, payload["members"])
    data_sha = hash_set(payload)
    count = len(payload["members"])
    history = list(_load(repo.read(M.git_history(name)), M.git_history(name)) or [])
    if current is not None and current.get("data_sha") == data_sha:
        version = set_version(current)
        raw = repo.read(M.git_payload(name)) or b""
        return _Plan(name, "none", data_sha, version, str(current.get("document_sha", "")),
                     count, raw, repo.read(M.git_metadata(name)) or b"", history,
                     repo.read(M.MANIFEST) or b"", False, "")  # fmt: skip
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
    new_manifest = M.manifest_with_set(manifest, project, name, entry_doc, metadata["created_at"])
    return _Plan(name, "full", data_sha, version, doc_sha, count, body, M.dump_document(metadata),
                 history, M.dump_document(new_manifest), upload, text,
                 manifest is not None and "artifacts" not in manifest)  # fmt: skip


def _stores(ctx: SetContext, members: Sequence[Any]) -> dict[str, Store]:
    """This project's store, and the store each typed member of another project came from."""
    stores: dict[str, Store] = {}
    for m in members:
        if isinstance(m, SetMember) and isinstance(m.store, Store):
            stores.setdefault(m.project, m.store)
    stores[ctx.project_name] = ctx.store
    return stores


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


def check_parents(
    stores: Mapping[str, Store], name: str, members: Sequence[Mapping[str, Any]]
) -> None:
    """Every member whose project's store is known (always this project's) must resolve to
    a snapshot, and the parents it records must agree with the versions the set pins."""
    ids = [m["id"] for m in members]
    known = [i for i in ids if i["project"] in stores]  # other stores: only via their connection

    def snapshot(ident: Mapping[str, str]) -> Mapping[str, Any]:
        store = stores[ident["project"]]
        return snapshot_of(store, ident["project"], ident["name"], ident["version"])

    # One small document per member; a study cut can pin thousands, so read them in parallel.
    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        snapshots = list(pool.map(snapshot, known))
    pins: dict[tuple[str, str], list[str]] = {}
    for i in ids:
        pins.setdefault((i["project"], i["name"]), []).append(i["version"])
    problems = []
    for ident, snap in zip(known, snapshots, strict=True):
        parents = snap.get("parents") or []
        for p in [parents] if isinstance(parents, Mapping) else parents:
            fields = [
                p.get(k) if isinstance(p, Mapping) else None for k in ("source", "table", "version")
            ]
            if not all(isinstance(f, str) and f for f in fields):
                continue
            source, table, used = fields
            pinned = pins.get((str(source), str(table)), [])
            if pinned and used not in pinned:
                problems.append(
                    f"{ident['name']} was built from {table} {str(used)[:8]}; the set pins {table} "
                    f"at {', '.join(v[:8] for v in pinned)}"
                )
    if problems:
        raise InconsistentParentsError(
            f"set {name!r} pins inputs at versions its outputs were not built from: "
            + "; ".join(problems)
            + ". Re-derive the output from the pinned versions, or move the input to the "
            "version the output used (update_members). Nothing has been written."
        )


def _converge(ctx: SetContext, repo: MetadataRepo, plan: _Plan) -> None:
    """An unchanged set: finish a mirror an interrupted write left behind, if any."""
    store = ctx.store
    stale = (
        read_json(store, M.store_metadata(plan.name)) is None
        or store.read_bytes(M.store_metadata(plan.name)) != plan.metadata
        or not store.exists(M.store_snapshot(plan.name, plan.version))
        or not store.exists(M.store_payload(plan.name, plan.data_sha))
    )
    if stale and plan.payload and document_sha(plan.payload) == plan.document_sha:
        _mirror(ctx, repo, plan, None, upload=True)


def _commits_by_version(repo: MetadataRepo, name: str) -> dict[str, str]:
    """Version -> the first commit that recorded it, from git (oldest first)."""
    found: dict[str, str] = {}
    path = M.git_metadata(name)
    for commit in reversed(repo.log(path)):
        raw = repo.read_at(commit.id, path)
        try:
            doc = json.loads(raw) if raw is not None else None
        except ValueError:
            continue
        if isinstance(doc, Mapping):
            found.setdefault(set_version(doc), commit.id)
    return found


def _mirror(
    ctx: SetContext, repo: MetadataRepo, plan: _Plan, commit: str | None, upload: bool | None = None
) -> bool:
    """Copy the write to the store: the payload before anything names the version."""
    store, name = ctx.store, plan.name
    uploaded = False
    if plan.upload if upload is None else upload:
        key = M.store_payload(name, plan.data_sha)
        uploaded = store.put_if_absent(key, plan.payload)
        if not uploaded and store.sha256(key) != plan.document_sha:
            store.write_bytes(key, plan.payload)  # an object no recorded version pins
            uploaded = True
    store.put_if_absent(M.store_snapshot(name, plan.version), plan.metadata)
    stored = read_json(store, M.store_history(name)) or []
    derived = {plan.version: commit} if commit else {}
    known = {h.get("version") for h in stored if isinstance(h, Mapping) and h.get("commit_sha")}
    if any(h.get("version") not in known and h.get("version") not in derived for h in plan.history):
        derived = {**_commits_by_version(repo, name), **derived}
    history = history_with_commits(plan.history, stored, derived)
    store.write_bytes(M.store_history(name), M.dump_document(history))
    store.write_bytes(M.store_metadata(name), plan.metadata)
    store.write_bytes(M.STORE_MANIFEST, plan.manifest)
    return uploaded
