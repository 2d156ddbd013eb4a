"""Rate limits per bot and per owner (not per token: rotating a token must not reset them), kept in Redis
so that they hold across gateway replicas; and, per client address in one gateway's memory, the callers
that have no identity to count by (``AddressGuard``).

A fixed window per (kind, token hash), aligned on Redis's own clock (``TIME`` inside the script, so
gateways with skewed clocks agree on the window): the first call of a window creates its counter,
expiring at the window's end; a call past the limit is refused with the seconds until then. One Lua
script, one round trip a call. A fixed window lets a burst of up to twice the limit through across a
window's edge; that is the price of one counter per token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import redis

from arena import keys
from arena.config import Settings

SESSION: Final = "session"
"""Kind: a bot's session (OpenSession) or Play stream opened."""
REQUEST: Final = "request"
"""Kind: a match requested (RequestMatch) with an owner's token."""

_HIT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local ends = (math.floor(now / window) + 1) * window
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIREAT', KEYS[1], ends) end
if n > tonumber(ARGV[2]) then return ends - now end
return -1
"""


@dataclass(frozen=True)
class RateLimits:
    """Calls allowed per token in each window of ``window_s`` seconds (60: per minute); 0 is no limit."""

    session_opens: int = 120
    match_requests: int = 30
    window_s: float = 60.0

    def __post_init__(self) -> None:
        if self.session_opens < 0 or self.match_requests < 0:
            raise ValueError("rate limits are 0 (none) or more calls a window")
        if not 0.001 <= self.window_s <= 86_400:
            raise ValueError("the rate window is between 0.001 and 86,400 seconds")

    def per_kind(self) -> dict[str, int]:
        return {SESSION: self.session_opens, REQUEST: self.match_requests}

    @classmethod
    def from_settings(cls, s: Settings) -> RateLimits:
        """From the settings ``session_opens_per_min``, ``match_requests_per_min`` and ``rate_window_s``
        (``arena.config``; a flag's value may still be text). ValueError names a bad one."""
        try:
            return cls(int(s.session_opens_per_min), int(s.match_requests_per_min), float(s.rate_window_s))
        except (TypeError, ValueError) as e:
            raise ValueError(f"session_opens_per_min, match_requests_per_min, rate_window_s: {e}") from None


DEFAULT_PER_MINUTE: Final = RateLimits().per_kind()
"""Session and Play stream opens, and match requests, per token and minute."""


class RateLimiter:
    """``limits``: calls allowed per window for each kind (a kind not named, or 0: unlimited);
    ``window_s``: the window's length in seconds."""

    def __init__(self, client: redis.Redis, limits: Mapping[str, int] | None = None, window_s: float = 60) -> None:
        self.r = client
        self.limits = dict(DEFAULT_PER_MINUTE if limits is None else limits)
        self.window_s = window_s
        self._hit = client.register_script(_HIT)

    @classmethod
    def from_limits(cls, client: redis.Redis, limits: RateLimits) -> RateLimiter:
        return cls(client, limits.per_kind(), limits.window_s)

    def check(self, kind: str, subject: str) -> float | None:
        """Count one call of ``subject`` (``bot:NAME``, ``owner:NAME``); None when it is within the limit,
        else the whole seconds (at least 1) until the window ends and calls are accepted again."""
        limit = self.limits.get(kind)
        if not limit:
            return None
        window_ms = max(1, round(self.window_s * 1000))
        wait_ms = int(self._hit(keys=[keys.rate(kind, subject)], args=[window_ms, limit]))
        return None if wait_ms < 0 else float(max(1, math.ceil(wait_ms / 1000)))


def client_address(peer: str) -> str:
    """The client's address without its port (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``): one client's
    connections count together."""
    return peer.rpartition(":")[0] or peer


class AddressGuard:
    """Per client address, in this gateway's memory (no Redis command is spent on them): calls with a token
    that is nobody's (past ``unknown_per_window`` in a window, the address's calls with a token are refused
    before any look-up until the window ends), and anonymous FollowMatch streams open at once."""

    def __init__(self, unknown_per_window: int = 60, window_s: float = 60.0, anonymous_follows: int = 16) -> None:
        self.unknown_per_window = unknown_per_window
        self.window_s = window_s
        self.anonymous_follows = anonymous_follows
        self._unknown: dict[str, tuple[float, int]] = {}  # address -> (window start, count)
        self._follows: dict[str, int] = {}

    def blocked(self, address: str, now: float) -> float | None:
        """Seconds until the address may try tokens again, or None."""
        start, count = self._unknown.get(address, (now, 0))
        if now - start >= self.window_s:
            self._unknown.pop(address, None)
            return None
        return max(1.0, math.ceil(start + self.window_s - now)) if count >= self.unknown_per_window else None

    def unknown(self, address: str, now: float) -> None:
        """One call with a token that is nobody's."""
        start, count = self._unknown.get(address, (now, 0))
        if now - start >= self.window_s:
            start, count = now, 0
        self._unknown[address] = (start, count + 1)
        if len(self._unknown) > 100_000:  # many addresses: forget those whose window is over
            self._unknown = {a: v for a, v in self._unknown.items() if now - v[0] < self.window_s}

    def follow(self, address: str) -> bool:
        """Take a slot for an anonymous FollowMatch stream (False: the address has its fill); ``unfollow``
        gives it back."""
        n = self._follows.get(address, 0)
        if n >= self.anonymous_follows:
            return False
        self._follows[address] = n + 1
        return True

    def unfollow(self, address: str) -> None:
        n = self._follows.get(address, 0) - 1
        if n > 0:
            self._follows[address] = n
        else:
            self._follows.pop(address, None)
