"""Bot sessions on one gateway: one Redis reader and one heartbeat for all of them.

A bot keeps one ``OpenSession`` stream open (as lichess's bot event stream). Workers append every
match assignment to one stream in Redis (``keys.assignments``); each gateway reads it with a single
connection and hands each entry to the sessions of that bot open here. Presence, token checks and
heartbeats are done for all sessions at once every ``HEARTBEAT_S``, in two pipelined round trips. So
a gateway's Redis connections and round trips do not grow with its sessions: ten thousand sessions
cost what one costs, plus memory.
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
READ_BLOCK_MS: Final = 5_000
READ_COUNT: Final = 1_000


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
        self._last: Any = b"$"

    async def start(self) -> None:
        """Start reading assignments from now on (a session gets the ones before from its snapshot)."""
        with contextlib.suppress(redis.RedisError):
            newest: Any = await self.reader.xrevrange(keys.assignments(), count=1)
            self._last = newest[0][0] if newest else b"0-0"
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="sessions-read"),
            asyncio.create_task(self._beat_loop(), name="sessions-beat"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)

    def open(self, bot_name: str, token_sha256: str, version: str, info: dict[str, Any]) -> Session:
        session = Session(bot_name, token_sha256, version, info)
        self.by_bot.setdefault(bot_name, set()).add(session)
        metrics.BOT_SESSIONS.inc()
        return session

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
        return True

    # ------------------------------------------------------------------ loops

    async def _read_loop(self) -> None:
        """One blocking read of the assignments stream for every session of this gateway."""
        delay = 0.1
        while True:
            try:
                reply: Any = await self.reader.xread(
                    {keys.assignments(): self._last}, count=READ_COUNT, block=READ_BLOCK_MS
                )
                delay = 0.1
            except redis.RedisError as e:  # down, or refusing (OOM, READONLY ...): read again later
                metrics.REDIS_ERRORS.labels("sessions-read").inc()
                log.warning("redis unavailable, retrying", op="sessions-read", error=str(e)[:200])
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
                continue
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    self._last = entry_id
                    self._dispatch({keys.text(k): keys.text(v) for k, v in fields.items()})

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
        """End the sessions whose token was rotated away or whose bot was disabled, refresh the presence
        of the others, and send each a heartbeat."""
        sessions = [s for group in self.by_bot.values() for s in group]
        if not sessions:
            return
        valid = await asyncio.to_thread(self.registry.valid_tokens, {s.token_sha256 for s in sessions})
        ended = [s for s in sessions if s.token_sha256 not in valid]
        if ended:
            reasons = await asyncio.to_thread(self._why_ended, ended)
            for session, end in zip(ended, reasons, strict=True):
                session.events.put_nowait(end)
        alive = [s for s in sessions if s.token_sha256 in valid]
        await asyncio.to_thread(self.registry.seen_many, [(s.bot_name, s.version, s.info) for s in alive])
        beat = arena_pb2.SessionEvent(heartbeat=arena_pb2.Heartbeat(server_time=time.time()))
        for session in alive:
            session.events.put_nowait(beat)

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
