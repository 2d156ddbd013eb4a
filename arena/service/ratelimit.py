"""Per-token rate limits, kept in Redis so that they hold across gateway replicas.

A fixed window per (kind, token): the first call of a window creates its counter with the window's
length as time-to-live, and a call past the limit is refused with the seconds until the window ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Final

import redis

from arena import keys

DEFAULT_PER_MINUTE: Final = {"session": 120, "request": 30}
"""Session and Play stream opens, and match requests, per token and minute."""

_HIT: Final = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then return redis.call('TTL', KEYS[1]) end
return -1
"""


class RateLimiter:
    """``limits``: calls allowed per window for each kind; ``window_s``: the window's length."""

    def __init__(self, client: redis.Redis, limits: Mapping[str, int] | None = None, window_s: int = 60) -> None:
        self.r = client
        self.limits = dict(DEFAULT_PER_MINUTE if limits is None else limits)
        self.window_s = window_s
        self._hit = client.register_script(_HIT)

    def check(self, kind: str, token_sha256: str) -> float | None:
        """Count one call; the seconds to wait when it is past the limit, else None."""
        limit = self.limits.get(kind)
        if limit is None:
            return None
        window = int(time.time() // self.window_s)
        ttl = int(self._hit(keys=[keys.rate(kind, token_sha256, window)], args=[self.window_s, limit]))
        return None if ttl < 0 else float(max(ttl, 1))
