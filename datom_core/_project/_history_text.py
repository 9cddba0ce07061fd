"""A table's ``version_history.json`` as text, grown by one entry without re-printing it.

A write puts one entry in front of a history that may hold thousands. The one text form
(:func:`_documents.dump`) prints a list as ``[\\n  e1,\\n  e2\\n]\\n``, each entry printed
alone at the list's depth, so when the old text is exactly that form of its own entries
(*canonical*: R's jsonlite output and this package's are) the new text is the new entry's
print, ``,\\n``, and the old text after its ``[\\n``, byte for byte what a full re-print
gives. A text that is not canonical (hand-edited, reformatted, a lone entry written as a
bare object) is re-printed in full, as before. Whether a text is canonical is learnt by
printing it, except for a text that ends with a canonical one kept here (another writer's
history grown from one this process saw): only the entries in front are printed.

Texts are kept by content (:class:`~._recent.Recent`), with what is known about them:

* ``parent``: a text made here by putting an entry in front of ``parent``;
* ``mirrors``: a store copy that is git's text ``mirrors`` with each entry's
  ``commit_sha`` (FORMAT2.md §5), except the versions in ``gaps`` (no commit of git
  produced them: a hand-edited or squashed history), so the next store copy is spliced
  the same way.

Each is a fact about the bytes (two equal texts share it), so a kept text is never stale.
The splices are an accelerator (see :mod:`._fast`): under ``DATOM_PLAIN=1`` every text is
printed whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from typing import Any

from datom_core._errors import DatomError
from datom_core._plain import plain
from datom_core._project._documents import dump
from datom_core._project._model import HistoryEntry
from datom_core._project._parse import parse_history
from datom_core._project._recent import Recent

__all__ = [
    "HistoryText",
    "first_entry",
    "history_text",
    "mirrored_text",
    "prepend",
    "printed",
    "remember_store_copy",
    "reprinted",
    "spliced_store_copy",
]


class HistoryText:
    """A history document's bytes, its entries (parsed when first asked for), and what is
    known about its form (see the module docstring)."""

    __slots__ = (
        "_canonical",
        "_entries",
        "_key",
        "_parquets",
        "_versions",
        "gaps",
        "mirrors",
        "parent",
        "raw",
    )

    def __init__(
        self,
        raw: bytes,
        entries: tuple[HistoryEntry, ...] | None,
        *,
        key: str,
        canonical: bool | None = None,
        parent: HistoryText | None = None,
        mirrors: HistoryText | None = None,
        gaps: frozenset[str] = frozenset(),
    ) -> None:
        self.raw, self._entries, self._key = raw, entries, key
        self._canonical, self.parent, self.mirrors, self.gaps = canonical, parent, mirrors, gaps
        self._versions: frozenset[str] | None = None
        self._parquets: dict[str, HistoryEntry] | None = None

    @property
    def entries(self) -> tuple[HistoryEntry, ...]:
        if self._entries is None:
            self._entries = _parse(self.raw, self._key)
        return self._entries

    @property
    def versions(self) -> frozenset[str]:
        """Every version the history records."""
        if self._versions is None:
            self._versions = frozenset(h.version for h in self.entries)
        return self._versions

    def recorded_parquet(self, data_sha: str) -> HistoryEntry | None:
        """The newest entry recording a parquet of ``data_sha``, if any."""
        if self._parquets is None:
            self._parquets = {h.data_sha: h for h in reversed(self.entries) if h.parquet_sha}
        return self._parquets.get(data_sha)

    def _grown(self, first: HistoryEntry, text: HistoryText) -> None:
        """Hand ``text`` (this history with ``first`` in front) what is known of this one."""
        if self._versions is not None:
            text._versions = self._versions | {first.version}
        if self._parquets is not None:
            text._parquets = dict(self._parquets)
            if first.parquet_sha:
                text._parquets[first.data_sha] = first

    @property
    def canonical(self) -> bool:
        """Whether ``raw`` is exactly the one text form of its (one or more) entries."""
        if self._canonical is None:
            by_tail = _canonical_by_tail(self)
            if by_tail is not None:
                self._canonical = by_tail
            else:
                entries = self.entries
                printed = dump([dict(h.raw) for h in entries])
                self._canonical = bool(entries) and printed == self.raw
        return self._canonical


# Texts of many tables: a pipeline writing each of its 100 tables in turn finds every
# table's texts still here (with 48 it re-parsed and re-printed each table's whole history
# on every write). A write drops the texts it supersedes, so a table keeps a few; the
# bytes bound the rest, as before: 64 MB of text, ~250 MB with parsed entries at worst.
_texts: Recent[HistoryText] = Recent(1024, 64 << 20)


def history_text(raw: bytes, *, key: str) -> HistoryText:
    """The history ``raw`` (:class:`IntegrityError` naming ``key`` if it does not parse),
    parsed once per distinct text. Entries are shared: read them, never change them."""
    found = _texts.get(raw)
    if found is None:
        found = HistoryText(raw, _parse(raw, key), key=key)
        _texts.put(raw, found)
    return found


def _parse(raw: bytes, key: str) -> tuple[HistoryEntry, ...]:
    """:func:`parse_history` of ``raw``; when ``raw`` is entries in front of a kept
    history's text (another writer's history grown from one seen here: a table written by
    several clones at once), only those entries are parsed.

    ``raw`` is then ``[\\n F,\\n T`` where ``[\\n T`` is a kept text of one or more entries
    (``T``: those and the closing bracket). When ``[\\n F\\n]`` parses as an array of one
    or more entries, the parser is between two elements of the outer array where ``F``
    ends (not inside a string or an object), so ``raw`` parses as ``F``'s entries
    followed by the kept ones, with the same checks on each entry. Anything else is
    parsed whole (a front that does not parse: to report what is wrong).
    """
    found = _kept_tail_of(raw) if raw.startswith(b"[\n") else None
    if found is not None:
        kept, cut = found
        if cut >= 4 and raw[cut - 2 : cut] == b",\n":
            try:
                front = parse_history(raw[: cut - 2] + b"\n]\n", key=key)
            except DatomError:
                front = ()
            if front:  # none would leave ``[\n,`` in front: not JSON
                return front + kept.entries
    return parse_history(raw, key=key)


def _kept_tail_of(
    raw: bytes, *, canonical: bool = False, besides: HistoryText | None = None
) -> tuple[HistoryText, int] | None:
    """The newest kept, parsed text (``canonical``: known to be canonical; not
    ``besides``) whose text after its ``[\\n`` ends ``raw``, and where in ``raw`` that tail
    starts; None when no kept text fits."""
    for kept in _texts.values():
        if kept is besides or not kept._entries or not kept.raw.startswith(b"[\n"):
            continue
        if canonical and kept._canonical is not True:
            continue
        tail = memoryview(kept.raw)[2:]  # not a copy: each of hundreds of kept texts
        if len(tail) < len(raw) and raw.endswith(tail):
            return kept, len(raw) - len(tail)
    return None


def _canonical_by_tail(text: HistoryText) -> bool | None:
    """Whether ``text`` is canonical, judged from a kept canonical text it ends with (a
    history another writer grew from one seen here): the text is then canonical exactly
    when the entries in front print as its front, so only those are printed (None: no
    kept text fits, print them all)."""
    found = _kept_tail_of(text.raw, canonical=True, besides=text)
    if found is None:
        return None
    kept, cut = found
    front = len(text.entries) - len(kept.entries)
    if front < 1:
        return None
    printed = dump([dict(h.raw) for h in text.entries[:front]])[:-3] + b",\n"
    return printed == text.raw[:cut]


def _entry_text(entry: Mapping[str, Any]) -> bytes:
    """``[\\n  <entry>`` : the start of a one-entry list's text, the entry at depth 1."""
    return dump([dict(entry)])[:-3]  # less the closing "\n]\n"


def prepend(old: HistoryText | None, entry: Mapping[str, Any], *, key: str) -> HistoryText:
    """``old`` (None: no history yet) with ``entry`` in front, printed as the full re-print
    of every entry would be (spliced onto a canonical ``old``)."""
    added = dict(entry)
    first = parse_history([added], key=key)
    if old is None:
        text = HistoryText(dump([added]), first, key=key, canonical=True)
    else:
        if old.canonical and not plain():
            raw = _entry_text(added) + b",\n" + old.raw[2:]
        else:
            raw = dump([added] + [dict(h.raw) for h in old.entries])
        text = HistoryText(raw, first + old.entries, key=key, canonical=True, parent=old)
        old._grown(first[0], text)
        if old.parent is not None:  # one step back is all a store copy needs
            _texts.forget(old.parent.raw)
        old.parent = None
    _texts.put(text.raw, text)
    return text


def reprinted(old: HistoryText | None, *, key: str) -> HistoryText:
    """``old``'s entries in the one text form (a history that gains no entry)."""
    if old is None:
        return HistoryText(dump([]), (), key=key, canonical=False)
    if old.canonical:
        return old
    text = HistoryText(dump([dict(h.raw) for h in old.entries]), old.entries, key=key)
    _texts.put(text.raw, text)
    return text


def printed(entries: list[dict[str, Any]], onto: bytes | None, *, key: str) -> bytes:
    """``dump(entries)``: when the history text ``onto`` (a store copy another writer
    wrote, say) is canonical and its entries print as the last of ``entries`` do, only
    the entries in front are printed, and ``onto``'s text follows them."""
    if onto is not None and not plain():
        try:
            kept: HistoryText | None = history_text(onto, key=key)
        except DatomError:
            kept = None  # damaged: printed in full
        front = len(entries) - len(kept.entries) if kept is not None else 0
        if kept is not None and front >= 1 and kept.canonical:
            tail = zip(kept.entries, entries[front:], strict=True)
            if all(_prints_as(h.raw, e) for h, e in tail):
                return dump(entries[:front])[:-3] + b",\n" + kept.raw[2:]
    return dump(entries)


def _prints_as(a: Any, b: Any) -> bool:
    """Whether two JSON values print the same: equal, and of the same types and key
    order all the way down (``1``, ``1.0`` and ``true`` are equal in Python)."""
    if a == b and type(a) is type(b):
        if type(a) is str:
            return True
        if isinstance(a, Mapping):
            return list(a) == list(b) and all(
                type(v) is str or _prints_as(v, b[k]) for k, v in a.items()
            )
        if isinstance(a, list):
            return all(map(_prints_as, a, b))
        return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)
    return False


def first_entry(raw: bytes, *, key: str) -> HistoryEntry | None:
    """The newest entry of the history ``raw`` without parsing the others, when ``raw`` is
    kept and known canonical (a store copy printed or spliced here): each entry is then
    printed at depth 1, so the first ends at the first ``\\n  },\\n`` (JSON strings hold
    no raw newline). None when that is not known: parse it whole."""
    kept = _texts.get(raw)
    if kept is None:
        return None
    if kept._entries is not None:
        return kept._entries[0] if kept._entries else None
    end = raw.find(b"\n  },\n") if kept._canonical is True else -1
    if end < 0:
        return None
    try:
        return parse_history(raw[: end + 4] + b"\n]\n", key=key)[0]
    except (DatomError, IndexError):
        return None


def mirrored_text(raw: bytes) -> bytes | None:
    """The git text the store copy ``raw`` is known to mirror (it was printed or spliced
    here, see :func:`remember_store_copy`), if it is kept."""
    kept = _texts.get(raw)
    return kept.mirrors.raw if kept is not None and kept.mirrors is not None else None


def remember_store_copy(raw: bytes, git: HistoryText, gaps: frozenset[str], *, key: str) -> None:
    """``raw`` (printed by :func:`_documents.dump`) is ``git`` with each entry's
    ``commit_sha`` but for the versions ``gaps``: the next store copy can be spliced onto it."""
    _texts.put(raw, HistoryText(raw, None, key=key, canonical=True, mirrors=git, gaps=gaps))


def spliced_store_copy(
    git: HistoryText,
    stored: bytes | None,
    new: tuple[str, str] | None,
    absent: Set[str],
    *,
    key: str,
) -> bytes | None:
    """The store's copy of ``git`` when it is ``git.parent``'s copy ``stored`` plus the new
    version ``new = (version, commit)`` in front; None when it must be derived in full.

    The full derivation gives every entry the commit the store records for its version,
    the new version ``new``'s commit, and looks in git for the versions left, unless they
    are known to be ``absent`` from it: with ``stored`` mirroring the parent and its gaps
    all absent, that is ``stored``'s entries as they are and the new entry with ``new[1]``.
    """
    parent, kept = git.parent, _texts.get(stored) if stored is not None else None
    if plain() or parent is None or kept is None or new is None or not parent.entries:
        return None
    mirrored = kept.mirrors
    if mirrored is None or (mirrored is not parent and mirrored.raw != parent.raw):
        return None
    first = git.entries[0]
    if not kept.gaps <= absent or first.version != new[0]:
        return None
    if new[0] in parent.versions:
        return None
    entry = dict(first.raw)
    entry["commit_sha"] = new[1]
    raw = _entry_text(entry) + b",\n" + kept.raw[2:]
    kept.mirrors = None
    _texts.forget(kept.raw)  # superseded by the copy made here: a table keeps one copy
    copy = HistoryText(raw, None, key=key, canonical=True, mirrors=git, gaps=kept.gaps)
    _texts.put(raw, copy)
    return raw
