"""The manifest updated by one write without re-printing every entry.

A write changes one artifact's entry of a manifest that lists thousands, plus the summary
and ``updated_at``. The one text form prints each artifact entry on its own (at the
artifacts' depth) and joins them in name order, so a manifest is kept here as its sorted
names, each entry's printed text and the summary's totals; an update replaces or inserts
the changed entries' texts, adjusts the totals and prints only the top level around them.
The result is byte for byte what printing the whole updated document gives (the
assembling of :func:`_documents.assemble_manifest`, done entry by entry).

A manifest seen for the first time is printed entry by entry once (what a full print
costs); the text an update makes is kept with its form, and is what the next write reads
back. A format-1 manifest, one whose entries are not objects, or values only
:func:`json.dumps` may print take the full path (``None`` here).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from datom_core._errors import DatomError
from datom_core._project._documents import manifest_doc, summary_weight, utc_now
from datom_core._project._door import accept_update
from datom_core._project._pretty import pretty_member, pretty_object
from datom_core._project._recent import Recent
from datom_core._project._tip import load_manifest, remember_manifest

__all__ = ["spliced_manifest"]

_Totals = tuple[int, int, int, int]
# What a new entry's fields may be for the kept document to equal the printed text's parse.
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class _Form:
    """A format-2 manifest as the parts its text is printed from."""

    doc: Any  # the document as loaded (what the write door checked)
    artifacts: dict[str, dict[str, Any]]  # in name order
    names: list[str]  # sorted
    members: list[str]  # '"name": {...}' of each, at the artifacts' depth
    totals: _Totals


_forms: Recent[_Form] = Recent(16, 64 << 20)


def _add(a: _Totals, b: _Totals, sign: int = 1) -> _Totals:
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2], a[3] + sign * b[3])


def _form_of(raw: bytes) -> _Form | None:
    """The parts of the manifest ``raw`` (None: it takes the full path)."""
    kept = _forms.get(raw)
    if kept is not None:
        return kept
    try:
        doc = load_manifest(raw)
    except DatomError:  # corrupt: the full path rebuilds it
        return None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        return None  # not an object, or format 1 (converted by the full path)
    recorded = doc.get("artifacts")
    if not isinstance(recorded, Mapping):
        recorded = {}
    names = sorted(recorded)
    artifacts = {name: recorded[name] for name in names}
    members, totals = [], (0, 0, 0, 0)
    try:
        for name, entry in artifacts.items():
            member = pretty_member(name, entry, 1) if type(entry) is dict else None
            if member is None:
                return None
            members.append(member)
            totals = _add(totals, summary_weight(entry))
    except (TypeError, ValueError):  # a size the summary cannot add: the full path says so
        return None
    form = _Form(doc, artifacts, names, members, totals)
    _forms.put(raw, form)
    return form


def spliced_manifest(
    raw: bytes | None, project_name: str, entries: Mapping[str, Mapping[str, Any]]
) -> bytes | None:
    """The manifest ``raw`` with ``entries`` replacing theirs, printed from its kept parts;
    None when the full path must print it (see the module docstring)."""
    old = _form_of(raw) if raw is not None else None
    if old is None:
        return None
    artifacts, names, members = dict(old.artifacts), list(old.names), list(old.members)
    totals, inserted = old.totals, False
    try:
        for name, given in entries.items():
            entry = dict(given)
            member = pretty_member(name, entry, 1)
            if member is None or not all(type(v) in _SCALARS for v in entry.values()):
                return None
            at = bisect.bisect_left(names, name)
            if at < len(names) and names[at] == name:
                totals = _add(totals, summary_weight(artifacts[name]), -1)
                members[at] = member
            else:
                names.insert(at, name)
                members.insert(at, member)
                inserted = True
            totals = _add(totals, summary_weight(entry))
            artifacts[name] = entry
    except (TypeError, ValueError):
        return None
    if inserted:
        artifacts = {name: artifacts[name] for name in names}
    doc = manifest_doc(project_name, artifacts, totals, utc_now(), base=old.doc)
    top = []
    for key, value in doc.items():
        member = (
            '"artifacts": ' + pretty_object(members, 1)
            if key == "artifacts"
            else pretty_member(key, value, 0)
        )
        if member is None:
            return None
        top.append(member)
    text = (pretty_object(top, 0) + "\n").encode("utf-8")
    remember_manifest(text, doc)
    accept_update(old.doc, doc, entries)
    _forms.put(text, _Form(doc, artifacts, names, members, totals))
    return text
