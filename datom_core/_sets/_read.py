"""Reading sets, and declaring members, from a project's store alone (no git, no token).

A set read resolves the version from the store's history, downloads
``<name>/<data_sha>.json``, verifies its SHA-256 against the recorded ``document_sha``
**before parsing** (a missing ``document_sha`` is an error, not a skip), parses, and
checks each member's ``id``. ``data_sha`` is not recomputed and nothing is tidied: the
read reports exactly what was cited.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datom_core._errors import (
    AmbiguousVersionError,
    ArtifactKindError,
    FormatError,
    IntegrityError,
    MalformedSetError,
    MissingDocumentShaError,
    NotFoundError,
    UnresolvableMemberError,
)
from datom_core._identity._canonical import metadata_sha
from datom_core._names import validate_table_name, validate_version
from datom_core._project._documents import load
from datom_core._sets import _manifest as M
from datom_core._sets._json import document_sha, parse_payload
from datom_core._sets._payload import ARTIFACT_KINDS, ID_FIELDS, normalise_tags
from datom_core._sets._records import Opener, SetMember, SetVersion

__all__ = [
    "current_versions",
    "declare_member",
    "get_set",
    "read_json",
    "read_set",
    "set_names",
    "snapshot_of",
]


def read_json(store: Any, key: str) -> Any:
    """A stored JSON document, or None when the key does not exist."""
    try:
        raw = store.read_bytes(key)
    except NotFoundError:
        return None
    return load(raw, key=key)


def _check_schema(doc: Any, key: str) -> None:
    schema = doc.get("schema_version", 1) if isinstance(doc, Mapping) else 1
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > 2:
        raise FormatError(
            f"{key} is schema_version {schema}, newer than this datom reads; upgrade datom",
            field="schema_version",
            file=key,
        )


def _pick(history: list[Any], version: str, what: str) -> Mapping[str, Any]:
    validate_version(version)
    hits = [
        h
        for h in history
        if isinstance(h, Mapping) and str(h.get("version", "")).startswith(version)
    ]
    if not hits:
        raise NotFoundError(
            f"version {version!r} not found in the history of {what}; list them with "
            "history() / datom history"
        )
    if len({h["version"] for h in hits}) > 1:
        raise AmbiguousVersionError(
            f"version prefix {version!r} of {what} matches {len(hits)} versions; use a longer one",
            tuple(h["version"] for h in hits),
        )
    return hits[0]


def set_names(store: Any) -> list[str]:
    """The names of the sets the store's manifest lists."""
    doc = read_json(store, M.STORE_MANIFEST) or {}
    entries = doc.get("artifacts") or {}
    return sorted(
        n for n, e in entries.items() if isinstance(e, Mapping) and e.get("kind") == "set"
    )


def get_set(
    store: Any,
    project_name: str,
    version: str | None = None,
    *,
    name: str | None = None,
    opener: Opener | None = None,
    stores: Mapping[str, Any] | None = None,
) -> SetVersion:
    """The set of a project at ``version``: ``name`` defaults to the one set its store lists
    (a product repo holds one set; a developer connection passes the declared name).
    ``stores``: project -> store of the members of other projects (as recorded)."""
    if name is None:
        names = set_names(store)
        if not names:
            raise NotFoundError(
                f"project {project_name!r} holds no set: a set lives in a product repo (datom "
                "init --mode product --set NAME); open that project's clone or store"
            )
        if len(names) > 1:
            raise NotFoundError(
                f"project {project_name!r} lists {len(names)} sets ({', '.join(names)}); give "
                f"the set's name (datom set show '{project_name}/<set>')"
            )
        name = names[0]
    return read_set(store, project_name, name, version, opener=opener, stores=stores)


def read_set(
    store: Any,
    project_name: str,
    name: str,
    version: str | None = None,
    *,
    opener: Opener | None = None,
    stores: Mapping[str, Any] | None = None,
) -> SetVersion:
    """Set ``name`` at ``version`` (full id or unique prefix; ``None``: the current one).

    Each member carries the store it is fetched from: this project's ``store`` for its
    own, ``stores[project]`` for another project's (None when not known).
    """
    validate_table_name(name)
    key = M.store_metadata(name)
    current = read_json(store, key)
    if current is None:
        raise NotFoundError(f"no set {name!r} in project {project_name!r} ({store.url})")
    _check_schema(current, key)
    if current.get("kind", "table") != "set":
        raise ArtifactKindError(
            f"{name!r} is a {current.get('kind', 'table')}, not a set; read it with read()"
        )
    history = read_json(store, M.store_history(name)) or []
    if version is None:
        from_docs: Mapping[str, Any] = current
        resolved = M.set_version_of(current)
    else:
        from_docs = _pick(list(history), version, f"set {name!r}")
        resolved = str(from_docs["version"])
    data_sha = from_docs.get("data_sha")
    expected = from_docs.get("document_sha")
    if not isinstance(expected, str) or not expected:
        raise MissingDocumentShaError(
            f"the recorded metadata of set {name!r} version {resolved[:8]} carries no document_sha: "
            "the payload cannot be verified. Run validate() on this project.",
            key=key,
        )
    if not isinstance(data_sha, str):
        raise MalformedSetError(f"set {name!r} version {resolved[:8]} records no data_sha", key=key)
    validate_version(data_sha)
    payload_key = M.store_payload(name, data_sha)
    raw = store.read_bytes(payload_key)
    actual = document_sha(raw)
    if actual != expected:
        raise IntegrityError(
            f"the stored payload of set {name!r} failed its integrity check: {payload_key} has "
            f"SHA-256 {actual}, the set records document_sha {expected}. The object is corrupt "
            "or was tampered with; do not trust this set. Run validate() on its project.",
            key=payload_key,
            expected=expected,
            actual=actual,
        )
    payload = parse_payload(raw, key=payload_key)
    own = current.get("project") or project_name
    where = {**(stores or {}), own: store}
    return _set_version(where, payload, payload_key, opener, name=name, version=resolved,
                        project=current.get("project") or project_name, data_sha=data_sha,
                        document_sha=expected)  # fmt: skip


def _set_version(
    stores: Mapping[str, Any] | None, payload: Any, key: str, opener: Opener | None, **fields: Any
) -> SetVersion:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("members"), list):
        raise MalformedSetError(f"{key}: 'members' is not a list of member records", key=key)
    members = tuple(
        _member(stores or {}, m, f"{key} members[{i}]", opener)
        for i, m in enumerate(payload["members"])
    )
    try:
        tags = normalise_tags(payload.get("tags"), "tags")
    except Exception as e:
        raise MalformedSetError(f"{key}: {e}", key=key) from e
    return SetVersion(tags={k: tuple(v) for k, v in tags.items()}, members=members, **fields)


def _member(stores: Mapping[str, Any], record: Any, at: str, opener: Opener | None) -> SetMember:
    ident = record.get("id") if isinstance(record, Mapping) else None
    if not isinstance(ident, Mapping):
        raise MalformedSetError(f"{at} has no id map; the payload was hand-edited", key=at)
    for field in ID_FIELDS:
        value = ident.get(field)
        if not isinstance(value, str) or not value:
            raise MalformedSetError(f"{at}: id.{field} is not a single non-empty string", key=at)
    try:
        tags = normalise_tags(record.get("tags"), f"{at}.tags")
    except Exception as e:
        raise MalformedSetError(f"{at}: {e}", key=at) from e
    return SetMember(
        project=ident["project"], name=ident["name"], kind=ident["kind"], version=ident["version"],
        tags={k: tuple(v) for k, v in tags.items()}, opener=opener,
        # Another project's member lives in that project's store, which a set does not
        # name: the product repo's record of it, when there is one.
        store=stores.get(ident["project"]),
        set_reader=lambda s, p, n, v: read_set(s, p, n, v, opener=opener),
    )  # fmt: skip


def current_versions(store: Any) -> dict[str, str]:
    """Each table's current version as the store's manifest records it (what
    :func:`~datom_core._sets._edit.update_members` repoints members to)."""
    doc = read_json(store, M.STORE_MANIFEST) or {}
    entries = doc.get("artifacts") or doc.get("tables") or {}
    return {
        name: e["current_version"]
        for name, e in entries.items()
        if isinstance(e, Mapping) and e.get("kind", "table") == "table" and e.get("current_version")
    }


def _current_version(store: Any, table: str) -> str | None:
    doc = read_json(store, M.STORE_MANIFEST) or {}
    entries = doc.get("artifacts") or doc.get("tables") or {}
    entry = entries.get(table)
    return entry.get("current_version") if isinstance(entry, Mapping) else None


def snapshot_of(store: Any, project_name: str, table: str, version: str) -> Mapping[str, Any]:
    """The snapshot ``<table>/.metadata/<version>.json`` (full id), or the refusal."""
    key = M.store_snapshot(table, version)
    try:
        snap = read_json(store, key)
    except IntegrityError as e:
        raise UnresolvableMemberError(f"member {table}@{version[:8]}: {e}") from e
    if not isinstance(snap, Mapping):
        raise UnresolvableMemberError(
            f"member {table!r}@{version[:8]} not found in project {project_name!r}: no snapshot "
            f"{key} in {store.url}. A member must point at a version that exists; list them "
            "with history() / datom history."
        )
    _check_schema(snap, key)
    # A snapshot certifies itself; format-1 documents may still carry a key the old rule hashed.
    if version not in (M.set_version_of(snap), metadata_sha(snap)):
        raise IntegrityError(
            f"snapshot {key} in {store.url} does not certify itself (its content hashes to "
            f"{M.set_version_of(snap)}): it was altered, so member {table!r}@{version[:8]} "
            "cannot be trusted. Repair the project: validate(fix=True) / datom validate --fix.",
            key=key,
            expected=version,
            actual=M.set_version_of(snap),
        )
    return snap


def declare_member(
    store: Any,
    project_name: str,
    table: str,
    version: str | None = None,
    tags: Mapping[str, Any] | None = None,
    *,
    opener: Opener | None = None,
) -> SetMember:
    """A member pointing at ``version`` (id or unique prefix; ``None``: current) of ``table``.

    Its ``kind`` is the snapshot's (absent: table) and its ``project`` the snapshot's,
    else the store manifest's ``project_name``. It carries no ``data_sha``.
    """
    validate_table_name(table)
    clean = normalise_tags(tags, "tags")
    if version is None:
        full = _current_version(store, table)
        if full is None:
            raise UnresolvableMemberError(f"no artifact {table!r} in project {project_name!r}")
    elif len(validate_version(version)) == 64:
        full = version
    else:
        history = read_json(store, M.store_history(table)) or []
        try:
            full = str(_pick(list(history), version, f"{table!r}")["version"])
        except AmbiguousVersionError:
            raise
        except NotFoundError as e:
            raise UnresolvableMemberError(str(e)) from e
    snap = snapshot_of(store, project_name, table, full)
    kind = snap.get("kind", "table")
    if kind not in ARTIFACT_KINDS:
        raise FormatError(
            f"the snapshot of {table}@{full[:8]} declares kind {kind!r}; upgrade datom",
            field="kind",
            file=M.store_snapshot(table, full),
        )
    project = snap.get("project")
    if not isinstance(project, str) or not project:
        manifest = read_json(store, M.STORE_MANIFEST) or {}
        project = manifest.get("project_name") or project_name
    return SetMember(
        project=project, name=table, kind=kind, version=full,
        tags={k: tuple(v) for k, v in clean.items()}, store=store, opener=opener,
        set_reader=lambda s, p, n, v: read_set(s, p, n, v, opener=opener),
    )  # fmt: skip
