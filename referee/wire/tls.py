"""TLS at the gRPC edge: a listener's certificate and key, and what a client trusts.

Every listener of the arena (gateway, workers, the standalone referee) takes a ``ServerTls``; every
client that dials (the SDK, the CLI, the gateway dialling its workers) takes a ``ClientTls`` and
verifies the server against the system's roots or the CA file it is given. ``server_name`` checks the
certificate for another name than the address's host: workers dialled by pod IP can share one
certificate for an internal name.

gRPC says little when a handshake fails (UNAVAILABLE, and a line from its C core); ``tls_advice`` and
``server_name_for`` shake hands again with Python's ``ssl``, which names the reason and reads the
certificate's names, so that a person is told which setting to change.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc


class TlsConfigError(ValueError):
    """A certificate, key or CA file that cannot be used; the message names it."""


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TlsConfigError(f"{what} {path}: {e.strerror or e}") from None
    if b"-----BEGIN" not in data:
        raise TlsConfigError(f"{what} {path}: not a PEM file")
    return data


@dataclass(frozen=True)
class ServerTls:
    """A listener's certificate chain and private key (PEM files)."""

    cert: Path
    key: Path

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))])


@dataclass(frozen=True)
class ClientTls:
    """How a client verifies the server: the CA bundle (None: the system's roots) and, optionally,
    the name the certificate must carry when it is not the host dialled."""

    ca: Path | None = None
    server_name: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=_read(self.ca, "CA file") if self.ca else None)

    def options(self) -> list[tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def server_tls(cert: str | Path | None, key: str | Path | None) -> ServerTls | None:
    """The listener's TLS from two settings: both or neither (TlsConfigError for one alone)."""
    if not cert and not key:
        return None
    if not (cert and key):
        raise TlsConfigError("TLS needs both a certificate file and a key file (--tls-cert and --tls-key)")
    tls = ServerTls(Path(cert), Path(key))
    tls.credentials()  # fail at start-up, naming the file, not at the first connection
    return tls


def client_tls(enabled: bool, ca: str | Path | None = None, server_name: str = "") -> ClientTls | None:
    """A client's TLS from its settings: on with ``enabled`` or when a CA file is given."""
    if not (enabled or ca):
        return None
    tls = ClientTls(Path(ca) if ca else None, server_name)
    if tls.ca is not None:
        _read(tls.ca, "CA file")
    return tls


def aio_channel(address: str, tls: ClientTls | None, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """An asyncio channel to ``address``: TLS-verified when ``tls`` is given, else plaintext."""
    if tls is None:
        return grpc.aio.insecure_channel(address, options=list(options))
    return grpc.aio.secure_channel(address, tls.credentials(), options=[*options, *tls.options()])


def sync_channel(address: str, tls: ClientTls | None, options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
    """A blocking channel to ``address``, on the same terms as ``aio_channel``."""
    if tls is None:
        return grpc.insecure_channel(address, options=list(options))
    return grpc.secure_channel(address, tls.credentials(), options=[*options, *tls.options()])


def is_loopback(address: str) -> bool:
    """Whether a listen address is reachable from this host only (plaintext is then acceptable)."""
    host = address.rpartition(":")[0].strip("[]") if ":" in address else address
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def _handshake(address: str, ca: Path | None, name: str | None, timeout: float) -> list[str]:
    """Shake hands with ``address`` verifying its certificate against ``ca`` (None: the system's roots),
    and against ``name`` unless it is None; the names the certificate carries. ssl errors propagate."""
    context = ssl.create_default_context(cafile=str(ca) if ca else None)
    context.check_hostname = name is not None
    context.set_alpn_protocols(["h2"])  # what gRPC offers
    with (
        socket.create_connection(_host_port(address), timeout) as raw,
        context.wrap_socket(raw, server_hostname=name) as conn,
    ):
        cert = conn.getpeercert() or {}
    alt: Any = cert.get("subjectAltName", ())
    return [str(value) for kind, value in alt if kind in ("DNS", "IP Address")]


def _speaks_tls(address: str, timeout: float) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection(_host_port(address), timeout) as raw, context.wrap_socket(raw):
            return True
    except (OSError, ValueError):
        return False


def _concrete(name: str) -> str:
    """A name that matches ``name`` (``*.arena.internal`` -> ``worker.arena.internal``)."""
    return "worker" + name[1:] if name.startswith("*.") else name


def server_name_for(address: str, ca: Path | None, server_name: str = "", timeout: float = 5.0) -> str:
    """The name to check the certificate served at ``address`` for: ``server_name`` if given, "" when the
    host dialled is on the certificate, else the certificate's first name (a certificate for a DNS name,
    dialled at 127.0.0.1). TlsConfigError names the reason when ``ca`` (None: the system's roots) does not
    verify it or ``server_name`` is not on it."""
    host = _host_port(address)[0]
    try:
        names = _handshake(address, ca, None, timeout)
    except ssl.SSLCertVerificationError as e:
        trust = f"the CA in {ca}" if ca else "the system's roots (give --tls-ca FILE for a private CA)"
        raise TlsConfigError(
            f"the certificate served at {address} is not signed by {trust}: {e.verify_message}"
        ) from None
    except (OSError, ValueError) as e:
        raise TlsConfigError(f"no TLS handshake with {address}: {e}") from None
    for name in (server_name,) if server_name else (host, *map(_concrete, names)):
        try:
            _handshake(address, ca, name, timeout)
        except ssl.SSLCertVerificationError:
            continue
        except (OSError, ValueError) as e:
            raise TlsConfigError(f"no TLS handshake with {address}: {e}") from None
        return "" if name == host else name
    raise TlsConfigError(f"the certificate served at {address} is for {', '.join(names) or 'no name'}, "
                         f"not {server_name or host}")  # fmt: skip


def tls_advice(address: str, tls: ClientTls | None, timeout: float = 3.0) -> str | None:
    """Why a client set up with ``tls`` (None: plaintext) cannot talk to ``address``, as the setting to
    change; None when TLS is not the problem (nothing listens, say, or the handshake works)."""
    if tls is None:
        if _speaks_tls(address, timeout):
            return f"{address} serves TLS: add --tls (and --tls-ca FILE when its certificate comes from a private CA)"
        return None
    host = _host_port(address)[0]
    try:
        names = _handshake(address, tls.ca, None, timeout)
    except ssl.SSLCertVerificationError as e:
        trusted = f"the CA in {tls.ca}" if tls.ca else "the system's roots"
        return (f"the certificate of {address} is not signed by {trusted} ({e.verify_message}): "
                "add --tls-ca FILE, the CA that signed it")  # fmt: skip
    except ssl.SSLError:
        if _speaks_tls(address, timeout):
            return None
        return f"{address} does not answer in TLS: drop --tls and --tls-ca if it serves plaintext"
    except (OSError, ValueError):
        return None
    wanted = tls.server_name or host
    try:
        _handshake(address, tls.ca, wanted, timeout)
    except ssl.SSLCertVerificationError:
        if not names:
            return f"the certificate of {address} carries no name (subjectAltName): it cannot be verified"
        flag = f"add --tls-server-name {_concrete(names[0])}"
        if tls.server_name:
            flag = "give --tls-server-name one of them"
        return f"the certificate of {address} is for {', '.join(names)}, not {wanted}: {flag}"
    except (OSError, ValueError):
        return None
    return None
