"""``.datom/project.yaml`` in R's shape (FORMAT2.md §5), from a store description.

R opens a Python clone as a developer only when the file has R's shape: ``storage.data``
with ``type``/``root``/``prefix`` (an S3 bucket is the ``root``) and ``repos.data``
with ``remote_url``. Keys R does not know (an S3 endpoint URL) ride under ``storage.data``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import yaml

from datom_core._project._model import ProjectConfig
from datom_core._version import WRITTEN_BY

__all__ = ["CONFIG_SCHEMA_VERSION", "r_project_yaml", "r_shape_of"]

CONFIG_SCHEMA_VERSION = 1


def _storage_for_r(description: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(description)
    if out.get("type") == "s3":
        data = {"type": "s3", "root": out.pop("bucket", None), "prefix": out.pop("prefix", None)}
        data["region"] = out.pop("region", None)
        data.update({k: v for k, v in out.items() if k != "type" and v is not None})
        return data
    data = {"type": out.pop("type", None), "root": out.pop("root", None)}
    data["prefix"] = out.pop("prefix", None)
    data.update({k: v for k, v in out.items() if v is not None})
    return data


def r_project_yaml(
    project_name: str,
    storage: Mapping[str, Any],
    remote_url: str | None,
    *,
    created_at: str | None = None,
    description: str = "",
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """The file R 0.2.0 writes (``extra``: ``mode``, ``set``, ``min_writer_version``)."""
    doc: dict[str, Any] = {
        "project_name": project_name,
        "project_description": description,
        "created_at": created_at or dt.date.today().isoformat(),
        "datom_version": WRITTEN_BY,
        "schema_version": CONFIG_SCHEMA_VERSION,
        "storage": {"data": _storage_for_r(storage), "max_file_size_gb": 1000},
        "repos": {"data": {"remote_url": remote_url}},
        "sync": {"continue_on_error": True, "parallel_uploads": 4},
        "renv": False,
    }
    for key, value in (extra or {}).items():
        if value is not None:
            doc[key] = value
    return yaml.safe_dump(doc, sort_keys=False).encode("utf-8")


def r_shape_of(config: ProjectConfig) -> bytes | None:
    """The previous release's project.yaml rewritten in R's shape; None if it already is."""
    if config.r_shape or config.storage is None:
        return None
    return r_project_yaml(config.project_name, config.storage, config.remote_url)
