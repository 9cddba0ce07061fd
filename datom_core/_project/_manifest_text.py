"""The manifest updated by one write without re-printing every entry.

A write changes one artifact's entry of a manifest that lists thousands, plus the summary
and ``updated_at``. The one text form prints each artifact entry on its own (at the
artifacts' depth) and joins them in name order, so a manifest is kept here as its sorted
names, the joined text of its entries with each one's length, and the summary's totals; an
update prints the changed entries, copies the runs of text between them as they are (one
copy of the bytes, no entry looked at), adjusts the totals and prints only the top level
around them.
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
    sizes: list[int]  # bytes of each '"name": {...}' at the artifacts' depth
    body: bytes | memoryview  # those texts joined by _SEP (a view into the text printed)
    totals: _Totals


_forms: Recent[_Form] = Recent(16, 64 << 20)
_SEP = b",\n    "  # between two members of an object one level deep
_OPEN, _CLOSE = "{\n    ", "\n  }"  # around the members of such an object
_MARK = "\0artifacts\0"  # never in printed JSON: every control character is escaped


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
            members.append(member.encode("utf-8"))
            totals = _add(totals, summary_weight(entry))
    except (TypeError, ValueError):  # a size the summary cannot add: the full path says so
        return None
    form = _Form(doc, artifacts, names, [len(m) for m in members], _SEP.join(members), totals)
    _forms.put(raw, form)
    return form


def _body(old: _Form, new: dict[str, bytes]) -> list[bytes | memoryview]:
    """The pieces of the new members' text, to be joined by _SEP: the runs of unchanged
    members between the changed ones are slices of the old text (no entry is looked at)."""
    pieces: list[bytes | memoryview] = []
    body, names, sizes, gap = memoryview(old.body), old.names, old.sizes, len(_SEP)
    at, pos = 0, 0  # the first old member not yet placed, and where its text starts

    def run_to(end: int) -> None:
        nonlocal at, pos
        if end > at:
            stop = pos + sum(sizes[at:end]) + gap * (end - at - 1)
            pieces.append(body[pos:stop])
            at, pos = end, stop + gap

    for name in sorted(new):
        i = bisect.bisect_left(names, name)
        run_to(i)
        pieces.append(new[name])
        if i < len(names) and names[i] == name:  # replaced: its old text is skipped
            at, pos = i + 1, pos + sizes[i] + gap
    run_to(len(names))
    return pieces


def spliced_manifest(
    raw: bytes | None, project_name: str, entries: Mapping[str, Mapping[str, Any]]
) -> bytes | None:
    """The manifest ``raw`` with ``entries`` replacing theirs, printed from its kept parts;
    None when the full path must print it (see the module docstring)."""
    old = _form_of(raw) if raw is not None else None
    if old is None:
        return None
    artifacts, names, sizes = dict(old.artifacts), list(old.names), list(old.sizes)
    totals, inserted, new = old.totals, False, {}
    try:
        for name, given in entries.items():
            entry = dict(given)
            member = pretty_member(name, entry, 1)
            if member is None or not all(type(v) in _SCALARS for v in entry.values()):
                return None
            new[name] = text = member.encode("utf-8")
            at = bisect.bisect_left(names, name)
            if at < len(names) and names[at] == name:
                totals = _add(totals, summary_weight(artifacts[name]), -1)
                sizes[at] = len(text)
            else:
                names.insert(at, name)
                sizes.insert(at, len(text))
                inserted = True
            totals = _add(totals, summary_weight(entry))
            artifacts[name] = entry
    except (TypeError, ValueError):
        return None
    if not names:
        return None  # '{}': printed by the full path
    if inserted:
        artifacts = {name: artifacts[name] for name in names}
    doc = manifest_doc(project_name, artifacts, totals, utc_now(), base=old.doc)
    top = []
    for key, value in doc.items():
        member = '"artifacts": ' + _MARK if key == "artifacts" else pretty_member(key, value, 0)
        if member is None:
            return None
        top.append(member)
    head, tail = (pretty_object(top, 0) + "\n").split(_MARK)
    pieces = _body(old, new)
    parts: list[bytes | memoryview] = [(head + _OPEN).encode("utf-8")]
    for i, piece in enumerate(pieces):
        parts.extend((_SEP, piece) if i else (piece,))
    parts.append((_CLOSE + tail).encode("utf-8"))
    text = b"".join(parts)
    remember_manifest(text, doc)
    accept_update(old.doc, doc, entries)
    body = memoryview(text)[len(parts[0]) : len(text) - len(parts[-1])]
    _forms.put(text, _Form(doc, artifacts, names, sizes, body, totals))
    return text
