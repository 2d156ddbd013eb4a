"""The one place Redis clients are made: every process of the arena connects through ``connect``.

Clients fail fast when Redis is down (``socket_connect_timeout``), so that callers retry with
back-off instead of hanging, and a client that makes blocking reads gets a socket timeout longer
than its longest block: redis-py re-sends a read that outlives ``socket_timeout`` (PLATFORM.md).
Replies are bytes (``keys.text`` decodes them).
"""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

CONNECT_TIMEOUT_S = 2.0
TIMEOUT_S = 5.0


def connect(url: str, *, block_ms: int = 0, timeout_s: float = TIMEOUT_S) -> redis.Redis:
    """A synchronous client; ``block_ms``: the longest blocking read it will make."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=timeout_s + block_ms / 1000,
        health_check_interval=10,
    )  # fmt: skip


def connect_async(
    url: str, *, block_ms: int = 0, timeout_s: float = TIMEOUT_S, max_connections: int = 8
) -> aioredis.Redis:
    """An asyncio client on the same terms as ``connect``, with at most ``max_connections`` connections:
    callers beyond that wait for one (up to ``timeout_s``) instead of opening more, so a process's
    connections to Redis stay bounded whatever its load."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=timeout_s, socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=timeout_s + block_ms / 1000, health_check_interval=10,
    )  # fmt: skip
    return aioredis.Redis(connection_pool=pool)


TROUBLE = (redis.RedisError,)
"""What a process of the arena rides out with back-off rather than dying of: Redis away (connection,
timeout), loading, or refusing writes (OOM at ``maxmemory``, MISCONF when it cannot persist, READONLY on a
replica after a failover). Every background loop catches this; a call from a client gets UNAVAILABLE with
``trouble(e)`` as its reason."""


def trouble(error: BaseException) -> str:
    """What is wrong with Redis, for a person (a log line, a status's details)."""
    text = str(error)[:200]
    if isinstance(error, redis.exceptions.OutOfMemoryError):
        return f"the arena's database refuses writes: it is full (maxmemory): {text}"
    if isinstance(error, redis.exceptions.ReadOnlyError):
        return f"the arena's database is read-only (a replica, or a failover under way): {text}"
    if isinstance(error, redis.ResponseError) and text.startswith("MISCONF"):
        return f"the arena's database refuses writes: it cannot save to its disk: {text}"
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return f"the arena's database is unavailable: {text}"
    return f"the arena's database refused the call: {text}"
