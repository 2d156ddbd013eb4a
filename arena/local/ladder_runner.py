"""``arena ladder run``: the ladder process. It applies every stored result to the Elo ladders (the
``ladder`` consumer group on ``arena:results``: exactly once, in stream order, restart-safe) and keeps
the queue fed with rated matches between online, enabled bots (``arena.ladder.scheduler``), after the
events' share of it (``arena.events.scheduler``), and it serves
``LadderService`` with gRPC health on ``--listen``.

Any number of ladder processes may apply results (the ladder is atomic per match); run one scheduler
per arena (``--no-schedule`` on the others), since each scheduler keeps its own in-memory view of the
matches it queued.

It lives here, not in ``arena.ladder``, because it wires the ladder to the match service (the registry, the
queue): the ladder itself imports nothing of the service, and this layer assembles processes from both.

``LadderLagCollector`` reads how far the ``ladder`` group is behind, for the ``/metrics`` of the process
that runs the ladder (``arena.metrics`` names the families).
"""

from __future__ import annotations

import json
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Final

import redis
import structlog
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from arena import keys, metrics
from arena.events.scheduler import EventScheduler
from arena.ladder.scheduler import BotInfo, Pairing, Scheduler, SchedulerConfig
from arena.ladder.store import Ladder
from arena.metrics import LADDER_LAG, LADDER_UNAPPLIED, scrape_failed
from arena.redis_client import TROUBLE, connect, trouble
from arena.service.matches import MatchRequestError, MatchStore
from arena.service.queue import DuplicateMatchError, MatchQueue, Priority
from arena.service.registry import Registry

log = structlog.get_logger("arena.ladder.store")  # the name its log lines have always had

FIT_EVERY_S: Final = 60.0
"""The whole-history fit reads every stored result of a game, so it is made anew once a minute at most, not
after every result."""


class RegistryBots:
    """The scheduler's view of the registry: one ``BotInfo`` per bot, at the version it last reported."""

    def __init__(self, registry: Registry, ladder: Ladder, games: Sequence[str]) -> None:
        self.registry = registry
        self.ladder = ladder
        self.games = tuple(games)

    def bots(self) -> list[BotInfo]:
        records = self.registry.list()
        off = self._off_ladder([b.name for b in records if b.online])
        out = []
        for b in records:
            played, last = 0, 0.0
            for game_id in b.game_ids:
                row = self.ladder.row(game_id, b.name, b.version)
                if row is not None:
                    played += row.games
                    last = max(last, row.last_played)
            out.append(
                BotInfo(
                    name=b.name,
                    version=b.version,
                    games=tuple(g for g in b.game_ids if g in self.games),
                    online=b.online,
                    enabled=b.enabled,
                    running=b.matches_running,
                    max_concurrent=b.max_concurrent,
                    last_played=last,
                    games_played=played,
                    ladder=b.name not in off,
                )
            )
        return out

    def _off_ladder(self, names: list[str]) -> set[str]:
        """Of these online bots, those whose session asked to stay off the ladder (its presence value says
        so, ``keys.PRESENCE_LADDER``); one round trip."""
        pipe = self.registry.r.pipeline(transaction=False)
        for name in names:
            pipe.get(keys.presence(name))
        off = set()
        for name, raw in zip(names, pipe.execute(), strict=True):
            try:
                if raw is not None and json.loads(raw).get(keys.PRESENCE_LADDER) is False:
                    off.add(name)
            except (ValueError, AttributeError):
                pass  # not JSON of an object: a session of some other version; it stays on the ladder
        return off


class LadderRunner:
    def __init__(
        self,
        redis_url: str,
        config: SchedulerConfig | None = None,
        *,
        schedule: bool = True,
        max_matches: int | None = None,
        consumer: str | None = None,
        tick_s: float = 0.5,
        seed: str | None = None,
        fit_every_s: float = FIT_EVERY_S,
    ) -> None:
        """``seed``: the scheduler's choices and every match's seed (``SEED:n`` for the n-th match it
        queues) derive from it; without it, both are random. ``fit_every_s``: how often at most the
        whole-history fit of each game is made anew (``Ladder.refit``), when results were applied since."""
        self.redis_url = redis_url
        self.r = connect(redis_url, timeout_s=10)
        self.ladder = Ladder(self.r)
        self.registry = Registry(self.r)
        self.queue = MatchQueue(self.r)
        self.store = MatchStore(self.r, self.queue, self.registry)
        self.config = config or SchedulerConfig()
        self.schedule = schedule
        self.max_matches = max_matches
        self.scheduled = 0
        self.tick_s = tick_s
        self.fit_every_s = fit_every_s
        self._unfitted = 1  # results applied since the last fit (1: fit once at start, after a restart too)
        self._next_fit = 0.0
        self.consumer = consumer or f"ladder-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.seed = seed
        self.scheduler = Scheduler(
            RegistryBots(self.registry, self.ladder, self.config.games),
            self.ladder.rows,
            self._enqueue,
            self.config,
            rng=random.Random(seed),
            store=self.r,
        )
        self.events = EventScheduler(self.r, clock=time.time)
        self._stop = threading.Event()
        self._online: set[str] = set()

    def _enqueue(self, p: Pairing) -> None:
        try:
            self.store.request(
                p.game_id, p.bot_names, rated=p.rated, match_id=p.match_id, priority=Priority.LADDER,
                requested_by="ladder", seed=f"{self.seed}:{self.scheduled + 1}" if self.seed is not None else "",
            )  # fmt: skip
        except (MatchRequestError, DuplicateMatchError) as e:
            log.warning("ladder match not queued", match_id=p.match_id, error=str(e))
            raise
        self.scheduled += 1
        metrics.LADDER_SCHEDULED.inc()

    # ------------------------------------------------------------------ loops

    def consume(self) -> None:
        """Apply results until stopped (a thread: the ladder's Redis calls block). In bursts, so that
        ``arena_ladder_results_applied_total`` counts as results are applied (a blocking ``consume``
        returns its count only when stopped); an idle ladder looks again every ``tick_s``."""
        while not self._stop.is_set():
            try:
                applied = self.ladder.consume(self.consumer, burst=True, stop=self._stop.is_set)
                metrics.LADDER_APPLIED.inc(applied)
                self._unfitted += applied
                if self._unfitted and time.monotonic() >= self._next_fit:
                    self._refit()
                if not applied:
                    self._stop.wait(self.tick_s)
            except TROUBLE as e:
                metrics.REDIS_ERRORS.labels("ladder-consume").inc()
                log.warning("redis unavailable, retrying", error=trouble(e))
                self._stop.wait(1.0)

    def _refit(self) -> None:
        """Make each game's whole-history fit anew (``Ladder.refit``: the whole stream of the game is read, so
        not after every result)."""
        for game_id in self.ladder.games():
            fitted = self.ladder.refit(game_id)
            log.info("ladder fit made", game_id=game_id, results=fitted)
        self._unfitted = 0
        self._next_fit = time.monotonic() + self.fit_every_s

    def schedule_loop(self) -> None:
        """Feed the queue and tell the scheduler of results and reconnections (a thread)."""
        last: Any = "$"
        while not self._stop.is_set():
            try:
                reply: Any = self.r.xread({keys.results(): last}, count=500, block=int(self.tick_s * 1000))
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        last = entry_id
                        m = self.store.describe(fields[b"match_id"].decode())
                        if m is not None and m.result is not None:
                            self.scheduler.on_result(m.result)
                if last == "$":
                    newest: Any = self.r.xrevrange(keys.results(), count=1)
                    last = newest[0][0] if newest else "0-0"
                bots = self.scheduler.source.bots()
                online = {b.name for b in bots if b.online and b.ladder}  # a --no-ladder session: no validation
                for b in bots:
                    if b.name in online and b.name not in self._online:
                        self.scheduler.on_reconnect(b)
                self._online = online
                metrics.LADDER_PAUSED.set(sum(1 for b in bots if self.scheduler.paused(b.key)))
                depth = self.queue.depth()[Priority.LADDER.value]
                depth += self.events.tick(self.config.queue_depth)  # events first, up to their share
                left = None if self.max_matches is None else self.max_matches - self.scheduled
                if left is None or left > 0:
                    self.scheduler.tick(depth, bots, limit=left)
            except TROUBLE as e:
                metrics.REDIS_ERRORS.labels("ladder-schedule").inc()
                log.warning("redis unavailable, retrying", error=trouble(e))
                self._stop.wait(1.0)
            except (MatchRequestError, DuplicateMatchError):
                self._stop.wait(self.tick_s)

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.consume, name="ladder-consume", daemon=True)]
        if self.schedule:
            threads.append(threading.Thread(target=self.schedule_loop, name="ladder-schedule", daemon=True))
        for t in threads:
            t.start()
        return threads

    def stop(self, threads: Sequence[threading.Thread] = ()) -> None:
        self._stop.set()
        for t in threads:
            t.join(timeout=10)


def caught_up(client: redis.Redis) -> bool:
    """True when the ladder has applied every stored result (its consumer group is at the stream's end)."""
    newest: Any = client.xrevrange(keys.results(), count=1)
    if not newest:
        return True
    try:
        groups: Any = client.xinfo_groups(keys.results())
    except redis.ResponseError:
        return False
    for g in groups:
        if keys.text(g["name"]) == keys.LADDER_GROUP:
            return keys.text(g["last-delivered-id"]) == keys.text(newest[0][0]) and int(g["pending"]) == 0
    return False


UNAPPLIED_CAP: Final = 1000  # Redis < 7 has no group lag: undelivered results are counted up to this many


class LadderLagCollector(Collector):
    """``arena_ladder_lag_seconds`` (age of the oldest result the ladder has not applied; 0 when caught
    up) and ``arena_ladder_unapplied_results``, from the ``ladder`` group on ``arena:results`` (two
    round trips per scrape; result ids are their append times)."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(LADDER_LAG, ""), GaugeMetricFamily(LADDER_UNAPPLIED, "")]

    def collect(self) -> Iterable[Metric]:
        try:
            lag_s, unapplied = self._read()
        except redis.RedisError as e:
            scrape_failed(e)
            return []
        return [
            GaugeMetricFamily(LADDER_LAG, "Age of the oldest result not yet applied to the ladder", value=lag_s),
            GaugeMetricFamily(
                LADDER_UNAPPLIED, f"Results not yet applied to the ladder (counted up to {UNAPPLIED_CAP} on "
                "Redis < 7)", value=unapplied,
            ),
        ]  # fmt: skip

    def _read(self) -> tuple[float, int]:
        stream = keys.results()
        try:
            groups: Any = self.r.xinfo_groups(stream)
        except redis.ResponseError:  # no results stream yet
            return 0.0, 0
        group = next((g for g in groups if keys.text(g["name"]) == keys.LADDER_GROUP), None)
        last = keys.text(group["last-delivered-id"]) if group else "0-0"
        pending = int(group["pending"]) if group else 0
        oldest: list[str] = []
        if pending:
            summary: Any = self.r.xpending(stream, keys.LADDER_GROUP)
            if summary.get("min"):
                oldest.append(keys.text(summary["min"]))
        lag = group.get("lag") if group else None
        cap = 1 if lag is not None else UNAPPLIED_CAP
        undelivered: Any = self.r.xrange(stream, min=f"({last}", count=cap)
        if undelivered:
            oldest.append(keys.text(undelivered[0][0]))
        waiting = int(lag) if lag is not None else len(undelivered)
        if not oldest:
            return 0.0, pending + waiting
        first_ms = min(int(i.split("-")[0]) for i in oldest)
        return max(0.0, time.time() - first_ms / 1000), pending + waiting
