"""TLS on loopback with a certificate authority of the test's own, as an enterprise host
behind a private CA is met: no trust store holds the CA (its certificate's path is
given), so a client trusts the server only when told to (``http.sslCAInfo``,
``GIT_SSL_CAINFO``, ``AWS_CA_BUNDLE``) or told not to check.

* :func:`https_git_server`: git's own ``git http-backend`` over HTTPS
  (:class:`HttpsGitServer`, ``https://localhost:<port>/...``, its CA in ``server.ca``);
* :class:`TlsFront`: TLS in front of any loopback server (moto S3);
* :class:`ConnectProxy`: an HTTP proxy tunnelling ``CONNECT``, what HTTPS through a
  corporate proxy is.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitbackend import GitBackendServer
from tests.gitserver import serving

__all__ = [
    "ConnectProxy",
    "HttpsGitServer",
    "TlsFront",
    "client_certificate",
    "https_git_server",
    "make_ca",
]


def make_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate it signs for ``localhost`` and ``127.0.0.1``: the
    paths of the CA's certificate, the server's certificate and the server's key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def signed(builder: x509.CertificateBuilder, key: Any) -> x509.Certificate:
        return builder.sign(key, hashes.SHA256())

    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = signed(
        x509.CertificateBuilder().subject_name(name("datom test CA")).issuer_name(name("datom test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True),
        ca_key,
    )  # fmt: skip
    leaf = signed(
        x509.CertificateBuilder().subject_name(name("localhost")).issuer_name(ca.subject)
        .public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        ]), critical=False),
        ca_key,
    )  # fmt: skip
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(_pem_key(leaf_key))
    (folder / "ca.key").write_bytes(_pem_key(ca_key))  # for client_certificate
    return paths


def client_certificate(folder: Path, holder: str = "ada") -> tuple[Path, Path]:
    """A client certificate for ``holder`` that :func:`make_ca`'s CA in ``folder`` signs
    (what a server asking for one, mutual TLS, accepts): its path and its key's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    ca_key: Any = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, holder)]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = folder / f"{holder}.pem", folder / f"{holder}.key"
    paths[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(_pem_key(key))
    return paths


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(  # type: ignore[no-any-return]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class HttpsGitServer(GitBackendServer):
    """:class:`GitBackendServer` speaking TLS with a certificate of :func:`make_ca`'s CA."""

    def __init__(self, root: Path, token: str) -> None:
        super().__init__(root, token)
        self.ca, cert, key = make_ca(root)
        self.folder = root
        self._context = context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        # The handshake runs in each request's own thread (not in accept, which would
        # stall every other client behind a slow one).
        self._server.socket = context.wrap_socket(
            self._server.socket, server_side=True, do_handshake_on_connect=False
        )

    def url_for(self, repo_name: str) -> str:
        return f"https://localhost:{self.port}/{repo_name}"

    def require_client_certificates(self) -> None:
        """From the next connection on, accept only a client presenting a certificate
        the CA signs (mutual TLS); :func:`client_certificate` makes one."""
        self._context.load_verify_locations(self.ca)
        self._context.verify_mode = ssl.CERT_REQUIRED


@pytest.fixture
def https_git_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpsGitServer]:
    """``git http-backend`` over HTTPS on loopback, its CA in ``server.ca``."""
    token = secrets.token_urlsafe(24)
    yield from serving(HttpsGitServer(tmp_path_factory.mktemp("git-https"), token))  # type: ignore[misc]


class _Loopback:
    """A server on a free loopback port handing each connection to :meth:`_handle` in a
    thread of its own."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._listener.close()


class ConnectProxy(_Loopback):
    """An HTTP proxy on loopback that tunnels ``CONNECT host:port`` (what HTTPS through a
    proxy asks for, as a corporate proxy serves it) and records each target it tunnels."""

    def __init__(self) -> None:
        self.tunnelled: list[str] = []
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method != "CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            self.tunnelled.append(target)
            host, _, port = target.rpartition(":")
            with socket.create_connection((host, int(port))) as upstream:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                _splice(client, upstream)


class TlsFront(_Loopback):
    """TLS (a certificate of :func:`make_ca`'s CA, its path in :attr:`ca`) in front of the
    plain server at ``upstream`` (``host:port``): :attr:`url` is ``https://localhost:<port>``."""

    def __init__(self, upstream: str, folder: Path) -> None:
        self.ca, cert, key = make_ca(folder)
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        super().__init__()
        self.url = f"https://localhost:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        try:
            secure = self._context.wrap_socket(client, server_side=True)
        except OSError:  # the client refused the certificate
            client.close()
            return
        with secure, socket.create_connection(self._upstream) as upstream:
            _splice(secure, upstream)


def _splice(one: socket.socket, other: socket.socket) -> None:
    """Copy each way between ``one`` and ``other`` until both ends are done."""
    back = threading.Thread(target=_pump, args=(other, one), daemon=True)
    back.start()
    _pump(one, other)
    back.join(timeout=5)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until either end closes, then close both ways."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for end in (src, dst):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
