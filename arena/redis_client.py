"""The one place Redis clients are made: every process of the arena connects through ``connect``.

Clients fail fast when Redis is down (``socket_connect_timeout``), so that callers retry with
back-off instead of hanging, and a client that makes blocking reads gets a socket timeout longer
than its longest block: redis-py re-sends a read that outlives ``socket_timeout`` (PLATFORM.md).
Replies are bytes (``keys.text`` decodes them).

A URL is either a plain Redis URL (``redis://``, ``rediss://``, ``unix://``: redis-py's own forms) or a
Sentinel-managed primary::

    redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB][?sentinel_password=...]
    rediss+sentinel://...   (TLS to the sentinels and to the primary)

The hosts are the sentinels (port 26379 when left out), ``SERVICE`` the name they monitor the primary by
(``sentinel monitor SERVICE ...``), the user and password those of the primary (and its replicas), and
``sentinel_password`` the sentinels' own (``requirepass`` in sentinel.conf), if any. Such a client asks
the sentinels where the primary is whenever it opens a connection: after a failover, the connections to
the old primary fail (refused, reset, or READONLY once it is a replica again: redis-py drops the
connection then), and the caller's retry (``TROUBLE``) lands on the new one. Blocking reads are
re-issued so, and Lua scripts are loaded again by redis-py on NOSCRIPT (a new primary may not have them).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.asyncio as aioredis
import redis.asyncio.sentinel as aiosentinel
import redis.sentinel

CONNECT_TIMEOUT_S = 2.0
TIMEOUT_S = 5.0
SENTINEL_PORT = 26379
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")


@dataclass(frozen=True)
class SentinelURL:
    """A ``redis+sentinel://`` URL taken apart (see the module)."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None
    tls: bool = False

    @classmethod
    def parse(cls, url: str) -> SentinelURL:
        parts = urlsplit(url)
        if parts.scheme not in SENTINEL_SCHEMES:
            raise ValueError(f"not a Sentinel URL (redis+sentinel:// or rediss+sentinel://): {url!r}")
        auth, _, hosts = parts.netloc.rpartition("@")
        username = password = None
        if auth:
            user, colon, pw = auth.partition(":")
            username, password = (unquote(user) or None), (unquote(pw) if colon else None)
        sentinels = []
        for hostport in filter(None, hosts.split(",")):
            if hostport.startswith("["):  # [IPv6]:port
                host, _, rest = hostport[1:].partition("]")
                port = rest.removeprefix(":")
            else:
                host, _, port = hostport.partition(":")
            try:
                sentinels.append((host, int(port) if port else SENTINEL_PORT))
            except ValueError:
                raise ValueError(f"a sentinel's port must be a number: {hostport!r} in a Sentinel URL") from None
        path = [unquote(p) for p in parts.path.split("/") if p]
        if not sentinels or not path or len(path) > 2:
            raise ValueError(
                "a Sentinel URL is redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB], "
                f"not {shown(url)!r}"
            )
        try:
            db = int(path[1]) if len(path) > 1 else 0
        except ValueError:
            raise ValueError(f"a Sentinel URL's database must be a number, not {path[1]!r}") from None
        query = parse_qs(parts.query)
        sentinel_password = query.get("sentinel_password", [None])[0]
        return cls(tuple(sentinels), path[0], db, username, password, sentinel_password,
                   parts.scheme == "rediss+sentinel")  # fmt: skip


def is_sentinel(url: str) -> bool:
    return url.split("://", 1)[0] in SENTINEL_SCHEMES


def shown(url: str) -> str:
    """A Redis URL (either form) fit for a log: its passwords replaced by ``***``."""
    parts = urlsplit(url)
    auth, at, hosts = parts.netloc.rpartition("@")
    if at and ":" in auth:
        auth = auth.split(":", 1)[0] + ":***"
    query = "&".join(
        f"{k}=***" if k.endswith("password") else f"{k}={v}"
        for k, v in (p.split("=", 1) if "=" in p else (p, "") for p in parts.query.split("&") if p)
    )
    return parts._replace(netloc=f"{auth}{at}{hosts}", query=query).geturl()


def _sentinel_options(u: SentinelURL, timeout_s: float) -> dict[str, Any]:
    """What the connections to the sentinels take: short timeouts (a sentinel that does not answer is
    skipped for the next), the sentinels' password and TLS."""
    options: dict[str, Any] = {"socket_connect_timeout": CONNECT_TIMEOUT_S, "socket_timeout": timeout_s}
    if u.sentinel_password:
        options["password"] = u.sentinel_password
    if u.tls:
        options["ssl"] = True
    return options


def _primary_options(u: SentinelURL, socket_timeout: float) -> dict[str, Any]:
    return {
        "db": u.db, "username": u.username, "password": u.password, "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "socket_timeout": socket_timeout, "health_check_interval": 10, **({"ssl": True} if u.tls else {}),
    }  # fmt: skip


def connect(url: str, *, block_ms: int = 0, timeout_s: float = TIMEOUT_S, replicas: int | None = None) -> redis.Redis:
    """A synchronous client; ``block_ms``: the longest blocking read it will make; ``replicas``: how many
    replicas must hold a write before ``replicated`` calls it done (None: the ``redis_replicas`` setting)."""
    socket_timeout = timeout_s + block_ms / 1000
    if is_sentinel(url):
        u = SentinelURL.parse(url)
        sentinel = redis.sentinel.Sentinel(list(u.sentinels), sentinel_kwargs=_sentinel_options(u, timeout_s))  # type: ignore[no-untyped-call]
        client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
            u.service, redis_class=redis.Redis, **_primary_options(u, socket_timeout)
        )
    else:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=socket_timeout, health_check_interval=10,
        )  # fmt: skip
    client._arena_replication = _Policy(replicas if replicas is not None else default_replicas(), is_sentinel(url))  # type: ignore[attr-defined]
    return client


class _BlockingSentinelPool(aiosentinel.SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """The asyncio Sentinel pool with ``BlockingConnectionPool``'s bound: callers beyond
    ``max_connections`` wait for one instead of failing."""


def connect_async(
    url: str, *, block_ms: int = 0, timeout_s: float = TIMEOUT_S, max_connections: int = 8
) -> aioredis.Redis:
    """An asyncio client on the same terms as ``connect``, with at most ``max_connections`` connections:
    callers beyond that wait for one (up to ``timeout_s``) instead of opening more, so a process's
    connections to Redis stay bounded whatever its load."""
    socket_timeout = timeout_s + block_ms / 1000
    if is_sentinel(url):
        u = SentinelURL.parse(url)
        sentinel = aiosentinel.Sentinel(list(u.sentinels), sentinel_kwargs=_sentinel_options(u, timeout_s))  # type: ignore[no-untyped-call]
        client: aioredis.Redis = sentinel.master_for(
            u.service, redis_class=aioredis.Redis, connection_pool_class=_BlockingSentinelPool,
            max_connections=max_connections, timeout=timeout_s, **_primary_options(u, socket_timeout),
        )  # fmt: skip
        return client
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=timeout_s, socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=socket_timeout, health_check_interval=10,
    )  # fmt: skip
    return aioredis.Redis(connection_pool=pool)


REPLICATION_TIMEOUT_MS = 2000
"""How long ``replicated`` waits for the replicas to acknowledge (``WAIT``): far above a healthy replica's
lag (milliseconds), well under a caller's patience."""
AUTO_RECHECK_S = 30.0
SENTINEL_RECHECK_S = 5.0
"""How often a Sentinel-managed client counts its primary's connected replicas (auto ``redis_replicas``)."""
FENCE_KEY = "arena:replication-fence"

_configured: dict[str, int] = {}  # "replicas": the ``redis_replicas`` setting of this process (``set_replicas``)


def set_replicas(value: object) -> None:
    """This process's ``redis_replicas`` setting (a command sets it from flag, environment or file):
    a whole number of replicas, or -1 (auto). ValueError for anything else."""
    try:
        n = int(str(value))
    except ValueError:
        raise ValueError(f"redis_replicas must be a whole number (-1: auto), not {value!r}") from None
    if n < -1:
        raise ValueError(f"redis_replicas must be -1 (auto) or more, not {n}")
    _configured["replicas"] = n


def default_replicas() -> int:
    """The setting for a client made without ``replicas``: set by the command, else ``$ARENA_REDIS_REPLICAS``
    (a process started by another inherits it), else -1 (auto)."""
    if "replicas" in _configured:
        return _configured["replicas"]
    import os

    env = os.environ.get("ARENA_REDIS_REPLICAS", "")
    try:
        return int(env) if env else -1
    except ValueError:
        return -1


@dataclass
class _Policy:
    replicas: int  # -1: auto
    sentinel: bool
    decided: int = 0  # auto's answer so far
    checked_at: float = float("-inf")


def required_replicas(client: Any) -> int:
    """How many replicas must hold a write of ``client`` (see ``replicated``). Auto (-1): behind a Sentinel
    URL, every replica connected to the primary (at least 1; counted every ``SENTINEL_RECHECK_S``): the
    sentinels promote by the offsets they last polled, not by who acknowledged, so a write one of two
    replicas held was lost (docs/deploy.md); a replica that is down cannot be promoted and is not waited for.
    Else 1 once the primary has shown a connected
    replica (``INFO replication``, asked again every 30 s while it has none), and it stays 1: replicas
    that go away are when it matters most (the primary's ``min-replicas-to-write`` refuses writes then)."""
    policy = getattr(client, "_arena_replication", None)
    if policy is None:  # a client made elsewhere (tests): auto
        policy = _Policy(-1, False)
        with contextlib.suppress(AttributeError):
            client._arena_replication = policy
    if policy.replicas >= 0:
        return int(policy.replicas)
    now = time.monotonic()
    if policy.sentinel:  # every replica connected now: one that acknowledged may not be the one promoted
        if now - policy.checked_at >= SENTINEL_RECHECK_S:
            info_: Any = client.info("replication")
            policy.checked_at = now
            policy.decided = max(1, int(info_.get("connected_slaves", 0)))
        return int(policy.decided)
    if policy.decided == 0 and now - policy.checked_at >= AUTO_RECHECK_S:
        info: Any = client.info("replication")
        policy.checked_at = now
        policy.decided = 1 if int(info.get("connected_slaves", 0)) > 0 else 0
    return int(policy.decided)


class NotReplicatedError(redis.RedisError):
    """A write the primary took but too few replicas acknowledged in time: not done yet. Trouble (below):
    the caller retries it (the arena's writes that must not be lost are idempotent) or reports failure."""


def replicated(client: Any, write: Any, what: str, *, timeout_ms: int = REPLICATION_TIMEOUT_MS) -> list[Any]:
    """Run ``write(pipe)`` (commands queued on a pipeline of ``client``) and return their replies once
    ``required_replicas`` replicas hold them; NotReplicatedError (trouble) when fewer acknowledged in
    ``timeout_ms``. ``what`` names the write for the error.

    One pipeline, so one connection to one server: the write, a fence write (``INCR`` of ``FENCE_KEY``) and
    ``WAIT n timeout``. ``WAIT`` waits for the replication offset of its connection's last write; the fence
    makes that offset at least the primary's current one, so the ``WAIT`` also covers the same write made
    before through another connection (a retry after NotReplicatedError, where the write finds itself
    done already). A connection that breaks (a failover) makes redis-py send the whole pipeline again,
    on the new primary: write and ``WAIT`` always meet on the same server."""
    n = required_replicas(client)
    pipe = client.pipeline(transaction=False)
    write(pipe)
    queued = len(pipe)
    if n > 0:
        pipe.incr(FENCE_KEY)
        pipe.wait(n, timeout_ms)
    replies: list[Any] = pipe.execute()
    if n > 0 and int(replies[-1]) < n:
        raise NotReplicatedError(
            f"{what}: {replies[-1]} of the {n} replica(s) required acknowledged it within {timeout_ms} ms"
        )
    return replies[:queued]


def replicated_after(client: Any, server: str, what: str, *, timeout_ms: int = REPLICATION_TIMEOUT_MS) -> None:
    """``replicated`` for a write already made in a transaction of its own (``MULTI``/``EXEC`` after
    ``WATCH``), which cannot carry the ``WAIT``: ``server`` is the run id of the server that ran it (an
    ``INFO server`` queued in the transaction, ``run_id``). NotReplicatedError when the ``WAIT`` meets
    another server (a failover came between: the write may be gone) or too few replicas."""
    if required_replicas(client) <= 0:
        return
    replies = replicated(client, lambda pipe: pipe.info("server"), what, timeout_ms=timeout_ms)
    if replies[0].get("run_id") != server:
        raise NotReplicatedError(f"{what}: the primary changed before its replicas acknowledged it (a failover)")


TROUBLE = (redis.RedisError,)
"""What a process of the arena rides out with back-off rather than dying of: Redis away (connection,
timeout), loading, or refusing writes (OOM at ``maxmemory``, MISCONF when it cannot persist, READONLY on a
replica after a failover). Every background loop catches this; a call from a client gets UNAVAILABLE with
``trouble(e)`` as its reason."""


def trouble(error: BaseException) -> str:
    """What is wrong with Redis, for a person (a log line, a status's details)."""
    text = str(error)[:200]
    if isinstance(error, NotReplicatedError):
        return f"the arena's database did not replicate a write in time (not done; retry): {text}"
    if isinstance(error, redis.ResponseError) and text.startswith("NOREPLICAS"):
        return f"the arena's database refuses writes: too few replicas are connected (min-replicas-to-write): {text}"
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
