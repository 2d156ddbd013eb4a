"""What one web process is given: where the arena's data is, where to listen, whom to trust."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from arena.service.ratelimit import RateLimits

DEFAULT_LISTEN = "127.0.0.1:8080"


@dataclass(frozen=True, slots=True)
class WebConfig:
    redis_url: str
    listen: str = DEFAULT_LISTEN
    archive: Path | None = None  # folder of archived transcripts (the gateway's --archive), read only
    tls_cert: Path | None = None  # with tls_key: served over HTTPS (else plain HTTP, e.g. behind an ingress)
    tls_key: Path | None = None
    # proxies whose X-Forwarded-For is believed (the client address is the last hop not among them); any
    # other caller's header is ignored, so nobody picks the address their rate limit is counted against
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(default_factory=tuple)
    requests_per_min: int = 600  # per client address (0: no limit)
    # the gateway's limits (the same ARENA_* settings), so the owners' page can say how much is left
    gateway_limits: RateLimits = field(default_factory=RateLimits)

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)

    @property
    def secure(self) -> bool:
        """Served over TLS here (cookies get Secure)."""
        return self.tls_cert is not None


def parse_proxies(text: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``--trusted-proxies``: comma-separated addresses or networks (``10.0.0.0/8,127.0.0.1``)."""
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in text.split(",") if p.strip())
