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
from arena.ladder.elo import BotKey, Row
from arena.ladder.scheduler import BotInfo, Pairing, Scheduler, SchedulerConfig
from arena.ladder.store import Ladder, member
from arena.metrics import LADDER_LAG, LADDER_UNAPPLIED, scrape_failed
from arena.redis_client import TROUBLE, connect, trouble
from arena.service.matches import MatchRequestError, MatchStore
from arena.service.presence import BATCH, info
from arena.service.queue import DuplicateMatchError, MatchQueue, Priority
from arena.service.registry import DEFAULT_MAX_CONCURRENT, Registry, enabled_flag

log = structlog.get_logger("arena.ladder.store")  # the name its log lines have always had

FIT_EVERY_S: Final = 60.0
"""The whole-history fit reads every stored result of a game, so it is made anew once a minute at most, not
after every result."""


class RegistryBots:
    """The scheduler's view of the registry: one ``BotInfo`` per online bot, at the version it last reported.

    Kept incrementally, so that a pass costs what the online bots and their changes cost, not the
    registered ones: the online bots' names come from their index (``keys.online``, one command), their
    gateways' liveness from one ``EXISTS`` per gateway, and a bot's record, presence, running matches
    and ladder rows are read (in pipelined batches) only when it comes online, when ``changed`` names it
    (a result, a token or enabled change) and, ``REFRESH`` bots a pass in turn, to catch what nothing
    announces (added games, matches started elsewhere, a reconnection at another version)."""

    REFRESH: Final = 200

    def __init__(self, registry: Registry, ladder: Ladder, games: Sequence[str]) -> None:
        self.registry = registry
        self.ladder = ladder
        self.games = tuple(games)
        self._known: dict[str, tuple[BotInfo, frozenset[str]]] = {}  # name -> its view, its gateways
        # game id -> bot name -> its ladder rows: its version's and, for a version yet unplayed, the latest one's
        self._rows: dict[str, dict[str, dict[BotKey, Row]]] = {g: {} for g in self.games}
        self._stale: set[str] = set()
        self._turn = 0

    def rows(self, game_id: str) -> dict[BotKey, Row]:
        """The ladder rows of the bots ``bots`` returned (the scheduler's ``Ratings``), read with them: a
        tick reads none of the board (the whole board a pairing took 20 ms at 1,000 rated bots). A bot's
        version yet unplayed has no row; its name's latest version's row is there, which it starts from."""
        return {k: r for per in self._rows.get(game_id, {}).values() for k, r in per.items()}

    def changed(self, names: Iterable[str]) -> None:
        """Read these bots again at the next pass."""
        self._stale.update(names)

    def bots(self) -> list[BotInfo]:
        online = {keys.text(n) for n in self.registry.r.smembers(keys.online())}
        for name in self._known.keys() - online:
            del self._known[name]
            for rows in self._rows.values():
                rows.pop(name, None)
        names = sorted(self._known)
        turn = names[self._turn : self._turn + self.REFRESH] if names else []
        self._turn = self._turn + self.REFRESH if self._turn + self.REFRESH < len(names) else 0
        read = (online - self._known.keys()) | (self._stale & online) | set(turn)
        self._stale.clear()
        self._read(sorted(read))
        alive = self.registry.presence.alive(g for _, gids in self._known.values() for g in gids)
        return [info for info, gids in self._known.values() if not gids or gids & alive]

    def _read(self, names: list[str]) -> None:
        """Read these bots' records, presence, running counts and ladder rows, ``BATCH`` at a time."""
        for i in range(0, len(names), BATCH):
            chunk = names[i : i + BATCH]
            entries, legacy = self.registry.presence.entries(chunk)
            pipe = self.registry.r.pipeline(transaction=False)
            for name in chunk:
                pipe.hmget(keys.bot(name), "games", "enabled", "version", "max_concurrent")
                pipe.scard(keys.bot_running(name))
            replies = pipe.execute()
            records: list[tuple[str, tuple[str, ...], bool, str, int, int]] = []
            for j, name in enumerate(chunk):
                (games, enabled, version, most), running = replies[2 * j : 2 * j + 2]
                if games is None or (name not in entries and name not in legacy):
                    self._known.pop(name, None)  # no such bot, or offline since
                    continue
                game_ids = tuple(g for g in json.loads(games) if g in self.games)
                most_n = int(most) if most is not None else DEFAULT_MAX_CONCURRENT
                records.append((name, game_ids, enabled_flag(keys.text(enabled) if enabled else None),
                                keys.text(version or b""), most_n, int(running)))  # fmt: skip
            pipe = self.registry.r.pipeline(transaction=False)
            for name, game_ids, _, version, _, _ in records:
                for game_id in game_ids:
                    pipe.hget(keys.ladder_rows(game_id), member((name, version)))
                    pipe.hget(keys.ladder_latest(game_id), name)
            replies_iter = iter(pipe.execute())
            found: dict[tuple[str, str], dict[BotKey, Row]] = {}  # (game, name) -> rows read
            earlier: list[tuple[str, str, str]] = []  # (game, name, latest version) for versions yet unplayed
            for name, game_ids, _, version, _, _ in records:
                for game_id in game_ids:
                    raw, latest = next(replies_iter), next(replies_iter)
                    got = found[(game_id, name)] = {}
                    if raw:
                        row = Row.from_dict(json.loads(raw))
                        got[row.key] = row
                    elif latest is not None and keys.text(latest) != version:
                        earlier.append((game_id, name, keys.text(latest)))
            if earlier:
                pipe = self.registry.r.pipeline(transaction=False)
                for game_id, name, latest_version in earlier:
                    pipe.hget(keys.ladder_rows(game_id), member((name, latest_version)))
                for (game_id, name, _), raw in zip(earlier, pipe.execute(), strict=True):
                    if raw:
                        row = Row.from_dict(json.loads(raw))
                        found[(game_id, name)][row.key] = row
            for name, game_ids, enabled, version, most_n, running in records:
                played, last = 0, 0.0
                for game_id in game_ids:
                    got = found[(game_id, name)]
                    self._rows[game_id][name] = got
                    mine = got.get((name, version))
                    if mine is not None:
                        played += mine.games
                        last = max(last, mine.last_played)
                sessions = entries.get(name, {})
                ladder = not sessions or any(info(v).get(keys.PRESENCE_LADDER) is not False for v in sessions.values())
                bot = BotInfo(name=name, version=version, games=game_ids, online=True, enabled=enabled,
                              running=running, max_concurrent=most_n, last_played=last, games_played=played,
                              ladder=ladder)  # fmt: skip
                self._known[name] = (bot, frozenset(sessions))


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
        self.bots = RegistryBots(self.registry, self.ladder, self.config.games)
        self.scheduler = Scheduler(
            self.bots,
            self.bots.rows,
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
        last_change: Any = "$"
        while not self._stop.is_set():
            try:
                reply: Any = self.r.xread({keys.results(): last, keys.bot_changes(): last_change}, count=500,
                                         block=int(self.tick_s * 1000))  # fmt: skip
                for stream, entries in reply or []:
                    for entry_id, fields in entries:
                        if keys.text(stream) == keys.bot_changes():
                            last_change = entry_id
                            self.bots.changed([keys.text(fields.get(b"bot", b""))])
                            continue
                        last = entry_id
                        m = self.store.describe(fields[b"match_id"].decode())
                        if m is not None and m.result is not None:
                            self.scheduler.on_result(m.result)
                            self.bots.changed(str(seat.get("bot_name", "")) for seat in m.result.get("seats", []))
                if last == "$":
                    newest: Any = self.r.xrevrange(keys.results(), count=1)
                    last = newest[0][0] if newest else "0-0"
                if last_change == "$":
                    newest = self.r.xrevrange(keys.bot_changes(), count=1)
                    last_change = newest[0][0] if newest else "0-0"
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
