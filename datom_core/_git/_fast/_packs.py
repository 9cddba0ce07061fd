"""Pack files written from objects' bytes: the delta packer (an accelerator of the git
layer; switched off by ``DATOM_PLAIN=1``, see :mod:`datom_core._plain`).

Contract: a pack written here holds exactly the objects it is given, each readable by git
and dulwich as the same object (deltas are checked by applying them before use); its
``.keep`` is in place before the pack is visible. Measured (issue 30): without deltas
packs are 3.9x bigger and a compaction 1.6x slower.

Plain path (the same functions, ``plain()`` set): each object parsed by dulwich and
stored whole (no delta search), packs merged by reading every object whole; the pack
and index files are written the same way.

Otherwise nothing parses an object: a project's root tree has thousands of entries and its
manifest is a megabyte. Loose objects become pack entries from their inflated bytes; packs
are merged by copying their entries (a delta keeps its deflated bytes, its base offset is
re-written); every write of a project rewrites its manifest with a few entries changed, so
a big object is stored as a git delta against the next bigger one of its type when that is
much smaller (found by comparing aligned blocks, checked by applying it before use). The
biggest of a chain, in a growing project the newest, is stored whole, as git prefers:
reading it resolves nothing.
"""

from __future__ import annotations

import binascii
import hashlib
import mmap
import os
import secrets
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.object_store import DiskObjectStore
from dulwich.objects import DEFAULT_LOOSE_OBJECT_SIZE_LIMIT, ObjectID, ShaFile
from dulwich.pack import (
    OFS_DELTA,
    REF_DELTA,
    Pack,
    apply_delta,
    pack_object_header,
    write_pack_index,
)

from ..._plain import plain
from .._groupshare import store_perm, widen

__all__ = [
    "TMP_PACK",
    "loose_entry",
    "merge_packs",
    "pack_entries",
    "write_entries",
    "write_objects",
]

TMP_PACK = "tmp_pack_"  # a pack being written (git's own prefix, which git gc sweeps)
LEVEL = 1  # zlib level of new entries (git's pack.compression=1)
_OID_LEN = 20
_TYPES: dict[bytes, int] = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
_HEADER_MAX = 32  # "commit 4294967296\0" and then some
_DELTA_FROM = 8192  # smaller objects are stored whole
_DEPTH = 10  # longest delta chain written (a cold read of its last resolves them all)
_BLOCK = 4096  # compared at once when looking for what a delta may copy
_FINE = 256
Entry = tuple[bytes, bytes, int | None]  # binary id, packed bytes (header on), their crc32
Whole = tuple[bytes, int, bytes]  # binary id, type, content


def inflate_loose(path: str) -> tuple[int, bytes, int] | None:
    """``(type, inflated bytes, where the content starts)`` of the loose object file at
    ``path`` (the bytes begin with git's header, what the id is the SHA-1 of); None when
    it is absent or not a whole, well-formed object (zlib checks its own checksum)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, DEFAULT_LOOSE_OBJECT_SIZE_LIMIT + _HEADER_MAX)
    except (OSError, zlib.error):
        return None
    nul = data.find(b"\0", 0, _HEADER_MAX)
    kind, _, size = data[: max(nul, 0)].partition(b" ")
    type_num = _TYPES.get(kind)
    whole = inflater.eof and not inflater.unconsumed_tail
    if nul < 0 or type_num is None or not size.isdigit() or not whole:
        return None
    return (type_num, data, nul + 1) if int(size) == len(data) - nul - 1 else None


def loose_entry(store: DiskObjectStore, sha: bytes) -> Whole | None:
    """The loose object ``sha``'s (id, type, content), from its bytes; None if it cannot
    be read whole: it is then left where it is."""
    if plain():
        try:
            obj = store._get_loose_object(ObjectID(sha))
        except Exception:  # damaged: left where it is, as below
            return None
        return None if obj is None else (binascii.unhexlify(sha), obj.type_num, obj.as_raw_string())
    found = inflate_loose(store._get_shafile_path(ObjectID(sha)))
    if found is None:
        return None
    type_num, data, start = found
    return binascii.unhexlify(sha), type_num, data[start:]


def _header(type_num: int, size: int, base: int | None = None) -> bytes:
    return bytes(pack_object_header(type_num, base, size, DEFAULT_OBJECT_FORMAT))


def _whole(oid: bytes, type_num: int, content: bytes) -> Entry:
    return oid, _header(type_num, len(content)) + zlib.compress(content, LEVEL), None


def pack_entries(objects: Sequence[Whole]) -> list[Entry]:
    """Pack entries of ``objects``, in an order where each delta follows its base."""
    if plain():
        return [_whole(*o) for o in objects]
    small = [o for o in objects if len(o[2]) < _DELTA_FROM]
    out = [_whole(*o) for o in small]
    offsets: dict[bytes, int] = {}  # the packed bytes before an entry, to place deltas
    at = sum(len(e[1]) for e in out)
    big = sorted((o for o in objects if len(o[2]) >= _DELTA_FROM), key=lambda o: (o[1], -len(o[2])))
    prev: Whole | None = None
    depth = 0
    for obj in big:
        oid, type_num, content = obj
        delta = None
        if prev is not None and prev[1] == type_num and depth < _DEPTH:
            delta = _delta(prev[2], content)
        if delta is not None and prev is not None:
            head = _header(OFS_DELTA, len(delta), at - offsets[prev[0]])
            entry: Entry = oid, head + zlib.compress(delta, LEVEL), None
            depth += 1
        else:
            entry, depth = _whole(oid, type_num, content), 0
        offsets[oid] = at
        at += len(entry[1])
        out.append(entry)
        prev = obj
    return out


def _delta(base: bytes, target: bytes) -> bytes | None:
    """A git delta making ``target`` from ``base``, None unless it is under a quarter of
    ``target``. Blocks are matched at the same offset or at the same distance from the
    end (an entry changed in place, or one whose text grew or shrank)."""
    nb, nt = len(base), len(target)
    shifts = (0,) if nb == nt else (0, nb - nt)
    runs: list[tuple[int, int, int]] = []  # (target start, target end, base start)

    def match(t: int, size: int) -> int | None:
        for d in shifts:
            if (
                0 <= t + d
                and t + d + size <= nb
                and target[t : t + size] == base[t + d : t + d + size]
            ):
                return d
        return None

    def add(t: int, size: int, d: int) -> None:
        if runs and runs[-1][1] == t and runs[-1][2] + (t - runs[-1][0]) == t + d:
            runs[-1] = (runs[-1][0], t + size, runs[-1][2])
        else:
            runs.append((t, t + size, t + d))

    t, step, unmatched = 0, _BLOCK, 0
    while t <= nt - _FINE:
        size = min(step, nt - t)
        d = match(t, size)
        if d is not None:  # a run: try twice as much at once next
            add(t, size, d)
            t, step = t + size, step * 2
            continue
        if step > _BLOCK:
            step = _BLOCK
            continue
        end = min(t + _BLOCK, nt)
        for f in range(t, end - _FINE + 1, _FINE):
            d = match(f, _FINE)
            if d is not None:
                add(f, _FINE, d)
            else:
                unmatched += _FINE
        t = end
        if unmatched * 4 > nt:
            return None  # not worth it: an object unlike its neighbour costs this little
    out = bytearray(_varint(nb) + _varint(nt))
    pos = 0
    for start, end, at in runs:
        _insert(out, target[pos:start])
        _copy(out, at, end - start)
        pos = end
    _insert(out, target[pos:])
    if len(out) * 4 > nt:
        return None
    delta = bytes(out)
    made = b"".join(apply_delta(base, delta))  # the encoder is checked on every use
    return delta if made == target else None


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _insert(out: bytearray, data: bytes) -> None:
    for i in range(0, len(data), 0x7F):
        chunk = data[i : i + 0x7F]
        out.append(len(chunk))
        out += chunk


def _copy(out: bytearray, offset: int, size: int) -> None:
    while size:
        step = min(size, 0xFFFFFF)
        op, args = 0x80, bytearray()
        for i in range(4):
            if offset >> (8 * i) & 0xFF:
                op |= 1 << i
                args.append(offset >> (8 * i) & 0xFF)
        for i in range(3):
            if step >> (8 * i) & 0xFF:
                op |= 0x10 << i
                args.append(step >> (8 * i) & 0xFF)
        out.append(op)
        out += args
        offset, size = offset + step, size - step


def _entry_header(m: mmap.mmap, at: int) -> tuple[int, int, int, int | None]:
    """(type, where the deflated data starts, content size, base offset for OFS_DELTA)."""
    c = m[at]
    type_num, size, shift, at = (c >> 4) & 7, c & 15, 4, at + 1
    while c & 0x80:
        c = m[at]
        size |= (c & 0x7F) << shift
        shift, at = shift + 7, at + 1
    if type_num != OFS_DELTA:
        return type_num, at, size, None
    c = m[at]
    rel, at = c & 0x7F, at + 1
    while c & 0x80:
        c = m[at]
        rel = ((rel + 1) << 7) | (c & 0x7F)
        at += 1
    return type_num, at, size, rel


def merge_packs(store: DiskObjectStore, packs: Sequence[Pack], keep: bytes | None = None) -> str:
    """One pack holding every object of ``packs`` (see :func:`write_entries`)."""
    if plain():
        whole: dict[bytes, Whole] = {}
        for p in packs:
            for hexid in p.index:
                whole[hexid] = (binascii.unhexlify(hexid), *p.get_raw(hexid))
        return write_entries(store, pack_entries(list(whole.values())), keep=keep)
    entries: list[Entry] = []
    placed: dict[bytes, int] = {}  # id -> offset in the new pack
    at = 12  # the pack header
    for p in packs:
        with (
            open(p._basename + ".pack", "rb") as f,
            mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m,
        ):
            listed = sorted(p.index.iterentries(), key=lambda e: e[1])
            by_offset = {offset: oid for oid, offset, _crc in listed}
            ends = [e[1] for e in listed[1:]] + [len(m) - _OID_LEN]
            for (oid, offset, crc), end in zip(listed, ends, strict=True):
                if oid in placed:
                    continue
                type_num, data, size, rel = _entry_header(m, offset)
                base = by_offset.get(offset - rel) if rel is not None else None
                if type_num not in (OFS_DELTA, REF_DELTA):
                    entry: Entry = oid, m[offset:end], crc
                elif base is not None and base in placed:  # its deflated delta, moved
                    head = _header(OFS_DELTA, size, at - placed[base])
                    entry = oid, head + m[data:end], None
                elif type_num == REF_DELTA and m[data : data + _OID_LEN] in placed:
                    entry = oid, m[offset:end], crc  # a base named by id: found in here
                else:
                    kind, raw = p.get_raw(ObjectID(binascii.hexlify(oid)))
                    entry = _whole(oid, kind, raw)
                placed[oid] = at
                at += len(entry[1])
                entries.append(entry)
    return write_entries(store, entries, keep=keep)


def write_objects(
    store: DiskObjectStore, objects: Sequence[ShaFile], keep: bytes | None = None
) -> str:
    """Write ``objects`` as one pack with its index into ``store`` (``keep``: see
    :func:`write_entries`)."""
    given = {o.id: (binascii.unhexlify(o.id), o.type_num, o.as_raw_string()) for o in objects}
    return write_entries(store, pack_entries(list(given.values())), keep=keep)


def write_entries(
    store: DiskObjectStore,
    entries: Sequence[Entry],
    *,
    sync: bool = True,
    keep: bytes | None = None,
) -> str:
    """Write one pack of ``entries`` (distinct objects, each delta after its base) with its
    index into ``store``, both fsynced unless ``sync`` is False; returns its file name
    without suffix (``pack-`` and its checksum, as git names packs). With ``keep``, the
    pack has a ``.keep`` file holding those bytes from before its ``.pack`` file appears
    (git's repack then never deletes it), for the caller to remove."""
    folder = Path(store.pack_dir)
    folder.mkdir(parents=True, exist_ok=True)
    perm = store_perm(store)  # a group-shared repository: each file the team's before
    widen([folder], perm)  # it is in place (see _groupshare)
    tmp = folder / f"{TMP_PACK}{os.getpid()}_{secrets.token_hex(4)}"
    try:
        index, digest = [], hashlib.sha1()
        with open(tmp, "wb") as f:
            head = b"PACK" + struct.pack(">II", 2, len(entries))  # version 2
            f.write(head)
            digest.update(head)
            offset = len(head)
            for oid, data, crc in entries:
                f.write(data)
                digest.update(data)
                index.append((oid, offset, crc if crc is not None else binascii.crc32(data)))
                offset += len(data)
            checksum = digest.digest()
            f.write(checksum)
            _sync(f, sync)
        name = checksum.hex()
        final = folder / f"pack-{name}"
        if keep is not None:  # before the pack: git's repack lists packs by their .pack
            final.with_suffix(".keep").write_bytes(keep)  # file, judged kept or not then
            widen([final.with_suffix(".keep")], perm)
        widen([tmp], perm)
        os.replace(tmp, final.with_suffix(".pack"))
        with open(tmp, "wb") as f:
            write_pack_index(f, sorted(index), checksum)
            _sync(f, sync)
        widen([tmp], perm)
        os.replace(tmp, final.with_suffix(".idx"))  # the pack is visible from here on
    finally:
        tmp.unlink(missing_ok=True)
    if sync:
        _fsync_dir(folder)
    return final.name


def _sync(f: BinaryIO, sync: bool) -> None:
    if sync:
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
