"""Where a product repo's members live: the stores of the other projects its set pins.

A set names each member by project, table and version, never by store (SETS.md), so a
product repo whose members live in another project could not fetch them. When a set is
written, the store of every other project a member came from is recorded in the product
repo's ``.datom/project.yaml`` under ``member_stores``, each in the shape of
``storage.data`` (``type``, ``root``, ``prefix``; never a credential):

    member_stores:
      STUDY_001: {type: local, root: /data/STUDY_001/store, prefix: null}

R datom 0.2.0 tolerates keys it does not know in this hand-edited file (and keeps them
when it rewrites it), so the repo stays an R product repo. Recording never removes an
entry: a set's older versions may pin projects its current one no longer lists.

A reader has the product's store alone, so the record is mirrored there too, as
``.metadata/member_stores.json`` (``{"member_stores": {...}}``, the same entries): no
artifact's key, so neither R's manifest rebuild nor any listing takes it for one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from datom_core._errors import DatomError
from datom_core._project._config import _storage_for_r
from datom_core._project._parse import _storage_from_r
from datom_core._store import Store, store_from_description

__all__ = [
    "MEMBER_STORES",
    "STORE_RECORD",
    "member_store_map",
    "mirror_member_stores",
    "recorded_stores",
    "stored_member_stores",
    "with_member_stores",
]

#: The key of ``.datom/project.yaml`` that records the members' stores.
MEMBER_STORES = "member_stores"
#: The store's copy of the record, for readers of the product's store alone.
STORE_RECORD = ".metadata/member_stores.json"


def recorded_stores(config: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Project -> store description, as ``project.yaml`` (parsed) records them."""
    found = (config or {}).get(MEMBER_STORES)
    if not isinstance(found, Mapping):
        return {}
    return {
        str(project): _storage_from_r(data)
        for project, data in found.items()
        if isinstance(data, Mapping) and data.get("type")
    }


def member_store_map(config: Mapping[str, Any] | None) -> dict[str, Store]:
    """Project -> a store opened from what ``project.yaml`` records (credentials, for S3,
    from the environment). A record that cannot be opened is left out: reading such a
    member then says that its store is not known, with the remedy."""
    stores: dict[str, Store] = {}
    for project, description in recorded_stores(config).items():
        try:
            stores[project] = store_from_description(description)
        except DatomError:
            continue
    return stores


def with_member_stores(raw: bytes, stores: Mapping[str, Store]) -> bytes | None:
    """``project.yaml`` with ``stores`` recorded (None when it records them already).

    Entries already recorded are kept; one that names a project again is replaced (the
    project moved). The rest of the file is kept as parsed, as R rewrites it.
    """
    doc = yaml.safe_load(raw)
    if not isinstance(doc, dict) or not stores:
        return None
    known = doc.get(MEMBER_STORES)
    recorded: dict[str, Any] = dict(known) if isinstance(known, Mapping) else {}
    updated = dict(recorded)
    for project in sorted(stores):
        updated[project] = _storage_for_r(stores[project].describe())
    if updated == recorded:
        return None
    doc[MEMBER_STORES] = {p: updated[p] for p in sorted(updated)}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8")


def mirror_member_stores(store: Store, project_yaml: bytes | None) -> None:
    """Copy the record of ``project_yaml`` (the clone's) to the store, if it differs."""
    if project_yaml is None:
        return
    recorded = (yaml.safe_load(project_yaml) or {}).get(MEMBER_STORES)
    if not isinstance(recorded, Mapping) or not recorded:
        return
    body = json.dumps({MEMBER_STORES: recorded}, indent=2, sort_keys=True) + "\n"
    raw = body.encode("utf-8")
    if store.read_if_present(STORE_RECORD) != raw:
        store.write_bytes(STORE_RECORD, raw)


def stored_member_stores(store: Store) -> dict[str, Store]:
    """Project -> store, from the store's copy of the record (empty when there is none or
    it is not JSON: the members are then fetched with ``--source``/``store=``)."""
    raw = store.read_if_present(STORE_RECORD)
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        return {}
    return member_store_map(doc if isinstance(doc, Mapping) else None)
