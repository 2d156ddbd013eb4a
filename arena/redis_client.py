"""The one place Redis clients are made: every process of the arena connects through ``connect``.

Clients fail fast when Redis is down (``socket_connect_timeout``), so that callers retry with
back-off instead of hanging, and a client that makes blocking reads gets a socket timeout longer
than its longest block: redis-py re-sends a read that outlives ``socket_timeout`` (PLATFORM.md).
Replies are bytes (``keys.text`` decodes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


class ReadScript:
    """A Lua script that only reads, run so that a client allowed only to read (the website's ACL user,
    deploy/) may call it: EVALSHA_RO, EVAL_RO when Redis has not cached it, EVAL_RO in a pipeline (which
    cannot load it first without SCRIPT LOAD). A Redis before 7 has neither: there it runs as a plain
    script. One place for this, so that no reader of the ladder or the site calls a plain EVALSHA."""

    def __init__(self, client: redis.Redis, text: str) -> None:
        self.client = client
        self.script = client.register_script(text)
        self._read_only: bool | None = None  # whether this Redis has EVAL_RO (7.0+): found on first use

    def __call__(self, keys: list[str], args: Sequence[str | int | float] = (), client: Any = None) -> Any:
        if not self._has_read_only():
            return self.script(keys=keys, args=list(args), client=client)
        text = str(self.script.script)
        if client is not None and client is not self.client:  # a pipeline: sent with its text
            return client.eval_ro(text, len(keys), *keys, *args)
        try:
            return self.client.evalsha_ro(self.script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return self.client.eval_ro(text, len(keys), *keys, *args)

    def _has_read_only(self) -> bool:
        if self._read_only is None:
            try:
                self.client.eval_ro("return 1", 0)
                self._read_only = True
            except redis.ResponseError as e:
                if "unknown command" not in str(e).lower():
                    raise
                self._read_only = False
        return self._read_only
