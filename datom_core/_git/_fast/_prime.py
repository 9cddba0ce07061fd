"""A shallow clone reads the push's ref advertisement while it fetches (an accelerator of
the git layer, serving :mod:`._advert`; switched off by ``DATOM_PLAIN=1`` or
``DATOM_PLAIN=advert``, see :mod:`datom_core._plain`).

A shallow clone is an ephemeral worker's: it clones to write. Its first push needs the
server's push capabilities, which only a push advertisement (``GET
info/refs?service=git-receive-pack``) tells; asked by the push, that is one more round trip
in sequence. Asked here, on a second connection while the clone's fetch runs, it costs
none: the push then sends its commands straight away, from the refs and capabilities kept
(:mod:`._advert`).

Contract: the request and its answer are the ones the push would make and receive itself,
recorded where the push looks for them (the client's ``RefsMemo``); nothing in them is
trusted for correctness (the server compares the ref with the old value the push names,
and a refused push looks again). A failure here (a read-only token's 403, a lost
connection) is dropped: the push meets it again, or asks again. The clone is done only
once the request is answered, so nothing runs on after it. Measured with
``benchmarks/bench_coldstart.py`` (RTT 50 ms, 3,000 commits): the fresh worker's first
write 1.37x faster, its whole cold start (clone and write) 1.10x.

Plain path: nothing is asked alongside; the first push asks for its advertisement.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from ..._plain import plain
from ._advert import look

__all__ = ["push_advertisement_alongside"]


@contextmanager
def push_advertisement_alongside(client: Any, wanted: bool) -> Iterator[None]:
    """While the body runs, :func:`._advert.look` (the push advertisement, recorded in the
    client's memo) runs on a copy of ``client``: the same connection pool (urllib3's is
    thread-safe), its own per-request state. ``wanted``: a shallow clone."""
    if not wanted or plain("advert"):
        yield
        return
    twin = copy.copy(client)
    with ThreadPoolExecutor(1, thread_name_prefix="datom-push-advert") as pool:
        asked = pool.submit(look, twin)
        try:
            yield
        finally:
            wait([asked])  # its failure, if any, is the push's to meet
