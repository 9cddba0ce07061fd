"""The documents of a project as typed, frozen records (FORMAT2.md).

Each record is built once, by ``_parse``, from the JSON a document holds; ``raw`` keeps
that JSON exactly as parsed, key order included, so that a document can be hashed or
carried forward byte for byte. :class:`TableMetadata` also reads as a mapping over
``raw``, as the plain dicts it replaces did.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ArtifactKind",
    "ColumnDigest",
    "HistoryEntry",
    "Manifest",
    "ManifestEntry",
    "ParentRef",
    "ProjectConfig",
    "SourceRef",
    "TableMetadata",
]

ArtifactKind = Literal["table", "set"]


@dataclass(frozen=True)
class SourceRef:
    """A raw source at the leaves of lineage: an onboarded table's data."""

    project: str
    table: str
    version_sha: str  # the data_sha of the raw source

    def to_json(self) -> dict[str, str]:
        """The entry as written in ``source_lineage``."""
        return {"project": self.project, "table": self.table, "version_sha": self.version_sha}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourceRef:
        """From a ``source_lineage`` entry."""
        return cls(d["project"], d["table"], d["version_sha"])


@dataclass(frozen=True)
class ParentRef:
    """An exact input of a derived version: ``(project, table, version, data_sha)``.

    ``source_lineage`` is the parent's own lineage, carried so that the child's lineage can
    be derived without another lookup; it is not written into the ``parents`` entry.
    """

    source: str
    table: str
    version: str
    data_sha: str
    source_lineage: tuple[SourceRef, ...] = ()

    def to_json(self) -> dict[str, str]:
        """The entry as written in ``parents``."""
        return {
            "source": self.source,
            "table": self.table,
            "version": self.version,
            "data_sha": self.data_sha,
        }


@dataclass(frozen=True)
class ColumnDigest:
    """One column's cv1 digest, as an old document's ``column_hashes`` recorded it."""

    name: str
    sha: str


@dataclass(frozen=True, eq=False)
class TableMetadata(Mapping[str, Any]):
    """One version of a table: every field of its ``metadata.json``, typed.

    ``version`` is the ``metadata_sha`` (computed once, over the identity allowlist);
    ``raw`` the document as parsed. Optional fields are None when the document omits
    them; ``source_lineage`` is None when absent and ``()`` when written as ``[]`` (the
    two hash differently). Indexing (``md["data_sha"]``) reads ``raw``.
    """

    raw: Mapping[str, Any] = field(repr=False)
    version: str
    data_sha: str
    nrow: int
    ncol: int
    colnames: tuple[str, ...]
    kind: ArtifactKind = "table"
    schema_version: int | None = None
    hash_algo: str | None = None
    parquet_sha: str | None = None
    table_type: str | None = None
    created_at: str | None = None
    datom_version: str | None = None
    project: str | None = None
    original_file_sha: str | None = None
    original_format: str | None = None
    parents: tuple[ParentRef, ...] = ()
    source_lineage: tuple[SourceRef, ...] | None = None
    size_bytes: int | None = None
    custom: Mapping[str, Any] | None = None
    column_hashes: tuple[ColumnDigest, ...] | None = None
    document_sha: str | None = None

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def to_json(self) -> dict[str, Any]:
        """The document as a plain (mutable) dict, in its recorded key order."""
        return dict(self.raw)

    @property
    def written_by_r(self) -> bool:
        """Whether R wrote this version (this package records ``py-<version>``)."""
        return bool(self.datom_version) and not str(self.datom_version).startswith("py-")


@dataclass(frozen=True)
class HistoryEntry:
    """One entry of ``version_history.json``, newest first.

    ``author`` is the display form (``Name <email>``); ``author_name``/``author_email``
    its parts (R writes an object, older writers a string). ``commit_sha`` only exists in
    the store's copy. ``extra`` holds every other field, verbatim; ``raw`` the entry as
    recorded, which is what a rewrite of the history carries forward.
    """

    raw: Mapping[str, Any] = field(repr=False)
    version: str
    data_sha: str
    parquet_sha: str | None = None
    timestamp: str = ""
    author_name: str = ""
    author_email: str | None = None
    commit_message: str = ""
    original_file_sha: str | None = None
    commit_sha: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def author(self) -> str:
        """``Name <email>`` (or the name alone), however the entry recorded it."""
        if self.author_email:
            return f"{self.author_name} <{self.author_email}>"
        return self.author_name


@dataclass(frozen=True)
class ManifestEntry:
    """One artifact as the manifest lists it (``raw``: the entry, key order kept)."""

    raw: Mapping[str, Any] = field(repr=False)
    name: str
    kind: ArtifactKind
    current_version: str
    current_data_sha: str | None = None
    last_updated: str | None = None
    size_bytes: int | None = None
    version_count: int = 0
    original_file_sha: str | None = None
    original_format: str | None = None
    member_count: int | None = None


@dataclass(frozen=True)
class Manifest:
    """The project's catalog, always in format 2 (a format-1 manifest is converted on read).

    ``recorded_format`` is what the document declared (1 for a format-1 manifest);
    ``raw`` the converted document, key order kept, for an update in place.
    """

    raw: Mapping[str, Any] = field(repr=False)
    project_name: str | None
    artifacts: Mapping[str, ManifestEntry]
    schema_version: int = 2
    recorded_format: int = 2
    updated_at: str | None = None

    @property
    def tables(self) -> dict[str, ManifestEntry]:
        """The table entries (sets left out), by name."""
        return {name: e for name, e in self.artifacts.items() if e.kind == "table"}


@dataclass(frozen=True)
class ProjectConfig:
    """``.datom/project.yaml``: R's shape (format 2, see the docs page "Format 2") or the
    previous release's.

    ``storage`` is the store description in the form :func:`store_from_description`
    takes; ``remote_url`` the git remote recorded (None when none is).
    """

    raw: Mapping[str, Any] = field(repr=False)
    project_name: str
    storage: Mapping[str, Any] | None
    remote_url: str | None = None
    schema_version: int | None = None
    mode: str | None = None
    set_name: str | None = None
    min_writer_version: str | None = None
    r_shape: bool = False
