"""A store on any filesystem fsspec can reach (``memory://``, ``gcs://``, ``az://``...)."""

from __future__ import annotations

import os
import re
from typing import Any

from datom_core._errors import StoreError
from datom_core._store._base import Store
from datom_core._store._paths import refuse_userinfo

__all__ = ["FsspecStore"]

# Storage options whose values are credentials: scrubbed from every error message.
_SECRET_OPTION = re.compile(r"key|secret|token|pass|cred|auth|sas|sig", re.IGNORECASE)


class FsspecStore(Store):
    """A datom root at ``<url>/datom/`` on any filesystem fsspec can reach.

    ``url`` is the project's storage location (``memory://proj``, ``gcs://bucket/pfx``...);
    ``storage_options`` go to the fsspec filesystem and may hold credentials, so they are
    never recorded by :meth:`describe` nor shown in messages. :meth:`put_if_absent` is
    only as atomic as the filesystem's ``mode="create"``.
    """

    # Object stores (gcs://, az://...) answer each request a round trip away: a write's
    # independent PUTs go at once (memory:// loses nothing by it).
    parallel_puts = True

    def __init__(self, url: str, **storage_options: Any) -> None:
        refuse_userinfo(url)
        self.location = url.rstrip("/")
        self._options = storage_options
        fs, path = self._connect()
        super().__init__(url=f"{self.location}/datom", root=f"{path.rstrip('/')}/datom")
        self._fs_cache = fs
        self._fs_pid = os.getpid()

    def _connect(self) -> tuple[Any, str]:
        from fsspec.core import url_to_fs

        try:
            return url_to_fs(self.location, skip_instance_cache=True, **self._options)
        except (ImportError, ValueError, TypeError) as e:
            raise StoreError(
                f"cannot open store {self.location}/datom ({type(e).__name__}: "
                f"{self._redact(str(e))}); check the URL, its storage options and that the "
                "fsspec backend for this protocol is installed"
            ) from e

    def _make_fs(self) -> Any:
        return self._connect()[0]

    def describe(self) -> dict[str, Any]:
        """``{"type": "fsspec", "url": <location>}``; storage options are not recorded."""
        return {"type": "fsspec", "url": self.location}

    def _secrets(self) -> tuple[str, ...]:
        return tuple(
            value
            for name, value in getattr(self, "_options", {}).items()
            if isinstance(value, str) and value and _SECRET_OPTION.search(name)
        )

    def _backend_errors(self) -> tuple[type[BaseException], ...]:
        # Backends raise their own types (google.api_core, azure.core, ...); anything that
        # is not already a datom error is a store failure here.
        return (Exception,)
