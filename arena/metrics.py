"""Every Prometheus metric the arena's processes export, in one place.

Workers count what their matches do (from the transcript lines they record, so the figures agree
with the transcripts); every process reports the queue it sees. ``serve(port)`` starts the
``/metrics`` HTTP endpoint; port 0 means no endpoint (tests, local runs).
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram, start_http_server

MATCHES_RUNNING: Final = Gauge("arena_matches_running", "Matches this worker is refereeing now")
QUEUE_DEPTH: Final = Gauge("arena_queue_depth", "Matches waiting for a worker", ["priority"])
MATCHES_FINISHED: Final = Counter("arena_matches_finished_total", "Matches finished here", ["end_reason"])
MATCHES_RESUMED: Final = Counter("arena_matches_resumed_total", "Matches taken over from another worker")
MOVE_LATENCY: Final = Histogram(
    "arena_move_seconds",
    "Time from a turn sent to the action taken, as the referee measured it",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
)
TIMEOUTS: Final = Counter("arena_timeouts_total", "Moves not answered by the deadline (strikes)")
REFUSALS: Final = Counter("arena_refusals_total", "Actions refused (syntax or illegal)")
FORFEITS: Final = Counter("arena_forfeits_total", "Seats forfeited", ["reason"])
LEASES_HELD: Final = Gauge("arena_worker_leases", "Match leases this worker holds")
LEASES_LOST: Final = Counter("arena_worker_leases_lost_total", "Leases another worker took over from this one")
REDIS_ERRORS: Final = Counter("arena_redis_errors_total", "Redis calls that failed and were retried", ["op"])
BOT_SESSIONS: Final = Gauge("arena_bot_sessions", "Bot sessions open on this gateway")
LADDER_APPLIED: Final = Counter("arena_ladder_results_applied_total", "Results applied to the Elo ladders")
LADDER_SCHEDULED: Final = Counter("arena_ladder_matches_scheduled_total", "Rated matches the scheduler queued")
LADDER_PAUSED: Final = Gauge("arena_ladder_paused_bots", "Bots off the ladder after forfeiting in a row")
RELAYED_STREAMS: Final = Gauge("arena_relayed_play_streams", "Bot Play streams this gateway relays to workers")
RELAY_REATTACHED: Final = Counter(
    "arena_relay_reattached_total", "Relayed matches re-attached to a new worker after theirs was lost"
)
MATCHES_REQUESTED: Final = Counter("arena_matches_requested_total", "Matches queued through this gateway")


def serve(port: int, address: str = "0.0.0.0") -> None:
    """Serve ``/metrics`` on ``port`` (0: not at all); OSError naming the port when it is taken."""
    if port:
        try:
            start_http_server(port, addr=address)
        except OSError as e:
            raise OSError(e.errno, f"cannot serve /metrics on {address}:{port}: {e.strerror or e}") from e
