"""A set's documents: ``metadata.json``, its history entry, its manifest entry.

A set's metadata carries exactly ``schema_version, kind, data_sha, hash_algo,
document_sha, created_at, datom_version, project`` (R's order); its version is the
format-2 ``metadata_sha`` over the identity allowlist, which for a set is
``sha256('{"data_sha":"…","hash_algo":"datom-sv1","kind":"set"}')``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from datom_core._identity._canonical import metadata_sha
from datom_core._project._documents import SCHEMA_VERSION, utc_now
from datom_core._sets._sv1 import HASH_ALGO
from datom_core._version import WRITTEN_BY

__all__ = [
    "SCHEMA_VERSION",
    "WRITTEN_BY",
    "history_entry",
    "history_with_commits",
    "manifest_entry",
    "set_metadata",
    "set_version",
    "utc_now",
]


def set_version(metadata: Mapping[str, Any]) -> str:
    """The version id (format-2 ``metadata_sha``) of an artifact's metadata document."""

    return metadata_sha(metadata)


def set_metadata(
    *,
    data_sha: str,
    document_sha: str,
    project: str,
    datom_version: str,
    created_at: str | None = None,
) -> dict[str, Any]:
    """A set version's ``metadata.json``, keys in the order R writes them."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "set",
        "data_sha": data_sha,
        "hash_algo": HASH_ALGO,
        "document_sha": document_sha,
        "created_at": created_at or utc_now(),
        "datom_version": datom_version,
        "project": project,
    }


def history_entry(
    metadata: Mapping[str, Any], *, author_name: str, author_email: str, commit_message: str
) -> dict[str, Any]:
    """The clone's ``version_history.json`` entry for a set version (R's key order)."""
    return {
        "version": set_version(metadata),
        "data_sha": metadata["data_sha"],
        "timestamp": metadata["created_at"],
        "author": {"name": author_name, "email": author_email},
        "commit_message": commit_message,
        "document_sha": metadata["document_sha"],
    }


def manifest_entry(
    metadata: Mapping[str, Any], *, member_count: int, version_count: int, last_updated: str
) -> dict[str, Any]:
    """A set's manifest entry: ``member_count`` where a table has ``size_bytes``."""
    return {
        "kind": "set",
        "current_version": set_version(metadata),
        "current_data_sha": metadata["data_sha"],
        "last_updated": last_updated,
        "member_count": int(member_count),
        "version_count": int(version_count),
    }


def history_with_commits(
    history: Sequence[Mapping[str, Any]],
    stored: Iterable[Mapping[str, Any]],
    derived: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The store's copy of a history: each entry gains ``commit_sha``.

    A value the store already records is never repointed; otherwise ``derived`` (version
    -> the first commit that produced it, the commit just made included) fills it in. An
    entry whose commit is unknown omits the key.
    """
    known: dict[str, str] = {}
    for entry in stored:
        version, commit = entry.get("version"), entry.get("commit_sha")
        if isinstance(version, str) and isinstance(commit, str) and commit:
            known.setdefault(version, commit)
    for version, commit in derived.items():
        known.setdefault(version, commit)
    out = []
    for entry in history:
        copy = dict(entry)
        version = copy.get("version")
        if isinstance(version, str) and version in known:
            copy["commit_sha"] = known[version]
        out.append(copy)
    return out
