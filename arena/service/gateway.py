"""The arena's front door: ``ArenaService`` over gRPC (bot sessions, registry, match requests,
listings, live following, transcripts), with health checking and reflection.

A bot keeps one session open here (``OpenSession``, as lichess's bot event stream): the gateway
tells it of every match it is seated in and which referee worker runs it, reading the assignments
the workers publish to the bot's event stream in Redis, so it does not matter which worker, on which
machine, took the match, or that a match moved to another worker after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import grpc
import redis
import structlog

from arena import keys, metrics
from arena.redis_client import connect, connect_async
from arena.service.matches import MatchRecord, MatchRequestError, MatchStore, public_lines
from arena.service.queue import DuplicateMatchError, MatchQueue
from arena.service.registry import BotRecord, Registry, RegistryError, UnknownBotError
from referee import transcript
from referee.wire import arena_pb2, arena_pb2_grpc
from referee.wire.contract import (
    abort,
    bearer,
    from_proto_enum,
    new_server,
    result_to_proto,
    serve,
    service_name,
    to_proto_enum,
)
from referee.wire.values import MatchStatus, bot_text_error

log = structlog.get_logger("arena.service.gateway")

HEARTBEAT_S: Final = 10.0
BLOCK_MS: Final = 5_000


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, split on newlines only: ``str.splitlines`` would also split on
    U+2028 or U+0085, which a bot's refused action may carry unescaped."""
    return text.removesuffix("\n").split("\n") if text else []


def bot_proto(b: BotRecord, paused: str = "") -> arena_pb2.BotRecord:
    return arena_pb2.BotRecord(
        ladder_paused=paused,
        name=b.name,
        owner=b.owner,
        game_ids=list(b.game_ids),
        enabled=b.enabled,
        disabled_reason=b.disabled_reason,
        version=b.version,
        online=b.online,
        matches_running=b.matches_running,
        created_at=b.created_at,
        last_seen=b.last_seen,
        max_concurrent=b.max_concurrent,
    )


def assigned(match_id: str, game_id: str, seat: int, address: str) -> arena_pb2.SessionEvent:
    """The session event that sends a bot to the worker running its match."""
    return arena_pb2.SessionEvent(
        assigned=arena_pb2.MatchAssigned(match_id=match_id, game_id=game_id, seat=seat, referee_address=address)
    )


def match_proto(m: MatchRecord) -> arena_pb2.MatchRecord:
    record = arena_pb2.MatchRecord(
        match_id=m.match_id,
        game_id=m.game_id,
        state=to_proto_enum(m.status) if m.status else arena_pb2.MATCH_STATE_UNSPECIFIED,  # type: ignore[arg-type]
        bot_names=m.bot_names,
        rated=m.rated,
        priority=m.priority,
        enqueued_at=m.enqueued_at,
        started_at=m.started_at,
        finished_at=m.finished_at,
        worker=m.worker,
        referee_address=m.referee_address,
        seed_sha256=m.seed_sha256,
    )
    if m.outcome is not None:
        record.result.CopyFrom(result_to_proto(m.outcome))
    return record


class ArenaServicer(arena_pb2_grpc.ArenaServiceServicer):
    def __init__(self, redis_url: str) -> None:
        self.r = connect(redis_url)
        self.ar = connect_async(redis_url, block_ms=BLOCK_MS, timeout_s=10)
        self.registry = Registry(self.r)
        self.queue = MatchQueue(self.r)
        self.store = MatchStore(self.r, self.queue, self.registry)
        self.sessions: dict[str, int] = {}  # bot name -> sessions open here

    async def close(self) -> None:
        await self.ar.aclose()
        self.r.close()

    async def _call(self, context: grpc.aio.ServicerContext, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A Redis-backed call; Redis being away is UNAVAILABLE (retry later), not a crash."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            metrics.REDIS_ERRORS.labels("gateway").inc()
            await abort(context, grpc.StatusCode.UNAVAILABLE, f"the arena's database is unavailable: {e}")

    async def _match(self, context: grpc.aio.ServicerContext, match_id: str) -> MatchRecord:
        """The match's record, or NOT_FOUND."""
        m: MatchRecord | None = await self._call(context, self.store.describe, match_id)
        if m is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {match_id!r}")
        return m

    async def _admin(self, context: grpc.aio.ServicerContext) -> None:
        if not await self._call(context, self.registry.is_admin, bearer(context)):
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "this call needs the arena's admin token")

    # ------------------------------------------------------------------ sessions

    async def OpenSession(  # noqa: N802 - gRPC method name
        self, request: arena_pb2.OpenSessionRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[arena_pb2.SessionEvent]:
        token = bearer(context)
        if token is None:
            await abort(
                context, grpc.StatusCode.UNAUTHENTICATED, "missing bot token: send 'authorization: Bearer <token>'"
            )
        problem = bot_text_error(bot_version=request.bot_version, sdk_version=request.sdk_version)
        if problem is not None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, problem)
        bot = await self._call(context, self.registry.authenticate, token)
        if bot is None:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "unknown bot token")
        if not bot.enabled:
            await abort(
                context, grpc.StatusCode.PERMISSION_DENIED, f"bot {bot.name} is disabled: {bot.disabled_reason or '-'}"
            )
        name = bot.name
        session_id = secrets.token_hex(6)
        slog = log.bind(bot=name, session_id=session_id)
        info = {"session_id": session_id, "version": request.bot_version, "sdk_version": request.sdk_version,
                "since": time.time()}  # fmt: skip
        self.sessions[name] = self.sessions.get(name, 0) + 1
        metrics.BOT_SESSIONS.inc()
        slog.info("bot session opened", version=request.bot_version)
        try:
            await self._call(context, self.registry.seen, name, request.bot_version, info)
            yield arena_pb2.SessionEvent(welcome=arena_pb2.SessionWelcome(bot_name=name, session_id=session_id))
            stream = keys.bot_events(name)
            newest: Any = await self.ar.xrevrange(stream, count=1)
            last: Any = newest[0][0] if newest else b"0-0"
            for event in await self._call(context, self._current_assignments, name):
                yield event
            beat = time.monotonic()
            while True:
                reply: Any = await self.ar.xread({stream: last}, count=100, block=int(HEARTBEAT_S * 1000 / 2))
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        last = entry_id
                        f = {keys.text(k): keys.text(v) for k, v in fields.items()}
                        if f.get("kind") == "assigned":
                            yield assigned(f["match_id"], f["game_id"], int(f["seat"]), f["address"])
                if time.monotonic() - beat >= HEARTBEAT_S:
                    beat = time.monotonic()
                    current = await self._call(context, self.registry.find, name)
                    if current is None or current.token_sha256 != bot.token_sha256:
                        await abort(context, grpc.StatusCode.UNAUTHENTICATED, "the bot's token was rotated")
                    if not current.enabled:
                        await abort(context, grpc.StatusCode.PERMISSION_DENIED, f"bot {name} was disabled")
                    await self._call(context, self.registry.seen, name, request.bot_version, info)
                    yield arena_pb2.SessionEvent(heartbeat=arena_pb2.Heartbeat(server_time=time.time()))
        finally:
            self.sessions[name] -= 1
            metrics.BOT_SESSIONS.dec()
            if not self.sessions[name]:
                del self.sessions[name]
                with contextlib.suppress(redis.RedisError):  # else the presence key runs out by itself
                    await asyncio.to_thread(self.registry.gone, name)
            slog.info("bot session closed")

    def _current_assignments(self, name: str) -> list[arena_pb2.SessionEvent]:
        """Where the bot's running matches are now (for a session that just opened)."""
        out = []
        for raw in sorted(self.r.smembers(keys.bot_running(name))):
            match_id = keys.text(raw)
            m = self.store.describe(match_id)
            if m is None or m.status is not MatchStatus.RUNNING or not m.referee_address:
                continue
            for seat, bot_name in enumerate(m.bot_names):
                if bot_name == name:
                    out.append(assigned(match_id, m.game_id, seat, m.referee_address))
        return out

    # ------------------------------------------------------------------ registry

    async def RegisterBot(  # noqa: N802
        self, request: arena_pb2.RegisterBotRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RegisterBotResponse:
        await self._admin(context)
        try:
            bot, token = await self._call(
                context, self.registry.register, request.name, request.owner, list(request.game_ids),
                request.max_concurrent or 4,
            )  # fmt: skip
        except RegistryError as e:
            code = grpc.StatusCode.ALREADY_EXISTS if "exists" in str(e) else grpc.StatusCode.INVALID_ARGUMENT
            await abort(context, code, str(e))
        log.info("bot registered", bot=bot.name, owner=bot.owner, games=list(bot.game_ids))
        return arena_pb2.RegisterBotResponse(bot=bot_proto(bot), token=token)

    async def RotateToken(  # noqa: N802
        self, request: arena_pb2.RotateTokenRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RotateTokenResponse:
        caller = await self._call(context, self.registry.authenticate, bearer(context))
        if (caller is None or caller.name != request.name) and not await self._call(
            context, self.registry.is_admin, bearer(context)
        ):
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "needs the admin token or the bot's own token")
        try:
            token = await self._call(context, self.registry.rotate_token, request.name)
        except UnknownBotError as e:
            await abort(context, grpc.StatusCode.NOT_FOUND, str(e))
        log.info("bot token rotated", bot=request.name)
        return arena_pb2.RotateTokenResponse(token=token)

    async def SetBotEnabled(  # noqa: N802
        self, request: arena_pb2.SetBotEnabledRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.SetBotEnabledResponse:
        await self._admin(context)
        try:
            bot = await self._call(context, self.registry.set_enabled, request.name, request.enabled, request.reason)
        except UnknownBotError as e:
            await abort(context, grpc.StatusCode.NOT_FOUND, str(e))
        log.info("bot enabled" if request.enabled else "bot disabled", bot=request.name, reason=request.reason)
        return arena_pb2.SetBotEnabledResponse(bot=bot_proto(bot))

    async def ListBots(  # noqa: N802
        self, request: arena_pb2.ListBotsRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.ListBotsResponse:
        bots = await self._call(context, self.registry.list, request.game_id or None)
        pauses = await self._call(context, self._pauses)
        return arena_pb2.ListBotsResponse(bots=[bot_proto(b, pauses.get((b.name, b.version), "")) for b in bots])

    def _pauses(self) -> dict[tuple[str, str], str]:
        """Bot versions the ladder scheduler paused, with the reason their owners see."""
        out = {}
        raw: Any = self.r.hgetall(keys.ladder_pauses())
        for member, record in raw.items():
            name, version = json.loads(member)
            rec = json.loads(record)
            if rec.get("state") != "active":
                out[(name, version)] = rec.get("reason", "")
        return out

    # ------------------------------------------------------------------ matches

    async def RequestMatch(  # noqa: N802
        self, request: arena_pb2.RequestMatchRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RequestMatchResponse:
        await self._admin(context)
        tc = (
            {f.name: int(v) for f, v in request.time_control.ListFields()} if request.HasField("time_control") else None
        )
        try:
            match_id, seed_hash = await self._call(
                context, self.store.request, request.game_id, list(request.bot_names), seed=request.seed,
                rated=request.rated, time_control=tc, match_id=request.match_id, requested_by="admin",
            )  # fmt: skip
        except MatchRequestError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except DuplicateMatchError as e:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        metrics.MATCHES_REQUESTED.inc()
        log.info("match requested", match_id=match_id, game_id=request.game_id, bots=list(request.bot_names))
        return arena_pb2.RequestMatchResponse(match_id=match_id, seed_sha256=seed_hash)

    async def DescribeMatch(  # noqa: N802
        self, request: arena_pb2.DescribeMatchRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.DescribeMatchResponse:
        return arena_pb2.DescribeMatchResponse(match=match_proto(await self._match(context, request.match_id)))

    async def ListMatches(  # noqa: N802
        self, request: arena_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.ListMatchesResponse:
        if not (math.isfinite(request.since) and math.isfinite(request.until)):  # Redis refuses NaN
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "since and until are seconds since the epoch")
        matches = await self._call(
            context, self.store.search, bot=request.bot_name or None, game_id=request.game_id or None,
            since=request.since or None, until=request.until or None, limit=request.limit or 50,
            state=from_proto_enum(MatchStatus, request.state),
        )  # fmt: skip
        return arena_pb2.ListMatchesResponse(matches=[match_proto(m) for m in matches])

    async def FollowMatch(  # noqa: N802
        self, request: arena_pb2.FollowMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[arena_pb2.FollowMatchResponse]:
        await self._match(context, request.match_id)
        stream = keys.events(request.match_id)
        last: Any = b"0-0"
        sent = 0
        stored = await self._call(context, self.store.transcript, request.match_id)
        while True:
            if stored is not None:  # finished: the lines not yet sent come from the stored transcript
                for line in public_lines(jsonl_lines(stored)[sent:], set()):
                    yield arena_pb2.FollowMatchResponse(transcript_line=line)
                return
            reply: Any = await self.ar.xread({stream: last}, count=500, block=BLOCK_MS)
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    last = entry_id
                    sent += 1
                    line = keys.text(fields[b"line"])
                    for public in public_lines([line], set()):
                        yield arena_pb2.FollowMatchResponse(transcript_line=public)
                    if transcript.is_footer(line):
                        return
            if not reply:  # idle: look whether it finished (its event log may have expired since)
                stored = await self._call(context, self.store.transcript, request.match_id)

    async def GetTranscript(  # noqa: N802
        self, request: arena_pb2.GetTranscriptRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.GetTranscriptResponse:
        m = await self._match(context, request.match_id)
        stored = await self._call(context, self.store.transcript, request.match_id)
        if stored is None:
            await abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {request.match_id} is {m.status}: its transcript is stored when it ends"
                " (FollowMatch streams it live)",
            )
        token = bearer(context)
        seats: set[int] | None = set()
        if token and await self._call(context, self.registry.is_admin, token):
            seats = None
        elif token:
            bot = await self._call(context, self.registry.authenticate, token)
            if bot is not None:
                seats = {i for i, name in enumerate(m.bot_names) if name == bot.name}
        lines = public_lines(jsonl_lines(stored), seats)
        return arena_pb2.GetTranscriptResponse(
            match_id=request.match_id, jsonl="\n".join(lines) + "\n", full=seats is None or bool(seats)
        )


async def start_gateway(
    redis_url: str, address: str = "127.0.0.1:0", extra: Any = None
) -> tuple[grpc.aio.Server, int, ArenaServicer]:
    """Serve ArenaService (and the services ``extra(server, redis_url)`` adds and names, e.g. the
    ladder's) with health and reflection."""
    server = new_server()
    servicer = ArenaServicer(redis_url)
    arena_pb2_grpc.add_ArenaServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    names = [service_name(arena_pb2, "ArenaService")]
    if extra is not None:
        names += extra(server, redis_url)
    port = await serve(server, names, address)
    log.info("gateway serving", address=address, port=port)
    return server, port, servicer
