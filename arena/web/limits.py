"""Requests per client address and minute, counted in this process's memory: the site writes nothing to
Redis, so each replica limits its own share (behind a load balancer spreading a client's requests over N
replicas, a client gets up to N times the limit; pick ``--requests-per-min`` with that in mind).

The client address is the TCP peer, unless the peer is one of ``--trusted-proxies``: then it is the
right-most address of X-Forwarded-For that is not a trusted proxy (each proxy appends the address it saw,
so anything left of the last trusted hop was written by the client and is not believed).
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Sequence

from aiohttp import web

from arena.web.app import CONFIG, Handler, _error

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
WINDOW_S = 60.0


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(peer: str, forwarded: str | None, proxies: Sequence[Network]) -> str:
    """The address a request is counted against (see the module's docstring)."""
    if not forwarded or not _trusted(peer, proxies):
        return peer
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # garbage in the header: count the proxy itself, not a made-up name
    return peer  # every hop a proxy of ours: the request started inside


class Window:
    """Fixed windows per key (address): (window start, count). Old entries are dropped when the table
    grows, so a flood of addresses costs bounded memory."""

    def __init__(self, limit: int, window_s: float = WINDOW_S) -> None:
        self.limit, self.window_s = limit, window_s
        self._seen: dict[str, tuple[float, int]] = {}

    def hit(self, key: str, now: float) -> float | None:
        """Count one; None when within the limit, else the whole seconds (>= 1) until the window ends."""
        if self.limit <= 0:
            return None
        start, count = self._seen.get(key, (now, 0))
        if now - start >= self.window_s:
            start, count = now, 0
        count += 1
        self._seen[key] = (start, count)
        if len(self._seen) > 100_000:
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_s}
        return None if count <= self.limit else float(max(1, math.ceil(start + self.window_s - now)))

    def remaining(self, key: str, now: float) -> int:
        start, count = self._seen.get(key, (now, 0))
        return self.limit if now - start >= self.window_s else max(0, self.limit - count)


class ClientLimits:
    """This process's counters: every request, and failed sign-ins (a stricter limit: guessing tokens)."""

    def __init__(self, requests_per_min: int, signin_failures_per_min: int = 10) -> None:
        self.requests = Window(requests_per_min)
        self.signin_failures = Window(signin_failures_per_min)


CLIENT: web.AppKey[ClientLimits] = web.AppKey("client_limits", ClientLimits)


def address_of(request: web.Request) -> str:
    """The request's client address (cached on the request)."""
    if "client" not in request:
        config = request.app[CONFIG]
        peer = request.remote or ""
        request["client"] = client_address(peer, request.headers.get("X-Forwarded-For"), config.trusted_proxies)
    return str(request["client"])


def too_many(request: web.Request, retry_after: float, what: str) -> web.Response:
    """429 with Retry-After, as a page (JSON under /api)."""
    response = _error(request, 429, f"Too many {what} from your address: try again in {retry_after:.0f} s.")
    response.headers["Retry-After"] = f"{retry_after:.0f}"
    return response


@web.middleware
async def limits(request: web.Request, handler: Handler) -> web.StreamResponse:
    """``requests_per_min`` per client address; past it, 429 until the window ends."""
    wait = request.app[CLIENT].requests.hit(address_of(request), time.monotonic())
    if wait is not None:
        return too_many(request, wait, "requests")
    return await handler(request)


def setup(app: web.Application) -> None:
    app[CLIENT] = ClientLimits(app[CONFIG].requests_per_min)
