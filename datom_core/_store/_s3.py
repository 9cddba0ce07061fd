"""A store in an S3 bucket (AWS or any S3-compatible endpoint), over s3fs."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import secrets
import time
from typing import Any

from datom_core._errors import StoreContendedError, StoreError
from datom_core._store._base import CHUNK_SIZE, Store, uninitialised_buffer
from datom_core._store._paths import (
    check_bucket,
    check_endpoint,
    normalise_prefix,
    source_size,
    split_source,
)
from datom_core._store._s3errors import s3_error_code as _s3_error_code
from datom_core._store._s3errors import s3_remedy
from datom_core._store._s3session import s3_session

__all__ = ["S3Store"]

logger = logging.getLogger("datom_core.store")

# Fail fast on an unreachable endpoint: botocore's standard mode would otherwise retry with
# back-off inside each of s3fs's own retries (a typo would cost minutes of waiting).
_CONNECT_TIMEOUT_S = 3
_BOTOCORE_ATTEMPTS = 3
_S3FS_RETRIES = 2
_CONNECTIONS = 32  # requests in flight, as a group mirror's threads (botocore's: 10)
# Streaming reads fetch this much per request: bounded memory, few round trips.
_READ_BLOCK = 8 << 20
# How long put_if_absent waits for a concurrent conditional write of the same key.
_CONFLICT_WAIT_S = 10.0
# Conditional replacements of a document tried before giving up, and the S3 codes of a
# condition that no longer holds (another write came between the look and the PUT).
_SWAP_TRIES = 8
_RACED = frozenset({"PreconditionFailed", "412", "NoSuchKey", "404", "ConditionalRequestConflict", "409"})  # fmt: skip
_UNSEEN: Any = object()
# User metadata naming the conditional PUT that stored an object (x-amz-meta-datom-put).
_PUT_MARK = "datom-put"
# Bytes above which put_if_absent looks first (a HEAD spares an upload; below, one PUT).
_LOOK_FIRST_ABOVE = 1 << 20


class S3Store(Store):
    """A datom root in an S3 bucket: ``s3://<bucket>/<prefix>/datom/``.

    Credentials come from the explicit ``key``/``secret``/``token`` arguments, else the
    usual botocore chain (environment, ``profile``/``AWS_PROFILE``, instance role);
    ``anon=True`` reads a public bucket unsigned. They are kept in memory only: never in
    :attr:`url`, :meth:`describe`, ``repr`` or any error message. Extra keyword arguments
    go to :class:`s3fs.S3FileSystem` (``config_kwargs`` and ``client_kwargs`` are merged
    with datom's defaults; a ``session`` gets the handler of ``_s3session``: small PUT
    bodies leave with their headers).

    Listing caches are off and every store has its own filesystem instance, so one store
    sees another's writes (other process or instance) at once.
    """

    parallel_puts = True  # each request is a round trip: independent PUTs go at once

    def __init__(
        self,
        bucket: str,
        prefix: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        key: str | None = None,
        secret: str | None = None,
        token: str | None = None,
        anon: bool = False,
        **s3fs_options: Any,
    ) -> None:
        self.bucket = check_bucket(bucket)
        self.prefix = normalise_prefix(prefix)
        self.endpoint_url = check_endpoint(endpoint_url)
        self.region = region
        self._profile = profile
        self._key = key
        self._secret = secret
        self._token = token
        self._anon = anon
        self._options = s3fs_options
        # The ETag each document had when this store last saw it (write_bytes, look_unseen),
        # and those another process of the clone put since (note_etags: conditions only).
        self._etags: dict[str, str | None] = {}
        self._noted: dict[str, str] = {}
        root = f"{self.bucket}/{self.prefix}/datom" if self.prefix else f"{self.bucket}/datom"
        super().__init__(url=f"s3://{root}", root=root)

    def __repr__(self) -> str:
        if self.endpoint_url:
            return f"S3Store({self.url!r}, endpoint_url={self.endpoint_url!r})"
        return f"S3Store({self.url!r})"

    def describe(self) -> dict[str, Any]:
        """``{"type": "s3", "bucket", "prefix", "endpoint_url", "region"}``; no credentials."""
        return {"type": "s3", "bucket": self.bucket, "prefix": self.prefix,
                "endpoint_url": self.endpoint_url, "region": self.region}  # fmt: skip

    def _make_fs(self) -> Any:
        import s3fs

        options = dict(self._options)
        config = {
            "connect_timeout": _CONNECT_TIMEOUT_S,
            "retries": {"total_max_attempts": _BOTOCORE_ATTEMPTS, "mode": "standard"},
            "max_pool_connections": _CONNECTIONS,
        }
        config.update(options.pop("config_kwargs", None) or {})
        client = dict(options.pop("client_kwargs", None) or {})
        if self.region:
            client.setdefault("region_name", self.region)
        session = s3_session(self._profile, options.pop("session", None))
        fs = s3fs.S3FileSystem(
            anon=self._anon, key=self._key, secret=self._secret, token=self._token,
            endpoint_url=self.endpoint_url, client_kwargs=client, config_kwargs=config,
            session=session, skip_instance_cache=True, use_listings_cache=False, **options,
        )  # fmt: skip
        fs.retries = _S3FS_RETRIES
        return fs

    def _secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self._key, self._secret, self._token) if s)

    def _backend_errors(self) -> tuple[type[BaseException], ...]:
        import aiohttp
        from botocore.exceptions import BotoCoreError, ClientError

        return (OSError, BotoCoreError, ClientError, aiohttp.ClientError)

    def _remedy(self) -> str:
        where = f"endpoint_url {self.endpoint_url}" if self.endpoint_url else "AWS S3"
        if self.region:
            where += f", region {self.region}"
        return (
            "check the AWS credentials (key/secret, AWS_PROFILE or the environment), "
            f"that bucket {self.bucket!r} exists, and the endpoint ({where})"
        )

    def _remedy_for(self, error: BaseException) -> str:
        where = f"endpoint_url {self.endpoint_url}" if self.endpoint_url else "AWS S3"
        return s3_remedy(error, where, self.bucket) or self._remedy()

    def _open_kwargs(self) -> dict[str, Any]:
        return {"block_size": _READ_BLOCK, "cache_type": "readahead"}

    def read_bytes(self, key: str) -> bytes:
        """The whole object at ``key``, in one GET (s3fs's ``cat_file`` first asks the
        object's size, a HEAD, to decide on ranged reads: a document is read whole)."""
        with self._translated("read", key):
            return bytes(self._fs.cat_file(self._path(key), max_concurrency=1))

    def _info(self, key: str) -> dict[str, Any] | None:
        """One HEAD (s3fs's ``info`` also lists the key as a folder when nothing is there)."""
        bucket, name, _ = self._fs.split_path(self._path(key))
        with self._translated("inspect", key):
            try:
                head = self._fs.call_s3("head_object", Bucket=bucket, Key=name)
            except FileNotFoundError:
                return None
        return {
            "type": "file",
            "size": int(head["ContentLength"]),
            "LastModified": head.get("LastModified"),
            "ETag": head.get("ETag"),
        }

    def _read_hashing(self, path: str) -> tuple[memoryview, str]:
        # One GET whose body is hashed chunk by chunk as it streams in: no second pass over
        # the bytes and no second request. A body cut short mid-stream is fetched again.
        from fsspec.asyn import sync

        bucket, key, _ = self._fs.split_path(path)
        return sync(self._fs.loop, self._get_hashing, bucket, key)

    async def _get_hashing(self, bucket: str, key: str) -> tuple[memoryview, str]:
        import aiohttp
        from botocore.exceptions import BotoCoreError

        for attempt in range(_S3FS_RETRIES + 1):
            response = await self._fs._call_s3("get_object", Bucket=bucket, Key=key)
            body = response["Body"]
            try:
                return await _hash_body(body, int(response["ContentLength"]))
            except (TimeoutError, BotoCoreError, aiohttp.ClientError):
                if attempt == _S3FS_RETRIES:
                    raise
                logger.info("store %s: reading %r was cut short; reading it again", self.url, key)
            finally:
                body.close()
        raise AssertionError("unreachable")

    def write_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` at ``key``, replacing the object there, conditionally.

        Each PUT names the object it replaces (``If-Match`` on the ETag this store last
        saw there, or ``If-None-Match: *`` where it saw none), so that a PUT delivered late
        (held in the network past its timeout while its retry landed, then the next write
        of the document) is refused instead of putting an older document back: readers
        never see a document go backwards. A refusal means another write came between
        this store's look and its PUT: it looks again (one HEAD) and puts again.
        """
        bucket, name, _ = self._fs.split_path(self._path(key))
        with self._translated("write", key):
            for attempt in range(_SWAP_TRIES):
                seen = self._noted.pop(key, None) or self._etags.get(key, _UNSEEN)
                if seen is _UNSEEN:
                    seen = self._etag(bucket, name)
                condition = {"IfMatch": seen} if seen else {"IfNoneMatch": "*"}
                try:
                    put = self._fs.call_s3(
                        "put_object", Bucket=bucket, Key=name, Body=bytes(data), **condition
                    )
                except OSError as e:
                    code = _s3_error_code(e)
                    if code == "NotImplemented":  # an endpoint without conditional writes
                        self._fs.pipe_file(self._path(key), bytes(data))
                        return
                    if code not in _RACED:
                        raise
                    self._etags.pop(key, None)
                    time.sleep(random.uniform(0, 0.01 * 2**attempt))
                    continue
                self._etags[key] = put.get("ETag")
                return
        tries = f"between each look and PUT ({_SWAP_TRIES} tries); retry"
        raise StoreContendedError(f"could not write {key!r} in store {self.url}: other writers kept replacing it {tries}", key)  # fmt: skip

    def seen(self, key: str) -> str | None:
        """The ETag of the object at ``key`` this store last wrote or looked at (None: none)."""
        return self._etags.get(key)

    def look_unseen(self, key: str) -> None:
        """Note the ETag at ``key`` (:meth:`seen`) unless this store knows one: one HEAD."""
        if key not in self._etags and key not in self._noted:
            bucket, name, _ = self._fs.split_path(self._path(key))
            with self._translated("inspect", key):
                self._etags.setdefault(key, self._etag(bucket, name))

    def note_etags(self, etags: dict[str, str]) -> None:
        """The ETags another writer sharing this store put (``key``: ETag), for the next
        :meth:`write_bytes` of each key to name without a HEAD (refused when stale)."""
        self._noted.update(etags)

    def replace_seen(self, key: str, data: bytes, seen: str | None) -> bool:
        """Put ``data`` at ``key`` only over the object whose ETag is ``seen`` (one this
        store wrote, :meth:`seen`), in one request (``If-Match``). False, and nothing
        written, when another write replaced it since (or ``seen`` is None)."""
        if not seen:
            return False
        bucket, name, _ = self._fs.split_path(self._path(key))
        with self._translated("write", key):
            try:
                put = self._fs.call_s3("put_object", Bucket=bucket, Key=name, Body=bytes(data), IfMatch=seen)  # fmt: skip
            except OSError as e:
                if _s3_error_code(e) not in _RACED:
                    raise
                self._etags.pop(key, None)
                return False
        self._etags[key] = put.get("ETag")
        return True

    def _etag(self, bucket: str, name: str) -> str | None:
        """The ETag of the object ``name`` (None: there is none)."""
        try:
            head = self._fs.call_s3("head_object", Bucket=bucket, Key=name)
        except FileNotFoundError:
            return None
        return str(head["ETag"]) if head.get("ETag") else None

    def put_if_absent(self, key: str, data: bytes | str | os.PathLike[str]) -> bool:
        """Store ``data`` (bytes or a local file path) at ``key`` unless an object is there.

        Uses a conditional PUT (``If-None-Match: *``): the endpoint itself refuses to
        replace an existing object, so concurrent writers cannot overwrite each other.
        Endpoints that answer "not implemented" get a check-then-put instead, which
        leaves a small race window; endpoints that silently ignore the header (some old
        S3-compatible servers) cannot be detected and have that same window.
        """
        if source_size(data, _LOOK_FIRST_ABOVE + 1) > _LOOK_FIRST_ABOVE and self.exists(
            key
        ):  # spares the upload
            return False
        return self._put_new(key, data, own=True)

    def put_content_named(self, key: str, data: bytes) -> bool:
        """The conditional PUT of :meth:`put_if_absent` without the existence check first
        (one request): an endpoint that ignores the condition rewrites the same bytes."""
        return self._put_new(key, data, own=False)

    def _put_new(self, key: str, data: bytes | str | os.PathLike[str], own: bool) -> bool:
        path = self._path(key)
        source, payload = split_source(data, key)
        # A PUT whose answer was lost is sent again (by botocore, or by aiohttp below it,
        # unseen) and refused: the object is there, as this call's own. Each call marks
        # its object; with ``own`` a refusal asks whose it is (one HEAD), so that a failed
        # write removes what it put. A content-named document is put without (a refusal
        # is common there, under contention): a lost one is left to validate's orphans.
        mark = {_PUT_MARK: secrets.token_hex(16)}

        def put(mode: str) -> None:
            if source is not None:
                self._fs.put_file(source, path, mode=mode, Metadata=mark)
            else:
                self._fs.pipe_file(path, payload, mode=mode, Metadata=mark)

        with self._translated("write", key):
            try:
                put("create")
            except FileExistsError:
                return own and self._marked(key, mark[_PUT_MARK])
            except OSError as e:
                code = _s3_error_code(e)
                if code == "ConditionalRequestConflict":
                    return self._await_concurrent_write(key)
                if code != "NotImplemented":
                    raise
                logger.warning(
                    "store %s: endpoint does not support conditional writes; "
                    "writing %r after an existence check",
                    self.url,
                    key,
                )
                if self.exists(key):
                    return False
                put("overwrite")
        return True

    def _marked(self, key: str, mark: str) -> bool:
        """Whether the object at ``key`` is the one a PUT marked ``mark`` stored."""
        bucket, name, _ = self._fs.split_path(self._path(key))
        try:
            head = self._fs.call_s3("head_object", Bucket=bucket, Key=name)
        except FileNotFoundError:
            return False
        return bool((head.get("Metadata") or {}).get(_PUT_MARK) == mark)

    def _await_concurrent_write(self, key: str) -> bool:
        # S3 answers 409 while another conditional write of the key is in flight; that
        # writer wins if it completes, so wait to see it land rather than race it.
        deadline = time.monotonic() + _CONFLICT_WAIT_S
        while time.monotonic() < deadline:
            if self.exists(key):
                return False
            time.sleep(0.2)
        raise StoreError(
            f"a concurrent write of {key!r} to store {self.url} neither completed nor "
            "released the key; retry the write"
        )

    def check_access(self) -> None:
        """List at most one key under the datom root; :class:`StoreError` if that fails."""
        try:
            self._fs.call_s3(
                "list_objects_v2",
                Bucket=self.bucket,
                Prefix=self._root[len(self.bucket) + 1 :] + "/",
                MaxKeys=1,
            )
        except FileNotFoundError as e:
            raise StoreError(
                f"bucket {self.bucket!r} does not exist at {self.endpoint_url or 'AWS S3'} "
                f"(store {self.url}); create it or fix the bucket name / endpoint_url"
            ) from e
        except PermissionError as e:
            raise StoreError(
                f"access denied to store {self.url} ({self._detail(e)}); {self._remedy()}"
            ) from e
        except self._backend_errors() as e:
            raise StoreError(
                f"cannot reach store {self.url} ({self._detail(e)}); {self._remedy_for(e)}"
            ) from e


async def _hash_body(body: Any, size: int) -> tuple[memoryview, str]:
    digest = hashlib.sha256()
    data = uninitialised_buffer(size)
    filled = 0
    while chunk := await body.read(CHUNK_SIZE):
        end = filled + len(chunk)
        if end > size:
            raise StoreError(f"the object sent more than the {size} bytes it announced")
        data[filled:end] = chunk
        digest.update(chunk)
        filled = end
    return data[:filled].toreadonly(), digest.hexdigest()
