"""How close Redis is to its ``maxmemory``: with ``noeviction`` (deploy/redis.conf), past it every
write fails, so no match starts and no result is stored. The gateways check it every minute and log a
warning past ``WARN_AT``; the metrics (``arena_redis_memory_*``) and the alert rule say the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import redis
import structlog

log = structlog.get_logger("arena.headroom")

WARN_AT: Final = 0.8


@dataclass(frozen=True)
class Headroom:
    used: int
    maxmemory: int  # 0: none set (then only the machine's memory bounds Redis)

    @property
    def fraction(self) -> float | None:
        """Used over maxmemory, or None without a cap."""
        return self.used / self.maxmemory if self.maxmemory else None


def read(client: redis.Redis) -> Headroom:
    info: Any = client.info("memory")
    return Headroom(int(info.get("used_memory", 0)), int(info.get("maxmemory", 0)))


def check(client: redis.Redis, warn_at: float = WARN_AT, *, uncapped_warned: bool = True) -> Headroom:
    """Read the headroom and log a warning when Redis is past ``warn_at`` of its maxmemory (and when it
    has none, unless ``uncapped_warned``: said once per process is enough)."""
    h = read(client)
    if h.fraction is None:
        if not uncapped_warned:
            log.warning("redis has no maxmemory: nothing warns before the machine runs out", used_bytes=h.used)
    elif h.fraction >= warn_at:
        log.warning(
            "redis memory nearly full: writes fail at maxmemory (noeviction)", used_bytes=h.used,
            maxmemory_bytes=h.maxmemory, used_fraction=round(h.fraction, 3),
            hint="archive transcripts sooner (--transcript-retention-min) or raise maxmemory with the memory limit",
        )  # fmt: skip
    return h
