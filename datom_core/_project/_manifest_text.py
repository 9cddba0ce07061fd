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
back. A manifest another process printed (each write of eight clones meets one, inside
the writers' turn) is mostly a kept one with a few entries changed: its form is found
from the kept one's by comparing bytes, and only the entries that differ are parsed
(:func:`learn_manifest`; 0.4 ms instead of 15 at 3,000 tables). A format-1 manifest, one
whose entries are not objects, or values only :func:`json.dumps` may print take the full
path (``None`` here), as does every manifest under ``DATOM_PLAIN=1`` (an accelerator:
see :mod:`._fast`; the full path is the plain one).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, repeat
from operator import add
from typing import Any

from datom_core._errors import DatomError
from datom_core._plain import plain
from datom_core._project._documents import manifest_doc, summary_weight, utc_now
from datom_core._project._door import accept_update
from datom_core._project._pretty import pretty_member, pretty_object
from datom_core._project._recent import Recent
from datom_core._project._tip import load_manifest, remember_manifest

__all__ = ["learn_manifest", "spliced_manifest"]

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

    @cached_property
    def offsets(self) -> list[int]:
        """Where each member starts in ``body``, then where one after the last would."""
        return list(accumulate(map(add, self.sizes, repeat(len(_SEP))), initial=0))


_forms: Recent[_Form] = Recent(16, 64 << 20)
_SEP = b",\n    "  # between two members of an object one level deep
_OPEN, _CLOSE = "{\n    ", "\n  }"  # around the members of such an object
_MARK = "\0artifacts\0"  # never in printed JSON: every control character is escaped
# Where the artifacts' members begin: a raw newline is never inside a string, and a
# deeper object's members are indented further, so this is the top level's "artifacts".
_BODY_MARK = b'\n  "artifacts": ' + _OPEN.encode()
_END = _CLOSE.encode()  # where the artifacts' members end
_GROWN_TRIES = 3  # kept forms (newest first) a new manifest is compared with
_GROWN_PARSES = 64  # changed entries parsed alone before the whole text is parsed instead


def _add(a: _Totals, b: _Totals, sign: int = 1) -> _Totals:
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2], a[3] + sign * b[3])


def _form_of(raw: bytes) -> _Form | None:
    """The parts of the manifest ``raw`` (None: it takes the full path)."""
    kept = _forms.get(raw)
    if kept is not None:
        return kept
    grown = _grown_form(raw)
    if grown is not None:
        return grown
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


def learn_manifest(raw: bytes | None) -> None:
    """Keep the parts, and the parse, of a manifest another writer printed from one kept
    here (see :func:`_grown_form`), before anything parses it whole."""
    if raw is not None and not plain() and _forms.get(raw) is None:
        _grown_form(raw)


def _grown_form(raw: bytes) -> _Form | None:
    """The parts of ``raw`` found from a kept manifest's, when ``raw`` is that manifest
    with some entries replaced, added or removed (what other writers' splices make):
    only the entries whose text differs are parsed. None when no kept form gives them."""
    start = raw.find(_BODY_MARK)
    if start < 0:
        return None
    start += len(_BODY_MARK)
    for old in _forms.values()[:_GROWN_TRIES]:
        form = _grown_from(old, raw, start)
        if form is not None:
            _forms.put(raw, form)
            remember_manifest(raw, form.doc)
            return form
    return None


def _grown_from(old: _Form, raw: bytes, start: int) -> _Form | None:
    """``raw``'s parts from ``old``'s (its artifacts' members begin at ``start``).

    The runs of ``raw`` that are byte for byte ``old``'s members are found by comparing
    bytes (their entries are taken as they are); a member between them is parsed alone
    and printed again, which must give its exact text. With the names in strictly
    increasing order, the members are then what the full path's print is made of. The
    top level is parsed with the members left out, and no object may repeat a key (a
    full parse would keep the last of them)."""
    body, offsets, count = memoryview(old.body), old.offsets, len(old.names)
    names: list[str] = []
    entries: dict[str, dict[str, Any]] = {}  # the members parsed here, by name
    sizes: list[int] = []
    changed: list[str] = []
    totals = old.totals
    pos, j, parsed = start, 0, 0  # where raw's next member starts; old's next member
    while True:
        if j < count:  # old's members j..k-1, each with the separator after it, or all
            run = _common(raw, pos, body, offsets[j])
            whole = offsets[j] + run == len(body) and raw.startswith(_END, pos + run)
            k = count if whole else bisect.bisect_right(offsets, offsets[j] + run, lo=j) - 1
            if k > j:
                if names and old.names[j] <= names[-1]:
                    return None
                names.extend(old.names[j:k])
                sizes.extend(old.sizes[j:k])
                if whole:
                    stop, j = pos + run, k
                    break
                pos, j = pos + offsets[k] - offsets[j], k
                continue
        parsed += 1
        member = _member_at(raw, pos) if parsed <= _GROWN_PARSES else None
        if member is None:
            return None
        name, entry, end, last = member
        if names and name <= names[-1]:
            return None
        while j < count and old.names[j] <= name:  # removed, or replaced
            totals = _add(totals, summary_weight(old.artifacts[old.names[j]]), -1)
            j += 1
        totals = _add(totals, summary_weight(entry))
        changed.append(name)
        names.append(name)
        entries[name] = entry
        sizes.append(end - pos)
        if last:
            stop = end
            break
        pos = end + len(_SEP)
    for rest in old.names[j:]:  # removed at the end
        totals = _add(totals, summary_weight(old.artifacts[rest]), -1)
    if names == old.names:  # entries replaced in place: the order is old's (a C copy)
        artifacts = {**old.artifacts, **entries}
    else:
        artifacts = {n: entries[n] if n in entries else old.artifacts[n] for n in names}
    top = _loads_unique(raw[:start] + raw[stop:])
    if not isinstance(top, dict) or "schema_version" not in top or top.get("artifacts") != {}:
        return None
    doc = {key: artifacts if key == "artifacts" else value for key, value in top.items()}
    accept_update(old.doc, doc, changed)
    return _Form(doc, artifacts, names, sizes, memoryview(raw)[start:stop], totals)


def _common(raw: bytes, pos: int, body: memoryview, at: int) -> int:
    """How many bytes ``raw[pos:]`` and ``body[at:]`` begin with in common: compared in
    growing blocks, then halved within the first that differs (about twice the run)."""
    limit, done, step = min(len(raw) - pos, len(body) - at), 0, 4096
    while done < limit:
        size = min(step, limit - done)
        if not raw.startswith(body[at + done : at + done + size], pos + done):
            low, high = done, done + size  # equal up to low, not up to high
            while high - low > 1:
                mid = (low + high) // 2
                if raw.startswith(body[at + low : at + mid], pos + low):
                    low = mid
                else:
                    high = mid
            return low
        done, step = done + size, step * 2
    return limit


def _member_at(raw: bytes, pos: int) -> tuple[str, dict[str, Any], int, bool] | None:
    """``(name, entry, end, last)`` of the artifact member whose text starts at ``pos``, if
    it is exactly as the one text form prints it. At the artifacts' depth a member ends
    where the next begins or the artifacts close (``last``): no string holds a raw
    newline, and a member's own lines are indented further."""
    after = raw.find(_SEP + b'"', pos)
    close = raw.find(_END, pos, after if after >= 0 else len(raw))
    end = close if close >= 0 else after
    if end < 0:
        return None
    one = _loads_unique(b"{" + raw[pos:end] + b"}")
    if not isinstance(one, dict) or len(one) != 1:
        return None
    ((name, entry),) = one.items()
    if type(entry) is not dict:
        return None
    try:
        summary_weight(entry)
    except (TypeError, ValueError):
        return None
    member = pretty_member(name, entry, 1)
    if member is None or member.encode("utf-8") != raw[pos:end]:
        return None
    return name, entry, end, close >= 0


def _loads_unique(text: bytes) -> Any:
    """The JSON of ``text``; None when it does not parse or an object repeats a key."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise ValueError("a repeated key")
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None


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
    old = _form_of(raw) if raw is not None and not plain() else None
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
