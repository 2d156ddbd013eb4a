"""Bot sessions on one gateway: one Redis reader and one heartbeat for all of them.

A bot keeps one ``OpenSession`` stream open (as lichess's bot event stream). Workers append every
match assignment to one stream in Redis (``keys.assignments``); each gateway reads it with a single
connection and hands each entry to the sessions of that bot open here. The same read takes the bots
whose token or enabled flag changed (``keys.bot_changes``): their sessions here are checked at once, and
all sessions after the reader lost its place (Redis away). Presence is written when a bot's first session
opens and its last closes (``arena.service.presence``); every ``HEARTBEAT_S`` the gateway refreshes its
own liveness in one round trip, and every third time sends each session a heartbeat. So a gateway's Redis
connections and round trips follow sessions opening, closing and changing, not how many it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
import redis
import redis.asyncio as aioredis
import structlog

from arena import keys, metrics
from arena.redis_client import TROUBLE
from arena.service.cancel import cancel_and_wait
from arena.service.playproxy import route_of
from arena.service.registry import Registry
from referee.wire import arena_pb2
from referee.wire.values import MatchStatus

log = structlog.get_logger("arena.service.sessions")

HEARTBEAT_S: Final = 10.0
"""How often the gateway says it lives (``Presence.beat``: one round trip; the presence time-to-live is 30 s)."""
SESSION_HEARTBEAT_EVERY: Final = 3
"""A ``Heartbeat`` message goes to every session every this many beats (30 s): well inside a proxy's idle
timeout (nginx's 60 s), while sending one to 10,000 sessions every 10 s was most of an idle gateway's CPU
(9 % of a core against 3 % at 30 s, ``benchmarks/sessions_bench.py``)."""
READ_BLOCK_MS: Final = 5_000
READ_COUNT: Final = 1_000
CHANGE_MEMORY_S: Final = 30.0
"""How long a bot change read from the stream is remembered, for a session that was opening meanwhile
(authenticated before the change, added to the hub after its entry was read)."""


def assigned(match_id: str, game_id: str, seat: int, address: str = "", route: str = "") -> arena_pb2.SessionEvent:
    """The session event that seats a bot in a match. ``address`` empty (the rule): the bot plays through
    the gateway it holds its session with (``BotService.Play`` there); a gateway that advertises its
    workers (for bots inside the arena's network) names the worker instead, and one behind a Play proxy
    names the proxy and the ``route`` to the worker (``arena.service.playproxy``)."""
    return arena_pb2.SessionEvent(
        assigned=arena_pb2.MatchAssigned(
            match_id=match_id, game_id=game_id, seat=seat, referee_address=address, route=route
        )
    )


@dataclass(frozen=True)
class PlayPath:
    """Where a gateway's assignments send bots to play: through the gateway itself (the default),
    straight to the worker (``direct``, bots inside the arena's network) or through the Play proxy at
    ``proxy`` with the worker's route."""

    direct: bool = False
    proxy: str = ""

    def __post_init__(self) -> None:
        if self.direct and self.proxy:
            raise ValueError("assignments name either the workers (direct) or the Play proxy, not both")

    def event(self, match_id: str, game_id: str, seat: int, worker: str) -> arena_pb2.SessionEvent:
        if self.proxy:
            return assigned(match_id, game_id, seat, self.proxy, route_of(worker))
        return assigned(match_id, game_id, seat, worker if self.direct else "")


@dataclass(frozen=True)
class SessionEnd:
    """Why the hub ends a session: the status the stream ends with."""

    code: grpc.StatusCode
    details: str


@dataclass(eq=False)
class Session:
    bot_name: str
    token_sha256: str
    version: str
    info: dict[str, Any]
    events: asyncio.Queue[arena_pb2.SessionEvent | SessionEnd] = field(default_factory=asyncio.Queue)


class SessionHub:
    """The sessions open on this gateway. ``await start()``, then ``open``/``close`` sessions."""

    def __init__(
        self, registry: Registry, reader: aioredis.Redis, *, heartbeat_s: float = HEARTBEAT_S,
        path: PlayPath = PlayPath(),
    ) -> None:  # fmt: skip
        self.registry = registry
        self.path = path  # where assignments send the bots to play
        self.reader = reader
        self.heartbeat_s = heartbeat_s
        self.by_bot: dict[str, set[Session]] = {}
        # told (match id, worker address) of every assignment read: a worker running the match now
        self.watchers: list[Callable[[str, str], None]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._checks: set[asyncio.Task[None]] = set()
        self._last: Any = b"$"
        self._last_change: Any = b"$"
        self._changed: dict[str, float] = {}  # bot name -> when its change was read (monotonic)
        self._recheck = False  # changes may have been missed: check every session
        self._beats = 0
        self.present: set[str] = set()  # the bots whose presence this gateway wrote (``seen``)

    async def start(self) -> None:
        """Start reading assignments from now on (a session gets the ones before from its snapshot)."""
        with contextlib.suppress(redis.RedisError):
            newest: Any = await self.reader.xrevrange(keys.assignments(), count=1)
            self._last = newest[0][0] if newest else b"0-0"
            newest = await self.reader.xrevrange(keys.bot_changes(), count=1)
            self._last_change = newest[0][0] if newest else b"0-0"
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="sessions-read"),
            asyncio.create_task(self._beat_loop(), name="sessions-beat"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait([*self._tasks, *self._checks])

    def open(self, bot_name: str, token_sha256: str, version: str, info: dict[str, Any]) -> Session:
        session = Session(bot_name, token_sha256, version, info)
        self.by_bot.setdefault(bot_name, set()).add(session)
        metrics.BOT_SESSIONS.inc()
        changed = self._changed.get(bot_name)
        if changed is not None and time.monotonic() - changed < CHANGE_MEMORY_S:
            self._spawn_check({bot_name})  # its token may have changed after it was authenticated
        return session

    def written(self, session: Session) -> None:
        """The session's presence is written (``Registry.seen``): the heartbeat keeps it and, should
        Redis lose it, writes it again."""
        if session.bot_name in self.by_bot:
            self.present.add(session.bot_name)

    def close(self, session: Session) -> bool:
        """Forget the session; True when it was the bot's last one here."""
        sessions = self.by_bot.get(session.bot_name)
        if sessions is None or session not in sessions:
            return False
        sessions.discard(session)
        metrics.BOT_SESSIONS.dec()
        if sessions:
            return False
        del self.by_bot[session.bot_name]
        self.present.discard(session.bot_name)
        return True

    # ------------------------------------------------------------------ loops

    async def _read_loop(self) -> None:
        """One blocking read of the assignments stream for every session of this gateway."""
        delay = 0.1
        while True:
            try:
                reply: Any = await self.reader.xread(
                    {keys.assignments(): self._last, keys.bot_changes(): self._last_change},
                    count=READ_COUNT, block=READ_BLOCK_MS,
                )  # fmt: skip
                delay = 0.1
            except redis.RedisError as e:  # down, or refusing (OOM, READONLY ...): read again later
                metrics.REDIS_ERRORS.labels("sessions-read").inc()
                log.warning("redis unavailable, retrying", op="sessions-read", error=str(e)[:200])
                self._recheck = True  # a change may come and go (a failover) while we cannot read
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
                continue
            if self._recheck:
                self._recheck = False
                self._spawn_check(None)
            changed: set[str] = set()
            for stream, entries in reply or []:
                if keys.text(stream) == keys.bot_changes():
                    for entry_id, fields in entries:
                        self._last_change = entry_id
                        changed.add(keys.text(fields.get(b"bot", b"")))
                    continue
                for entry_id, fields in entries:
                    self._last = entry_id
                    self._dispatch({keys.text(k): keys.text(v) for k, v in fields.items()})
            now = time.monotonic()
            for name in changed:
                self._changed[name] = now
            if changed & self.by_bot.keys():
                self._spawn_check(changed & self.by_bot.keys())

    def _dispatch(self, f: dict[str, str]) -> None:
        for watcher in self.watchers:
            watcher(f.get("match_id", ""), f.get("address", ""))
        sessions = self.by_bot.get(f.get("bot", ""))
        if not sessions:
            return
        try:
            event = self.path.event(f["match_id"], f["game_id"], int(f["seat"]), f.get("address", ""))
        except (KeyError, ValueError):
            return
        for session in sessions:
            session.events.put_nowait(event)

    async def _beat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self.beat()
            except TROUBLE as e:
                metrics.REDIS_ERRORS.labels("sessions-beat").inc()
                log.warning("redis unavailable, sessions go on", op="sessions-beat", error=str(e)[:200])

    async def beat(self) -> None:
        """Say this gateway lives (its bots stay online), write its presence again if Redis lost it, clear
        dead gateways' presence, and every ``SESSION_HEARTBEAT_EVERY`` beats send each session a heartbeat."""
        self._beats += 1
        if self._beats % SESSION_HEARTBEAT_EVERY == 1:
            beat = arena_pb2.SessionEvent(heartbeat=arena_pb2.Heartbeat(server_time=time.time()))
            for group in self.by_bot.values():
                for session in group:
                    session.events.put_nowait(beat)
        cutoff = time.monotonic() - CHANGE_MEMORY_S
        self._changed = {n: t for n, t in self._changed.items() if t > cutoff}
        held = await asyncio.to_thread(self.registry.presence.beat)
        if held < len(self.present):
            log.warning("presence of this gateway's bots missing in redis: written again", held=held,
                        bots=len(self.present))  # fmt: skip
            newest = [(n, s.version, s.info) for n in self.present for s in list(self.by_bot.get(n, ()))[:1]]
            await asyncio.to_thread(self.registry.presence.present_many, newest)
        await asyncio.to_thread(self.registry.presence.sweep)

    def _spawn_check(self, names: set[str] | None) -> None:
        task = asyncio.create_task(self.check(names), name="sessions-check")
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def check(self, names: set[str] | None = None) -> None:
        """End the sessions (of these bots; None: all) whose token was rotated away or whose bot was
        disabled or retired. Redis away: every session is checked again once it is back."""
        sessions = [s for n, group in list(self.by_bot.items()) if names is None or n in names for s in group]
        if not sessions:
            return
        try:
            valid = await asyncio.to_thread(self.registry.valid_tokens, {s.token_sha256 for s in sessions})
            ended = [s for s in sessions if s.token_sha256 not in valid]
            reasons = await asyncio.to_thread(self._why_ended, ended) if ended else []
        except TROUBLE as e:
            metrics.REDIS_ERRORS.labels("sessions-check").inc()
            log.warning("redis unavailable, sessions checked later", op="sessions-check", error=str(e)[:200])
            self._recheck = True
            return
        for session, end in zip(ended, reasons, strict=True):
            session.events.put_nowait(end)

    def _why_ended(self, sessions: list[Session]) -> list[SessionEnd]:
        out = []
        for s in sessions:
            bot = self.registry.find(s.bot_name)
            if bot is not None and bot.token_sha256 == s.token_sha256 and not bot.enabled:
                out.append(SessionEnd(grpc.StatusCode.PERMISSION_DENIED, f"bot {s.bot_name} was disabled"))
            else:
                out.append(SessionEnd(grpc.StatusCode.UNAUTHENTICATED, "the bot's token was rotated"))
        return out


def snapshot(
    registry: Registry, describe: Callable[[str], Any], bot_name: str, path: PlayPath = PlayPath()
) -> list[arena_pb2.SessionEvent]:
    """The running matches a bot is seated in, for a session that just opened."""
    out = []
    for raw in sorted(registry.r.smembers(keys.bot_running(bot_name))):
        match_id = keys.text(raw)
        m = describe(match_id)
        if m is None or m.status is not MatchStatus.RUNNING or not m.referee_address:
            continue
        for seat, name in enumerate(m.bot_names):
            if name == bot_name:
                out.append(path.event(match_id, m.game_id, seat, m.referee_address))
    return out
