"""TLS at the gRPC edge: a listener's certificate and key, and what a client trusts.

Every listener of the arena (gateway, workers, the standalone referee) takes a ``ServerTls``; every
client that dials (the SDK, the CLI, the gateway dialling its workers) takes a ``ClientTls`` and
verifies the server against the system's roots or the CA file it is given. ``server_name`` checks the
certificate for another name than the address's host: workers dialled by pod IP can share one
certificate for an internal name.
"""

from __future__ import annotations

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
