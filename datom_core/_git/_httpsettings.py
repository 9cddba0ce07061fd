"""How an HTTP(S) remote is reached, by git's rules (private to the git layer): which
certificates are trusted and which proxy is used, from git's configuration and the
environment as git (libcurl) reads them.

dulwich reads ``http.sslCAInfo``, ``http.sslVerify``, ``http.proxy``, ``http_proxy``,
``https_proxy``, ``all_proxy`` and ``no_proxy`` itself, but not as git does: git's TLS
environment (``GIT_SSL_CAINFO``, ``GIT_SSL_NO_VERIFY``) is ignored; only lower-case proxy
variables are read (``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``, what containers and
corporate machines often set, are not), whatever the URL's scheme (``http_proxy`` for an
https URL); the environment wins over ``http.proxy``; and a proxy without a scheme
(``proxy.corp:8080``, which git takes as http) is refused. Here dulwich builds its
connection pool without a proxy, and the proxy git would use is put in front of it
(:func:`pool_manager`). dulwich offers no client certificate: the one git would present
to a server that asks for one (mutual TLS: ``http.sslCert``/``http.sslKey``, of the
longest ``http.<url>`` section matching, or ``GIT_SSL_CERT``/``GIT_SSL_KEY``) is given
to the pool here.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

import urllib3
from dulwich.client import default_urllib3_manager
from dulwich.config import Config, ConfigFile, StackedConfig

from .._errors import GitError

__all__ = ["git_proxy", "pool_manager", "with_git_environment"]


def with_git_environment(config: Config) -> Config:
    """``config`` under git's own TLS environment variables, which git reads over it:
    ``GIT_SSL_CAINFO`` (``http.sslCAInfo``), ``GIT_SSL_CERT`` and ``GIT_SSL_KEY``
    (``http.sslCert``, ``http.sslKey``) and ``GIT_SSL_NO_VERIFY`` (any value:
    ``http.sslVerify=false``)."""
    env = ConfigFile()
    for variable, name in (("CAINFO", b"sslCAInfo"), ("CERT", b"sslCert"), ("KEY", b"sslKey")):
        if os.environ.get(f"GIT_SSL_{variable}"):
            env.set((b"http",), name, os.fsencode(os.environ[f"GIT_SSL_{variable}"]))
    if "GIT_SSL_NO_VERIFY" in os.environ:
        env.set((b"http",), b"sslVerify", False)
    if not list(env.sections()):
        return config
    below = config.backends if isinstance(config, StackedConfig) else [config]
    return StackedConfig([env, *below])


def git_proxy(config: Config, url: str) -> str | None:
    """The proxy git uses for ``url`` (None: none): ``http.proxy`` (of the longest
    ``http.<url>`` section matching, else ``http``), else the environment's, per scheme
    as libcurl reads it (``https_proxy``/``HTTPS_PROXY`` for https, ``http_proxy`` only
    for http, then ``all_proxy``/``ALL_PROXY``); ``no_proxy``/``NO_PROXY`` lists the
    hosts reached directly either way. An empty value means none."""
    proxy = _configured(config, url, b"proxy")
    if proxy is None:
        scheme = urlsplit(url).scheme.lower()
        names = ["https_proxy", "HTTPS_PROXY"] if scheme == "https" else ["http_proxy"]
        for name in [*names, "all_proxy", "ALL_PROXY"]:
            if name in os.environ:
                proxy = os.environ[name]
                break
    if not proxy:
        return None
    if _bypassed(urlsplit(url).hostname or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _bypassed(host: str) -> bool:
    """Whether ``no_proxy`` (else ``NO_PROXY``) names ``host``, as libcurl matches it: ``*``,
    the host itself, or a domain it is in (a leading dot optional)."""
    listed = os.environ.get("no_proxy", os.environ.get("NO_PROXY", ""))
    host = host.lower().rstrip(".")
    for entry in (e.strip().lower().lstrip(".") for e in listed.split(",")):
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return True
    return False


def _configured(config: Config, url: str, name: bytes) -> str | None:
    """``http.<name>`` of the longest ``http.<url>`` section matching ``url``, else of
    ``http``'s (None: neither sets it)."""
    found: tuple[int, str] | None = None
    for section in config.sections():
        if section[0].lower() != b"http" or len(section) > 2:
            continue
        prefix = section[1].decode("utf-8", "replace") if len(section) == 2 else ""
        if not url.startswith(prefix.rstrip("/")):
            continue
        try:
            value = config.get(section, name)
        except KeyError:
            continue
        if found is None or len(prefix) >= found[0]:
            found = (len(prefix), value.decode("utf-8", "replace").strip())
    return found[1] if found is not None else None


def pool_manager(config: Config, url: str, timeout: float) -> Any:
    """dulwich's connection pool for ``url`` (its TLS settings, headers and timeout),
    going through the proxy git would use (dulwich is kept from choosing one: it would
    also refuse a proxy git takes, ``host:port`` without a scheme)."""
    manager = default_urllib3_manager(
        config, base_url=url, timeout=timeout, proxy_manager_cls=_NoProxy
    )
    # One answer to a server's "later" (429, 503): the client's, with its patience
    # (_httpclient); urllib3's own would sleep whatever Retry-After a GET is given. A
    # connection that fails is tried again after 0, 1 and 2 s (a blip), then reported.
    manager.connection_pool_kw["retries"] = urllib3.Retry(
        3, backoff_factor=0.5, respect_retry_after_header=False
    )
    cert = _configured(config, url, b"sslCert")
    if cert:  # a key in the certificate's file is read from there (as libcurl does)
        key = _configured(config, url, b"sslKey")
        files = {"sslCert": os.path.expanduser(cert), "sslKey": key and os.path.expanduser(key)}
        for name, path in files.items():
            if path and not os.access(path, os.R_OK):
                raise GitError(
                    f"git's http.{name} (or GIT_SSL_{name[3:].upper()}) names {path}, which "
                    f"cannot be read: nothing was sent to {url}. Point it at your client "
                    "certificate's file (git config --global http.sslCert/http.sslKey)."
                )
        manager.connection_pool_kw.update(
            cert_file=files["sslCert"],
            key_file=files["sslKey"],
            key_password="",  # an encrypted key is refused, never prompted for on a terminal
        )
    wanted = git_proxy(config, url)
    if wanted is None:
        return manager
    parts = urlsplit(wanted)
    auth = f"{unquote(parts.username)}:{unquote(parts.password or '')}" if parts.username else None
    headers = urllib3.make_headers(proxy_basic_auth=auth) if auth is not None else {}
    return urllib3.ProxyManager(
        wanted, proxy_headers=headers, headers=manager.headers, **manager.connection_pool_kw
    )


class _NoProxy(urllib3.PoolManager):
    """What dulwich makes where it would make a proxy manager: a plain pool."""

    def __init__(self, proxy_url: str, proxy_headers: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
