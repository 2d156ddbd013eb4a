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
import inspect
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
from arena.redis_client import TROUBLE, connect, connect_async, trouble
from arena.service import headroom
from arena.service.archive import ARCHIVE_EVERY_S, ArchiveError, Archiver, TranscriptArchive
from arena.service.auth import ANONYMOUS, Caller, CallerKind, resolve_caller
from arena.service.cancel import cancel_and_wait
from arena.service.matches import MatchRecord, MatchStore, entry_lines, public_lines
from arena.service.owners import DEFAULT_MAX_BOTS, REFERENCE_OWNER, Owner, Owners
from arena.service.queue import MatchQueue
from arena.service.ratelimit import REQUEST, SESSION, AddressGuard, RateLimiter, RateLimits, client_address
from arena.service.refusals import RefusalWatch
from arena.service.registry import BotRecord, Registry
from arena.service.relay import PlayRelay
from arena.service.sessions import READ_BLOCK_MS, PlayPath, SessionEnd, SessionHub, snapshot
from arena.service.statuses import REFUSALS, status_of
from referee import transcript
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2
from referee.wire.contract import (
    abort,
    bearer,
    control_overrides,
    disabled_bot,
    from_proto_enum,
    new_server,
    refuse_bot_token,
    request_id,
    require_bot_token,
    result_to_proto,
    serve,
    service_name,
    to_proto_enum,
)
from referee.wire.tls import ClientTls, ServerTls
from referee.wire.values import MatchStatus, bot_text_error

log = structlog.get_logger("arena.service.gateway")

FOLLOW_POLL_S: Final = 0.2
HOUSEKEEPING_S: Final = 60.0
UNKNOWN_TOKEN: Final = "unknown token (wrong, or rotated away)"
"""A token that is nobody's, on any call of the gateway (``_caller``, ``TokenGate``)."""


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
        retired_at=b.retired_at,
    )


def owner_proto(owner: Owner, bots: int) -> arena_pb2.OwnerRecord:
    return arena_pb2.OwnerRecord(name=owner.name, max_bots=owner.max_bots, bots=bots, created_at=owner.created_at)


def match_proto(m: MatchRecord, internal: bool = False) -> arena_pb2.MatchRecord:
    """The match as a caller sees it; ``internal`` (the admin only): with the worker's id and address,
    which tell a stranger where the arena's workers are."""
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
        worker=m.worker if internal else "",
        referee_address=m.referee_address if internal else "",
        seed_sha256=m.seed_sha256,
    )
    if m.outcome is not None:
        record.result.CopyFrom(result_to_proto(m.outcome))
    return record


class ArenaServicer(arena_pb2_grpc.ArenaServiceServicer):
    def __init__(
        self,
        redis_url: str,
        *,
        limiter: RateLimiter | None = None,
        direct: bool = False,
        play_proxy: str = "",
        limits: RateLimits | None = None,
        archive: TranscriptArchive | None = None,
        retention_s: float | None = None,
    ) -> None:
        self.r = connect(redis_url)
        self.ar = connect_async(redis_url, timeout_s=10, max_connections=16)  # FollowMatch's reads
        self.registry = Registry(self.r)
        self.queue = MatchQueue(self.r)
        self.store = MatchStore(self.r, self.queue, self.registry, archive)
        # transcripts older than retention_s leave Redis for the archive (None: kept in Redis)
        self.archiver = Archiver(self.r, archive, retention_s) if archive and retention_s is not None else None
        self._housekeeping: asyncio.Task[None] | None = None
        self.owners = Owners(self.r)
        # ``limits``: the per-token rate limits (settings); ``limiter``: a ready RateLimiter, which wins
        self.limiter = limiter if limiter is not None else RateLimiter.from_limits(self.r, limits or RateLimits())
        self.relay: PlayRelay | None = None
        self.guard = AddressGuard()  # per client address: unknown tokens, anonymous FollowMatch streams
        self.hub = SessionHub(
            self.registry,
            connect_async(redis_url, block_ms=READ_BLOCK_MS, max_connections=1),
            path=PlayPath(direct=direct, proxy=play_proxy),
        )

    async def start(self) -> None:
        added = await asyncio.to_thread(self.registry.index_names)
        if added:
            log.info("bot names indexed for look-alikes", bots=added)
        await self.hub.start()
        self._housekeeping = asyncio.create_task(self._housekeep(), name="gateway-housekeeping")

    async def _housekeep(self) -> None:
        """Every minute: Redis's memory headroom (a warning when it runs short); with an archive, an archive
        pass every ``ARCHIVE_EVERY_S`` (one gateway at a time: the pass takes a Redis lock), so that a
        finished match's transcript leaves Redis seconds after its retention (by default, after its end).
        Failures are logged and retried at the next round; transcripts stay in Redis until their file is
        durable."""
        said_uncapped = False
        last_minute = float("-inf")
        while True:
            try:
                minute = time.monotonic() - last_minute >= HOUSEKEEPING_S
                if minute:
                    last_minute = time.monotonic()
                    h = await asyncio.to_thread(headroom.check, self.r, uncapped_warned=said_uncapped)
                    said_uncapped = said_uncapped or h.fraction is None
                if self.archiver is not None:
                    await asyncio.to_thread(self.archiver.run_pass, walk=minute)
            except (redis.RedisError, OSError) as e:
                if isinstance(e, redis.RedisError):
                    metrics.REDIS_ERRORS.labels("gateway").inc()
                log.error("housekeeping failed", error_type=type(e).__name__, error=str(e)[:300])
            await asyncio.sleep(ARCHIVE_EVERY_S if self.archiver is not None else HOUSEKEEPING_S)

    async def close(self) -> None:
        await cancel_and_wait([self._housekeeping])
        if self.relay is not None:
            await self.relay.close()
        await self.hub.stop()
        await self.hub.reader.aclose()
        await self.ar.aclose()
        self.r.close()

    async def _call(self, context: grpc.aio.ServicerContext, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A Redis-backed call; Redis being away is UNAVAILABLE (retry later), not a crash; a store's
        refusal ends the call with its status (``arena.service.statuses``) and its message."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except REFUSALS as e:
            if isinstance(e, ArchiveError):  # the operator's to mend: the client is told DATA_LOSS
                log.error("archived transcript unreadable", error=str(e))
            await abort(context, status_of(e), str(e))
        except TROUBLE as e:  # away, or refusing writes: never UNKNOWN
            metrics.REDIS_ERRORS.labels("gateway").inc()
            await abort(context, grpc.StatusCode.UNAVAILABLE, trouble(e))

    @staticmethod
    async def _request_id(context: grpc.aio.ServicerContext) -> str:
        """The call's request id (``referee.wire.contract.REQUEST_ID_KEY``), INVALID_ARGUMENT when malformed."""
        try:
            return request_id(context)
        except ValueError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))

    async def _match(self, context: grpc.aio.ServicerContext, match_id: str) -> MatchRecord:
        """The match's record, or NOT_FOUND (``UnknownMatchError``)."""
        m: MatchRecord = await self._call(context, self.store.get, match_id)
        return m

    async def _caller(self, context: grpc.aio.ServicerContext) -> Caller:
        """Who calls: anonymous (no token), the admin, an owner or a bot. A token that is none of these
        (wrong, or rotated away) is UNAUTHENTICATED on every call, public ones included."""
        token = bearer(context)
        if not token:
            return ANONYMOUS
        address, now = client_address(context.peer()), time.monotonic()
        wait = self.guard.blocked(address, now)
        if wait is not None:  # refused before any look-up: unknown tokens cost Redis nothing past the budget
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"too many calls with unknown tokens from this address; retry in {wait:.0f} s")  # fmt: skip
        caller: Caller | None = await self._call(context, self._resolve, token)
        if caller is None:
            self.guard.unknown(address, now)
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, UNKNOWN_TOKEN)
        return caller

    def _resolve(self, token: str) -> Caller | None:
        """The caller a given token names, or None for nobody (one round trip: ``auth.resolve_caller``)."""
        return resolve_caller(self.r, token)

    async def _require(self, context: grpc.aio.ServicerContext, *allowed: CallerKind) -> Caller:
        """The caller, if its kind is allowed (the admin always is): else UNAUTHENTICATED for nobody,
        PERMISSION_DENIED for a known caller."""
        caller = await self._caller(context)
        if caller.kind is CallerKind.ADMIN or caller.kind in allowed:
            return caller
        names = {CallerKind.OWNER: "an owner's token", CallerKind.BOT: "the bot's token"}
        needed = " or ".join(["the admin token", *(names[k] for k in allowed if k in names)])
        if caller.kind is CallerKind.ANONYMOUS:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, f"this call needs {needed} ('authorization: Bearer')")
        who = {CallerKind.BOT: "a bot's token", CallerKind.OWNER: "an owner's token"}[caller.kind]
        await abort(context, grpc.StatusCode.PERMISSION_DENIED, f"this call needs {needed}, not {who}")
        raise AssertionError  # abort raises

    async def _owned_bot(self, context: grpc.aio.ServicerContext, caller: Caller, name: str) -> BotRecord:
        """The bot ``name`` if the caller may manage it (the admin, its owner): NOT_FOUND to them when
        there is no such bot (``UnknownBotError``), PERMISSION_DENIED to anyone else."""
        if caller.kind in (CallerKind.ADMIN, CallerKind.OWNER):
            bot: BotRecord = await self._call(context, self.registry.get, name)
            if caller.kind is CallerKind.ADMIN or bot.owner == caller.name:
                return bot
        await abort(context, grpc.StatusCode.PERMISSION_DENIED, f"bot {name} is not yours")

    # ------------------------------------------------------------------ sessions

    async def OpenSession(  # noqa: N802 - gRPC method name
        self, request: arena_pb2.OpenSessionRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[arena_pb2.SessionEvent]:
        """A bot's session: its welcome, the matches it is seated in now, then every new assignment
        and a heartbeat every 30 s (all from the gateway's ``SessionHub``)."""
        token = await require_bot_token(context, bearer(context))
        problem = bot_text_error(bot_version=request.bot_version, sdk_version=request.sdk_version)
        if problem is not None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, problem)
        bot = await self._call(context, self.registry.authenticate, token)
        if bot is None:
            if await self._call(context, self._resolve, token) is not None:  # the admin's or an owner's
                await refuse_bot_token(context, "sessions are bots': use a bot's token", known=True)
            await refuse_bot_token(context, "unknown bot token")
        if not bot.enabled:
            await refuse_bot_token(context, disabled_bot(bot.name, bot.disabled_reason), known=True)
        await self.limit_session(bot.name, context)
        name = bot.name
        session_id = secrets.token_hex(6)
        slog = log.bind(bot=name, session_id=session_id)
        info = {"session_id": session_id, "version": request.bot_version, "sdk_version": request.sdk_version,
                "since": time.time(), keys.PRESENCE_LADDER: not request.no_ladder}  # fmt: skip
        session = self.hub.open(name, bot.token_sha256, request.bot_version, info)
        slog.info("bot session opened", version=request.bot_version, ladder=not request.no_ladder)
        try:
            await self._call(context, self.registry.seen, name, request.bot_version, info)
            self.hub.written(session)
            yield arena_pb2.SessionEvent(welcome=arena_pb2.SessionWelcome(bot_name=name, session_id=session_id))
            for event in await self._call(context, snapshot, self.registry, self.store.describe, name, self.hub.path):
                yield event
            while True:
                item = await session.events.get()
                if isinstance(item, SessionEnd):
                    await abort(context, item.code, item.details)
                yield item
        finally:
            if self.hub.close(session):
                with contextlib.suppress(redis.RedisError):  # else the presence key runs out by itself
                    await asyncio.to_thread(self.registry.gone, name)
            slog.info("bot session closed")

    async def limit_session(self, bot_name: str, context: grpc.aio.ServicerContext) -> None:
        """RESOURCE_EXHAUSTED when this bot (whatever its token) opened too many sessions or Play streams lately."""
        await self._limit(context, SESSION, f"bot:{bot_name}", "sessions opened by this bot")

    async def _limit(self, context: grpc.aio.ServicerContext, kind: str, subject: str, what: str) -> None:
        """Count one ``kind`` call of ``subject`` (a bot or an owner, not a token: a rotated token keeps its
        count); past its limit, RESOURCE_EXHAUSTED with the seconds to wait in the message and in the
        trailing metadata ``retry-after-s``."""
        retry = await self._call(context, self.limiter.check, kind, subject)
        if retry is not None:
            context.set_trailing_metadata((("retry-after-s", f"{retry:.0f}"),))
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, f"too many {what}; retry in {retry:.0f} s")

    # ------------------------------------------------------------------ registry

    async def RegisterBot(  # noqa: N802
        self, request: arena_pb2.RegisterBotRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RegisterBotResponse:
        caller = await self._require(context, CallerKind.OWNER)
        retry_id = await self._request_id(context)
        if caller.kind is CallerKind.OWNER:  # an owner registers its own bots (whatever it asks), up to its limit
            bot, token = await self._call(
                context, self.owners.register_bot, self.registry, caller.name, request.name,
                list(request.game_ids), request.max_concurrent or 4, retry_id,
            )  # fmt: skip
        else:  # the admin: any owner, and the names reserved for the arena (arena.service.names)
            bot, token = await self._call(
                context, self.registry.register, request.name, request.owner, list(request.game_ids),
                request.max_concurrent or 4, retry_id,
            )  # fmt: skip
        log.info("bot registered", bot=bot.name, owner=bot.owner, games=list(bot.game_ids))
        return arena_pb2.RegisterBotResponse(bot=bot_proto(bot), token=token)

    async def RotateToken(  # noqa: N802
        self, request: arena_pb2.RotateTokenRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RotateTokenResponse:
        caller = await self._require(context, CallerKind.OWNER, CallerKind.BOT)
        if caller.kind is CallerKind.BOT and caller.name != request.name:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, "a bot's token rotates only that bot's token")
        if caller.kind is CallerKind.BOT and not caller.enabled:
            await abort(
                context, grpc.StatusCode.PERMISSION_DENIED, f"bot {caller.name} is disabled: its owner or the admin "
                "rotates its token",
            )  # fmt: skip
        if caller.kind is not CallerKind.BOT:
            await self._owned_bot(context, caller, request.name)
        token = await self._call(context, self.registry.rotate_token, request.name)
        log.info("bot token rotated", bot=request.name)
        return arena_pb2.RotateTokenResponse(token=token)

    async def SetBotEnabled(  # noqa: N802
        self, request: arena_pb2.SetBotEnabledRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.SetBotEnabledResponse:
        await self._owned_bot(context, await self._require(context, CallerKind.OWNER), request.name)
        bot = await self._call(context, self.registry.set_enabled, request.name, request.enabled, request.reason)
        log.info("bot enabled" if request.enabled else "bot disabled", bot=request.name, reason=request.reason)
        return arena_pb2.SetBotEnabledResponse(bot=bot_proto(bot))

    async def RetireBot(  # noqa: N802
        self, request: arena_pb2.RetireBotRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RetireBotResponse:
        await self._owned_bot(context, await self._require(context, CallerKind.OWNER), request.name)
        bot = await self._call(context, self.registry.retire, request.name, request.reason)
        log.info("bot retired", bot=bot.name, owner=bot.owner, reason=request.reason)
        return arena_pb2.RetireBotResponse(bot=bot_proto(bot))

    async def AddBotGames(  # noqa: N802
        self, request: arena_pb2.AddBotGamesRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.AddBotGamesResponse:
        await self._owned_bot(context, await self._require(context, CallerKind.OWNER), request.name)
        bot = await self._call(context, self.registry.add_games, request.name, list(request.game_ids))
        log.info("bot games added", bot=bot.name, games=list(bot.game_ids))
        return arena_pb2.AddBotGamesResponse(bot=bot_proto(bot))

    async def ListBots(  # noqa: N802
        self, request: arena_pb2.ListBotsRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.ListBotsResponse:
        await self._caller(context)
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
        caller = await self._require(context, CallerKind.OWNER)
        if caller.kind is CallerKind.OWNER:
            await self._owner_may_request(context, caller, request)
        match_id, seed_hash = await self._call(
            context, self.store.request, request.game_id, list(request.bot_names), seed=request.seed,
            rated=request.rated, time_control=control_overrides(request.time_control), match_id=request.match_id,
            requested_by=caller.name,
        )  # fmt: skip
        metrics.MATCHES_REQUESTED.inc()
        log.info("match requested", match_id=match_id, game_id=request.game_id, bots=list(request.bot_names))
        return arena_pb2.RequestMatchResponse(match_id=match_id, seed_sha256=seed_hash)

    async def _owner_may_request(
        self, context: grpc.aio.ServicerContext, caller: Caller, request: arena_pb2.RequestMatchRequest
    ) -> None:
        """An owner requests unrated matches of its own bots against its own or the reference bots, a
        bounded number per rate window (RESOURCE_EXHAUSTED with the seconds to wait). Every request of
        the owner's token counts, refused ones too."""
        await self._limit(context, REQUEST, f"owner:{caller.name}", "match requests by this owner")
        if request.rated:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, "owners request unrated matches only")
        owners: dict[str, str] = await self._call(context, self.owners.owners_of, list(request.bot_names))
        if caller.name not in owners.values():
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, "a match you request seats one of your bots")
        others = sorted(n for n, o in owners.items() if o not in (caller.name, REFERENCE_OWNER))
        if others:
            await abort(
                context, grpc.StatusCode.PERMISSION_DENIED,
                f"{', '.join(others)}: neither yours nor a reference bot (owner {REFERENCE_OWNER!r})",
            )  # fmt: skip

    async def DescribeMatch(  # noqa: N802
        self, request: arena_pb2.DescribeMatchRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.DescribeMatchResponse:
        internal = (await self._caller(context)).kind is CallerKind.ADMIN
        m = await self._match(context, request.match_id)
        return arena_pb2.DescribeMatchResponse(match=match_proto(m, internal))

    async def ListMatches(  # noqa: N802
        self, request: arena_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.ListMatchesResponse:
        internal = (await self._caller(context)).kind is CallerKind.ADMIN
        if not (math.isfinite(request.since) and math.isfinite(request.until)):  # Redis refuses NaN
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "since and until are seconds since the epoch")
        matches = await self._call(
            context, self._search, owner=request.owner, bot=request.bot_name or None,
            game_id=request.game_id or None, since=request.since or None, until=request.until or None,
            limit=request.limit or 50, state=from_proto_enum(MatchStatus, request.state),
        )  # fmt: skip
        return arena_pb2.ListMatchesResponse(matches=[match_proto(m, internal) for m in matches])

    def _search(self, *, owner: str, bot: str | None, limit: int, **filters: Any) -> list[MatchRecord]:
        """``MatchStore.search``; with ``owner``, the matches seating any of that owner's bots (each bot's
        newest ``limit``, merged: the newest ``limit`` of them all)."""
        if not owner:
            return self.store.search(bot=bot, limit=limit, **filters)
        names = [n for n in self.owners.bot_names(owner) if bot is None or n == bot]
        found = {m.match_id: m for n in names for m in self.store.search(bot=n, limit=limit, **filters)}
        return sorted(found.values(), key=lambda m: m.enqueued_at, reverse=True)[: max(1, min(limit, 1000))]

    async def FollowMatch(  # noqa: N802
        self, request: arena_pb2.FollowMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[arena_pb2.FollowMatchResponse]:
        address = client_address(context.peer())
        anonymous = (await self._caller(context)) is ANONYMOUS
        if anonymous and not self.guard.follow(address):
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"at most {self.guard.anonymous_follows} matches followed at once without a token "
                        "from one address")  # fmt: skip
        try:
            async for response in self._follow(context, request):
                yield response
        finally:
            if anonymous:
                self.guard.unfollow(address)

    async def _follow(
        self, context: grpc.aio.ServicerContext, request: arena_pb2.FollowMatchRequest
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
            reply: Any = await self.ar.xread({stream: last}, count=500)  # no blocking read: connections stay few
            if not reply:
                await asyncio.sleep(FOLLOW_POLL_S)
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    last = entry_id
                    for line in entry_lines(fields):
                        sent += 1
                        for public in public_lines([line], set()):
                            yield arena_pb2.FollowMatchResponse(transcript_line=public)
                        if transcript.is_footer(line):
                            return
            if not reply:  # idle: look whether it finished (its event log goes with the result)
                stored = await self._call(context, self.store.transcript, request.match_id)

    async def GetTranscript(  # noqa: N802
        self, request: arena_pb2.GetTranscriptRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.GetTranscriptResponse:
        caller = await self._caller(context)
        m = await self._match(context, request.match_id)
        stored = await self._call(context, self.store.transcript, request.match_id)
        if stored is None:
            await abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {request.match_id} is {m.status}: its transcript is stored when it ends"
                " (FollowMatch streams it live)",
            )
        seats: set[int] | None = set()  # whose refusals the caller may read in full
        if caller.kind is CallerKind.ADMIN:
            seats = None
        elif caller.kind is CallerKind.BOT and caller.enabled:  # a disabled bot reads the public form
            seats = {i for i, name in enumerate(m.bot_names) if name == caller.name}
        elif caller.kind is CallerKind.OWNER:
            owners = await self._call(context, self.owners.owners_of, list(m.bot_names))
            seats = {i for i, name in enumerate(m.bot_names) if owners[name] == caller.name}
        lines = public_lines(jsonl_lines(stored), seats)
        return arena_pb2.GetTranscriptResponse(
            match_id=request.match_id, jsonl="\n".join(lines) + "\n", full=seats is None or bool(seats)
        )

    # ------------------------------------------------------------------ owners

    async def CreateOwner(  # noqa: N802
        self, request: arena_pb2.CreateOwnerRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.CreateOwnerResponse:
        await self._require(context)
        retry_id = await self._request_id(context)
        owner, token = await self._call(
            context, self.owners.create, request.name, request.max_bots or DEFAULT_MAX_BOTS, retry_id
        )
        log.info("owner created", owner=owner.name, max_bots=owner.max_bots)
        return arena_pb2.CreateOwnerResponse(owner=owner_proto(owner, 0), token=token)

    async def ListOwners(  # noqa: N802
        self, request: arena_pb2.ListOwnersRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.ListOwnersResponse:
        await self._require(context)
        owners = await self._call(context, self.owners.list)
        counts = await self._call(context, self.owners.bot_counts)
        return arena_pb2.ListOwnersResponse(owners=[owner_proto(o, counts[o.name]) for o in owners])

    async def SetOwnerMaxBots(  # noqa: N802
        self, request: arena_pb2.SetOwnerMaxBotsRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.SetOwnerMaxBotsResponse:
        await self._require(context)
        owner = await self._call(context, self.owners.set_max_bots, request.name, request.max_bots)
        counts = await self._call(context, self.owners.bot_counts)
        log.info("owner max_bots set", owner=owner.name, max_bots=owner.max_bots)
        return arena_pb2.SetOwnerMaxBotsResponse(owner=owner_proto(owner, counts[owner.name]))

    async def RotateOwnerToken(  # noqa: N802
        self, request: arena_pb2.RotateOwnerTokenRequest, context: grpc.aio.ServicerContext
    ) -> arena_pb2.RotateOwnerTokenResponse:
        caller = await self._require(context, CallerKind.OWNER)
        if caller.kind is CallerKind.OWNER and caller.name != request.name:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, "an owner rotates only its own token")
        token = await self._call(context, self.owners.rotate_token, request.name)
        log.info("owner token rotated", owner=request.name)
        return arena_pb2.RotateOwnerTokenResponse(token=token)


class TokenGate(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A token that is given must be valid, on every service of the gateway: the services hosted beside
    ArenaService (the ladder's), which know nothing of tokens, answer an unknown one UNAUTHENTICATED too.

    The check runs inside the call, in a wrapped behaviour: the handler an interceptor returns must not
    depend on the call, since ``EdgeInterceptor`` keeps the first one it sees for each method."""

    def __init__(self, prefixes: tuple[str, ...], resolve: Any) -> None:
        self.prefixes = prefixes
        self.resolve = resolve

    async def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(self.prefixes) or handler.unary_unary is None:
            return handler
        behavior = handler.unary_unary

        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            token = bearer(context)
            if token:
                try:
                    known = await asyncio.to_thread(self.resolve, token) is not None
                except TROUBLE:
                    known = True  # the handler meets Redis's absence itself (UNAVAILABLE)
                if not known:
                    await abort(context, grpc.StatusCode.UNAUTHENTICATED, UNKNOWN_TOKEN)
            result = behavior(request, context)
            return await result if inspect.isawaitable(result) else result

        return handler._replace(unary_unary=checked)


async def start_gateway(
    redis_url: str,
    address: str = "127.0.0.1:0",
    extra: Any = None,
    *,
    tls: ServerTls | None = None,
    worker_tls: ClientTls | None = None,
    limiter: RateLimiter | None = None,
    limits: RateLimits | None = None,
    direct: bool = False,
    play_proxy: str = "",
    archive: TranscriptArchive | None = None,
    retention_s: float | None = None,
) -> tuple[grpc.aio.Server, int, ArenaServicer]:
    """Serve ArenaService, BotService (the relay of bots' Play streams to the workers) and the services
    ``extra(server, redis_url)`` adds and names (e.g. the ladder's), with health and reflection; TLS
    with ``tls``. ``worker_tls``: how the relay verifies the workers (None: plaintext inside). ``direct``:
    sessions' assignments name the worker running the match, for bots inside the arena's network; ``play_proxy``:
    they name the Play proxy at that address and the route to the worker (``arena.service.playproxy``).
    ``limits``: the per-token rate limits (None: the defaults); ``limiter``, a ready one, wins.
    ``archive``: where transcripts are archived (read from, and, with ``retention_s``, moved to after
    that many seconds)."""
    servicer = ArenaServicer(
        redis_url, limiter=limiter, limits=limits, direct=direct, play_proxy=play_proxy, archive=archive,
        retention_s=retention_s,
    )  # fmt: skip
    watch = RefusalWatch()  # before TokenGate: it sees the refusals of the gate too
    server = new_server(watch, TokenGate(("/arena.v1.LadderService/",), servicer._resolve))
    arena_pb2_grpc.add_ArenaServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    servicer.relay = PlayRelay(
        servicer.registry, worker_tls=worker_tls, limiter=servicer.limit_session, known=servicer._resolve
    )
    server.add_generic_rpc_handlers((servicer.relay.handler(),))
    servicer.hub.watchers.append(servicer.relay.moved)  # a takeover moves the relayed streams at once
    names = [service_name(arena_pb2, "ArenaService"), service_name(bot_pb2, "BotService")]
    if extra is not None:
        names += extra(server, redis_url)
    watch.expect(names)
    await servicer.start()
    try:
        port = await serve(server, names, address, tls)
    except BaseException:
        await servicer.close()  # its reader and heartbeat tasks, its Redis clients
        raise
    log.info("gateway serving", address=address, port=port, tls=tls is not None)
    return server, port, servicer
