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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from datom_core._errors import DatomError
from datom_core._project._config import _storage_for_r
from datom_core._project._parse import _storage_from_r
from datom_core._store import Store, store_from_description

__all__ = ["MEMBER_STORES", "member_store_map", "recorded_stores", "with_member_stores"]

#: The key of ``.datom/project.yaml`` that records the members' stores.
MEMBER_STORES = "member_stores"


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
