"""Every Prometheus metric the arena's processes export, each declared for the kinds of process that
export it, so that a process shows its own figures only (a gateway has no worker counters stuck at 0).

Kinds: ``gateway`` (bot sessions, relayed streams, match requests, and the arena-wide queue read from
Redis when scraped: one series however many workers run), ``worker`` (what its matches do, counted from
the transcript lines it records, so the figures agree with the transcripts), ``ladder`` (results
applied, scheduling, and its lag read from Redis when scraped), ``web`` (``arena web``: requests by
route and status, their duration, live viewers). ``arena serve`` runs gateway and ladder
in one process. Labelled counters start with every known label value at 0, so each series exists from
the first scrape and ``rate()`` sees the first increment.

The families read from Redis are named here (``SCRAPED``); their collectors live beside what they read
(``arena.service.queue.QueueCollector``, ``arena.local.ladder_runner.LadderLagCollector``) and the process's
command hands them to ``serve``. So this module is a leaf: of the project it imports only the Redis client
factory and the wire's values (tests/test_architecture.py).

``serve(...)`` starts the process's HTTP listener: ``/metrics`` (Prometheus text), ``/healthz`` (200
``ok``, or 503 when Redis does not answer) and ``/`` (an index). Port 0 means no listener (tests, local
runs). docs/operations.md lists the families per process; tests/test_metrics_truth.py holds it to that.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from socketserver import ThreadingMixIn
from typing import Any, Final, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import redis
import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    make_wsgi_app,
)
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from arena.redis_client import connect
from referee.wire.values import EndReason

log = structlog.get_logger("arena.metrics")

GATEWAY: Final = "gateway"
WORKER: Final = "worker"
LADDER: Final = "ladder"
WEB: Final = "web"
KINDS: Final = (GATEWAY, WORKER, LADDER, WEB)

disable_created_metrics()  # type: ignore[no-untyped-call] # no ``*_created`` series beside every counter: nothing here reads them

# ---------------------------------------------------------------------- families kept in the process

# worker
MATCHES_RUNNING: Final = Gauge("arena_matches_running", "Matches this worker is refereeing now", registry=None)
MATCHES_FINISHED: Final = Counter(
    "arena_matches_finished_total", "Matches finished on this worker", ["end_reason"], registry=None
)
MATCHES_RESUMED: Final = Counter(
    "arena_matches_resumed_total", "Matches this worker took over from another (lease run out)", registry=None
)
MOVE_LATENCY: Final = Histogram(
    "arena_move_seconds",
    "Time from a turn sent to the action taken, as the referee measured it",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
    registry=None,
)
TIMEOUTS: Final = Counter("arena_timeouts_total", "Moves not answered by the deadline (strikes)", registry=None)
REFUSALS: Final = Counter("arena_refusals_total", "Actions refused (syntax or illegal)", registry=None)
FORFEITS: Final = Counter("arena_forfeits_total", "Seats forfeited", ["reason"], registry=None)
LEASES_HELD: Final = Gauge("arena_worker_leases", "Match leases this worker holds", registry=None)
LEASES_LOST: Final = Counter(
    "arena_worker_leases_lost_total", "Leases another worker took over from this one", registry=None
)
# gateway
BOT_SESSIONS: Final = Gauge("arena_bot_sessions", "Bot sessions open on this gateway", registry=None)
RELAYED_STREAMS: Final = Gauge(
    "arena_relayed_play_streams", "Bot Play streams this gateway relays to workers", registry=None
)
RELAY_REATTACHED: Final = Counter(
    "arena_relay_reattached_total", "Relayed matches re-attached to a new worker after theirs was lost",
    registry=None,
)  # fmt: skip
RELAY_RETRIES: Final = Counter(
    "arena_relay_retries_total",
    "Attempts to reach the worker of a relayed match that failed before its Welcome (counted, not logged)",
    registry=None,
)
MATCHES_REQUESTED: Final = Counter(
    "arena_matches_requested_total", "Matches queued through this gateway", registry=None
)
CALLS_REFUSED: Final = Counter(
    "arena_calls_refused_total", "Gateway calls refused: UNAUTHENTICATED or PERMISSION_DENIED, by method",
    ["method", "code"], registry=None,
)  # fmt: skip
# ladder
LADDER_APPLIED: Final = Counter(
    "arena_ladder_results_applied_total", "Results applied to the Elo ladders", registry=None
)
LADDER_SCHEDULED: Final = Counter(
    "arena_ladder_matches_scheduled_total", "Rated matches the scheduler queued", registry=None
)
LADDER_PAUSED: Final = Gauge("arena_ladder_paused_bots", "Bots off the ladder after forfeiting in a row", registry=None)
# web (arena web): ``route`` is the route's pattern (``/owner/matches/{match_id}.jsonl``), never the path
# a client typed, so the series stay few whatever is requested; ``unmatched`` for paths no route has
WEB_REQUESTS: Final = Counter(
    "arena_web_requests_total", "Requests this web process answered, by route and status", ["route", "status"],
    registry=None,
)  # fmt: skip
WEB_DURATION: Final = Histogram(
    "arena_web_request_seconds", "Time to answer a request (a live stream: until its headers)", ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0), registry=None,
)  # fmt: skip
WEB_LIVE_VIEWERS: Final = Gauge(
    "arena_web_live_viewers", "Viewers of live matches connected to this web process", registry=None
)
# every kind
REDIS_ERRORS: Final = Counter(
    "arena_redis_errors_total", "Redis calls that failed (retried, or answered UNAVAILABLE)", ["op"], registry=None
)

FORFEIT_REASONS: Final = ("disconnected", "refusals", "strikes")  # referee.match's ``_forfeit`` calls
REDIS_OPS: Final[dict[str, tuple[str, ...]]] = {
    GATEWAY: ("gateway", "sessions-read", "sessions-beat", "sessions-check", "relay", "scrape", "health"),
    WORKER: ("claim", "reclaim", "heartbeat", "spec", "events", "announce", "complete", "renew", "authorize", "health"),
    LADDER: ("ladder-consume", "ladder-schedule", "scrape", "health"),
    WEB: ("health",),
}
FAMILIES: Final[dict[str, tuple[Any, ...]]] = {
    GATEWAY: (
        BOT_SESSIONS,
        RELAYED_STREAMS,
        RELAY_REATTACHED,
        RELAY_RETRIES,
        MATCHES_REQUESTED,
        CALLS_REFUSED,
        REDIS_ERRORS,
    ),
    WORKER: (
        MATCHES_RUNNING,
        MATCHES_FINISHED,
        MATCHES_RESUMED,
        MOVE_LATENCY,
        TIMEOUTS,
        REFUSALS,
        FORFEITS,
        LEASES_HELD,
        LEASES_LOST,
        REDIS_ERRORS,
    ),
    LADDER: (LADDER_APPLIED, LADDER_SCHEDULED, LADDER_PAUSED, REDIS_ERRORS),
    WEB: (WEB_REQUESTS, WEB_DURATION, WEB_LIVE_VIEWERS, REDIS_ERRORS),
}

# ---------------------------------------------------------------------- families read from Redis on scrape

QUEUE_DEPTH: Final = "arena_queue_depth"
MATCHES_BY_STATE: Final = "arena_matches"
REDIS_USED: Final = "arena_redis_memory_used_bytes"
REDIS_MAX: Final = "arena_redis_memory_max_bytes"
LADDER_LAG: Final = "arena_ladder_lag_seconds"
LADDER_UNAPPLIED: Final = "arena_ladder_unapplied_results"
SCRAPED: Final[dict[str, tuple[str, ...]]] = {
    GATEWAY: (QUEUE_DEPTH, MATCHES_BY_STATE, REDIS_USED, REDIS_MAX),
    WORKER: (),
    LADDER: (LADDER_LAG, LADDER_UNAPPLIED),
    WEB: (),
}


def family_names(kind: str) -> set[str]:
    """The metric family names a process of ``kind`` exports (counters without ``_total``, as the
    text parser names them)."""
    names = {m._name for m in FAMILIES[kind]} | set(SCRAPED[kind])
    return names


SCRAPED_LABELS: Final[dict[str, tuple[str, ...]]] = {
    QUEUE_DEPTH: ("priority",),
    MATCHES_BY_STATE: ("state",),
    LADDER_LAG: (),
    LADDER_UNAPPLIED: (),
    REDIS_USED: (),
    REDIS_MAX: (),
}


def family_labels() -> dict[str, set[str]]:
    """Every arena family's label names (a histogram's buckets add ``le``)."""
    out = {m._name: set(m._labelnames) | ({"le"} if isinstance(m, Histogram) else set())
           for kind in KINDS for m in FAMILIES[kind]}  # fmt: skip
    out.update({name: set(labels) for name, labels in SCRAPED_LABELS.items()})
    return out


def all_family_names() -> set[str]:
    """Every arena family any process exports (what dashboards and alert rules may reference)."""
    return set().union(*(family_names(k) for k in KINDS))


def scrape_failed(e: Exception) -> None:
    """What a Redis-reading collector does when its read fails: count it (``op="scrape"``) and log it; the
    collector then yields nothing for this scrape."""
    REDIS_ERRORS.labels("scrape").inc()
    log.warning("redis unavailable on scrape", op="scrape", error=str(e)[:200])


# ---------------------------------------------------------------------- the HTTP listener


class ScrapedCollector(Collector, Protocol):
    """A collector of families read from Redis on each scrape (``SCRAPED``): ``describe`` names them."""

    def describe(self) -> Iterable[Metric]: ...


Scraper = Callable[[redis.Redis], ScrapedCollector]
"""Makes a ``ScrapedCollector`` from the process's Redis client (a collector class is one)."""


def registry_for(
    kinds: Sequence[str], client: redis.Redis | None = None, scrapers: Sequence[Scraper] = ()
) -> CollectorRegistry:
    """The registry a process of these kinds serves: its families (labelled ones started at every known
    label value), the Redis-read ones from ``scrapers`` when ``client`` is given, and the
    process/GC/platform figures. ValueError when the scrapers do not read exactly the kinds' ``SCRAPED``
    families (a gateway without its queue depth would pass unnoticed otherwise)."""
    reg = CollectorRegistry(auto_describe=True)
    if client is not None:  # first: a failed read counts in this very scrape's arena_redis_errors_total
        collectors = [make(client) for make in scrapers]
        read = {m.name for c in collectors for m in c.describe()}
        wanted = {name for kind in kinds for name in SCRAPED[kind]}
        if read != wanted:
            raise ValueError(f"scrapers for {list(kinds)} read {sorted(read)}, not {sorted(wanted)}")
        for collector in collectors:
            reg.register(collector)
    seen: set[int] = set()
    for kind in kinds:
        for family in FAMILIES[kind]:
            if id(family) not in seen:
                seen.add(id(family))
                reg.register(family)
        for op in REDIS_OPS[kind]:
            REDIS_ERRORS.labels(op)
    if WORKER in kinds:
        for end in EndReason:
            MATCHES_FINISHED.labels(end.value)
        for reason in FORFEIT_REASONS:
            FORFEITS.labels(reason)
    ProcessCollector(registry=reg)
    PlatformCollector(registry=reg)
    GCCollector(registry=reg)
    return reg


def host_of(listen: str) -> str:
    """The host part of a ``HOST:PORT`` listen address (``[::1]:N`` gives ``::1``; none: all IPv4)."""
    host = listen.rpartition(":")[0] if ":" in listen else ""
    return host.strip("[]") or "0.0.0.0"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log: scrapes every few seconds would drown the process's own lines."""


def _app(registry: CollectorRegistry, health: Callable[[], str | None], kinds: Sequence[str]) -> Any:
    metrics_app = make_wsgi_app(registry)
    index = (
        f"<html><body><p>arena {' + '.join(kinds)}</p>"
        '<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li></ul></body></html>\n'
    ).encode()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            body: list[bytes] = metrics_app(environ, start_response)
            return body
        if path == "/healthz":
            problem = health()
            status, text = ("200 OK", b"ok\n") if problem is None else ("503 Service Unavailable",
                                                                       f"unhealthy: {problem}\n".encode())  # fmt: skip
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [text]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [index]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: try /metrics, /healthz\n"]

    return app


def redis_health(client: redis.Redis) -> Callable[[], str | None]:
    """A ``/healthz`` check: None when Redis answers a PING, else why not (counted as a Redis error)."""

    def check() -> str | None:
        try:
            client.ping()
        except redis.RedisError as e:
            REDIS_ERRORS.labels("health").inc()
            return f"redis: {str(e)[:200]}"
        return None

    return check


class MetricsServer:
    """The running listener (``close()`` stops it; tests)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread, client: redis.Redis | None) -> None:
        self.httpd, self.thread, self.client = httpd, thread, client
        self.port: int = httpd.server_address[1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.client is not None:
            self.client.close()


def serve(
    port: int, listen: str = "", kinds: Sequence[str] = (), redis_url: str = "", scrapers: Sequence[Scraper] = ()
) -> MetricsServer | None:
    """Serve ``/metrics``, ``/healthz`` and ``/`` for a process of ``kinds`` on the host of ``listen``
    (the process's gRPC listen address: a loopback service keeps its metrics on loopback) and ``port``
    (0: not at all), with the Redis-read families of ``scrapers`` when ``redis_url`` is given. OSError
    naming the address when it cannot bind."""
    if not port:
        return None
    host = host_of(listen)
    client = connect(redis_url, timeout_s=2.0) if redis_url else None
    try:
        registry = registry_for(kinds, client, scrapers)
    except ValueError:
        if client is not None:
            client.close()
        raise
    health = redis_health(client) if client is not None else (lambda: None)
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        server_class = type("MetricsHTTPServer", (_ThreadingServer,), {"address_family": family})
        httpd: WSGIServer = make_server(host, port, _app(registry, health, kinds), server_class, _QuietHandler)
    except OSError as e:
        if client is not None:
            client.close()
        raise OSError(e.errno, f"cannot serve /metrics on {host}:{port}: {e.strerror or e}") from e
    thread = threading.Thread(target=httpd.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return MetricsServer(httpd, thread, client)
