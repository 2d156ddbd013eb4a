"""``BotService.Play`` on the gateway: the one public address a bot needs.

A bot opens ``Play`` on the gateway naming its matches in ``Hello.match_ids`` (from its session's
``MatchAssigned``). The gateway checks the token, looks up in Redis which worker runs each match, and
relays the stream to it over the internal network: one upstream ``Play`` per match, with the bot's
own token, so the worker still authenticates and authorises every seat itself. Messages cross the
gateway as bytes (only the first message is decoded, and actions when one stream carries several
matches), which keeps the relay's cost per move small.

A stream ends (status OK) as soon as the bot has the ``MatchEnded`` of every match it named.

When a worker dies, the gateway waits for the match to run again (another worker takes its lease
over and resumes it) and re-attaches, while the bot's stream stays open: the bot sees ``MatchStarted``
and a ``Turn`` with the whole history again, as after any reconnect, and never needs another address.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
import redis
import structlog
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from arena import keys, metrics
from arena.redis_client import TROUBLE, trouble
from arena.service.cancel import cancel_and_wait
from arena.service.queue import QueuedMatch
from arena.service.ratelimit import client_address
from arena.service.registry import Registry
from referee.wire import bot_pb2
from referee.wire.contract import (
    MAX_BATCH,
    MAX_MESSAGE_BYTES,
    NO_BATCHES,
    TOO_LONG,
    abort,
    bearer,
    control_to_proto,
    disabled_bot,
    refuse_bot_token,
    require_bot_token,
    result_to_proto,
)
from referee.wire.tls import ClientTls, aio_channel
from referee.wire.values import MatchResult, MatchStatus, bot_text_error

log = structlog.get_logger("arena.service.relay")

SERVICE: Final = "arena.v1.BotService"
PLAY: Final = f"/{SERVICE}/Play"
RELAY_VERSION: Final = "relay-1"
HELLO_TIMEOUT_S: Final = 30.0
"""A bot's stream that sends no Hello in this long is closed."""
HELLO_UNKNOWN_S: Final = 5.0
"""The same for a stream with no token or one that is no bot's (it will be refused anyway)."""
HELLO_CROWDED_S: Final = 1.0
UNKNOWN_BOT_TOKEN: Final = "unknown bot token (or rotated away)"
"""Play's words for a token that names no bot (``referee.wire.contract.refuse_bot_token``)."""
MAX_WAITING_HELLO_PER_CLIENT: Final = 64
MAX_WAITING_HELLO: Final = 4096
"""Streams waiting for their Hello, per client address and per gateway: past these a new stream is refused
(RESOURCE_EXHAUSTED, after at most ``HELLO_CROWDED_S``), so that streams that never say Hello cannot fill the
gateway's memory (10,000 of them once took it from 64 to 313 MB)."""
REATTACH_S: Final = 90.0
"""How long a match may be without a reachable worker (its lease runs out, another worker resumes it)
before the bot's stream ends with UNAVAILABLE, counted from when its stream was lost."""
POLL_MIN_S: Final = 0.05
POLL_MAX_S: Final = 0.25
"""How often a stream without a worker reads where its match runs now (back-off with jitter)."""
REDIAL_MIN_S: Final = 0.05
REDIAL_MAX_S: Final = 5.0
"""How soon a worker that failed a stream is dialled again (back-off with jitter, per address)."""
WELCOME_TIMEOUT_S: Final = 10.0
"""How long a dialled worker may take to answer a Hello with its Welcome (it answers at once when it runs):
past this the dial fails and the match's record is read again. A worker frozen right after claiming accepts
the connection and never answers; a takeover's announcement drops the dial sooner (``PlayRelay.moved``)."""
MAX_MATCHES_PER_STREAM: Final = 64
CHANNEL_OPTIONS: Final = [
    ("grpc.max_receive_message_length", 8 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
_FINAL_CODES: Final = frozenset(
    {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT,
     grpc.StatusCode.RESOURCE_EXHAUSTED}
)  # fmt: skip
"""A worker's answers that another attempt would get again: passed on to the bot, the stream ends."""

Limiter = Callable[[str, grpc.aio.ServicerContext], Awaitable[None]]
"""Aborts the call (RESOURCE_EXHAUSTED) when the bot (by name) opened too many streams lately."""


class _RefusedError(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


@dataclass(eq=False)  # by identity: kept in sets (``PlayRelay.links``)
class _Link:
    """One match of the bot's stream and its current upstream call to the worker running it."""

    match_id: str
    hello: bytes
    log: Any
    bot: str
    call: Any = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    attached: bool = False  # it has had a live stream to a worker
    address: str = ""  # the worker of the live stream (``call``)
    dialling: asyncio.Task[Any] | None = None  # the dial waiting for its worker's Welcome, if any
    dialled: str = ""  # the worker it dials


class PlayRelay:
    """The gateway's ``BotService.Play``: add ``handler()`` to the gateway's server."""

    def __init__(
        self,
        registry: Registry,
        *,
        worker_tls: ClientTls | None = None,
        limiter: Limiter | None = None,
        known: Callable[[str], object] | None = None,
    ) -> None:
        self.registry = registry
        self.known = known  # whether a token that is no bot's is someone's (the admin's, an owner's)
        self.r = registry.r
        self.worker_tls = worker_tls
        self.limiter = limiter
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.users: dict[str, int] = {}  # worker address -> streams holding its channel (``_acquire``)
        self.stale: set[str] = set()  # addresses whose channel goes when its last user leaves
        self.links: dict[str, set[_Link]] = {}  # match id -> the links relaying it now
        self.waiting: dict[str, int] = {}  # client address -> its streams waiting for their Hello
        self.waiting_total = 0

    def handler(self) -> grpc.GenericRpcHandler:
        play = grpc.stream_stream_rpc_method_handler(self.play)  # bytes in, bytes out: no (de)serialisers
        return grpc.method_handlers_generic_handler(SERVICE, {"Play": play})

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()
        self.channels.clear()

    def moved(self, match_id: str, address: str) -> None:
        """A worker announced that it runs ``match_id`` now (the gateway's session hub reads every
        assignment): a stream still relayed to another worker is cut, so that it follows the match at once.
        The worker it leaves may be alive but have lost the match (paused, or cut off from Redis): its
        stream would never break by itself while the bots' seats forfeit on the new worker."""
        for link in self.links.get(match_id, ()):
            if link.call is not None and link.address and address and link.address != address:
                link.log.info("match moved to another worker: following it", match_id=match_id, worker=address)
                link.call.cancel()
            elif link.dialling is not None and link.dialled and address and link.dialled != address:
                # a dial still waiting for its Welcome: a worker frozen right after claiming the match accepts
                # the connection and never answers, so the dial would wait for ever while the match moved on
                link.log.info("match moved while dialling its worker: following it", match_id=match_id,
                              worker=address)  # fmt: skip
                link.dialling.cancel()

    def _acquire(self, address: str) -> grpc.aio.Channel:
        """The shared channel to a worker, held until ``_release``: held for a whole attempt (dialling,
        the Welcome, the stream), so that no other stream closes it under an attempt in progress."""
        channel = self.channels.get(address)
        if channel is None:
            channel = self.channels[address] = aio_channel(address, self.worker_tls, CHANNEL_OPTIONS)
        self.users[address] = self.users.get(address, 0) + 1
        return channel

    def _release(self, address: str) -> None:
        self.users[address] -= 1
        if self.users[address] <= 0 and address in self.stale:
            self._close(address)

    def _forget(self, address: str) -> None:
        """A worker that no longer runs a match we relay (it died, or the match moved): its channel is
        closed as soon as no stream holds it."""
        self.stale.add(address)
        if self.users.get(address, 0) <= 0:
            self._close(address)

    def _close(self, address: str) -> None:
        self.stale.discard(address)
        self.users.pop(address, None)
        channel = self.channels.pop(address, None)
        if channel is not None:
            asyncio.get_running_loop().create_task(channel.close())

    # ------------------------------------------------------------------ the stream

    async def play(self, _requests: Any, context: grpc.aio.ServicerContext) -> None:
        token = bearer(context)
        try:
            bot = None if token is None else await asyncio.to_thread(self.registry.authenticate, token)
        except TROUBLE as e:
            await abort(context, grpc.StatusCode.UNAVAILABLE, trouble(e))
        # The Hello is read before any refusal, even of a stream without a token: a status sent while the
        # client's first message was still on its way reached the client now and then as INTERNAL (the
        # stream reset under its write; grpc/grpc#36066) instead of UNAUTHENTICATED. An unknown token waits the
        # same way (the referee's ``refuse_stream``), but not as long as a bot's; and a stream beyond the caps
        # on streams still waiting for their Hello (per client address, per gateway) is refused at once.
        client = client_address(context.peer())
        crowded = (self.waiting_total >= MAX_WAITING_HELLO
                   or self.waiting.get(client, 0) >= MAX_WAITING_HELLO_PER_CLIENT)  # fmt: skip
        wait = HELLO_CROWDED_S if crowded else HELLO_TIMEOUT_S if bot is not None else HELLO_UNKNOWN_S
        self.waiting_total += 1
        self.waiting[client] = self.waiting.get(client, 0) + 1
        try:
            first = await asyncio.wait_for(context.read(), wait)
        except TimeoutError:
            first = None
        finally:
            self.waiting_total -= 1
            self.waiting[client] -= 1
            if not self.waiting[client]:
                del self.waiting[client]
        if crowded:
            await abort(
                context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many Play streams waiting for their Hello (at most {MAX_WAITING_HELLO_PER_CLIENT} from one "
                "address): send the Hello first",
            )  # fmt: skip
        token = await require_bot_token(context, token)
        if first is None and bot is None:  # no Hello, and not a bot's token: refused for the token
            await refuse_bot_token(context, UNKNOWN_BOT_TOKEN)
        if first is None:
            await abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, f"no Hello within {wait:g} s")
        if first is grpc.aio.EOF:
            return
        hello = _hello(first)
        if hello is None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "the first message of Play must be a Hello")
        problem = bot_text_error(bot_name=hello.bot_name, bot_version=hello.bot_version, sdk_version=hello.sdk_version)
        if problem is not None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, problem)
        if bot is None:
            if self.known is not None and await asyncio.to_thread(self.known, token) is not None:
                await refuse_bot_token(context, "Play is bots': use a bot's token", known=True)
            await refuse_bot_token(context, UNKNOWN_BOT_TOKEN)
        if not bot.enabled:
            await refuse_bot_token(context, disabled_bot(bot.name, bot.disabled_reason), known=True)
        if self.limiter is not None:
            await self.limiter(bot.name, context)
        match_ids = list(dict.fromkeys(hello.match_ids))
        if not match_ids:
            await abort(
                context, grpc.StatusCode.INVALID_ARGUMENT,
                "through the gateway, name the matches to play in Hello.match_ids (from the session's MatchAssigned)",
            )  # fmt: skip
        if len(match_ids) > MAX_MATCHES_PER_STREAM:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_MATCHES_PER_STREAM} matches a stream")
        for match_id in match_ids:
            refusal = await asyncio.to_thread(self._seated, match_id, bot.name)
            if refusal is not None:
                await abort(context, *refusal)
        session_id = "r" + secrets.token_hex(6)
        slog = log.bind(bot=bot.name, session_id=session_id)
        links = {m: _Link(m, _upstream_hello(hello, m), slog, bot.name) for m in match_ids}
        for link in links.values():
            self.links.setdefault(link.match_id, set()).add(link)
        writing = asyncio.Lock()
        welcome = bot_pb2.PlayResponse(
            welcome=bot_pb2.Welcome(
                session_id=session_id, referee_version=RELAY_VERSION, max_message_bytes=MAX_MESSAGE_BYTES
            )
        ).SerializeToString()
        await context.write(welcome)
        metrics.RELAYED_STREAMS.inc()
        alone = len(links) == 1  # then the gateway itself never writes to the bot after the Welcome
        pumps = [asyncio.create_task(self._pump(link, token, context, writing, slog, alone)) for link in links.values()]
        reader = asyncio.create_task(self._forward(links, context, writing))
        try:
            pending: set[asyncio.Task[None]] = {reader, *pumps}
            while any(not p.done() for p in pumps):  # until every match ended (the bot has its MatchEnded)
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.cancelled():  # not by us: never leave the bot's stream without a status
                        await abort(context, grpc.StatusCode.UNAVAILABLE, "the gateway lost the stream; reconnect")
                    error = task.exception()
                    if isinstance(error, _RefusedError):
                        slog.info("relayed stream ended by the worker's answer", code=error.code.name,
                                  details=error.details)  # fmt: skip
                        await abort(context, error.code, error.details)
                    if error is not None:
                        raise error
        finally:
            metrics.RELAYED_STREAMS.dec()
            for link in links.values():
                if link.call is not None:
                    link.call.cancel()
                held = self.links.get(link.match_id)
                if held is not None:
                    held.discard(link)
                    if not held:
                        del self.links[link.match_id]
            await cancel_and_wait([reader, *pumps])

    def _seated(self, match_id: str, bot_name: str) -> tuple[grpc.StatusCode, str] | None:
        """Why the bot may not play ``match_id`` through the relay (code and message), or None."""
        status, spec = self.r.hmget(keys.match(match_id), "status", "spec")
        if status is None or spec is None:
            return grpc.StatusCode.NOT_FOUND, f"no match {match_id!r}"
        if bot_name not in _bot_names(keys.text(spec)):
            return grpc.StatusCode.PERMISSION_DENIED, f"bot {bot_name} has no seat in {match_id}"
        return None  # a finished match too: the bot is told its result (``_told_the_end``)

    def _where(self, match_id: str) -> tuple[str, str]:
        """The match's status and the internal address of the worker running it."""
        status, address = self.r.hmget(keys.match(match_id), "status", "address")
        return keys.text(status or b""), keys.text(address or b"")

    async def _forward(self, links: dict[str, _Link], context: grpc.aio.ServicerContext, writing: asyncio.Lock) -> None:
        """The bot's messages to the worker running their match; until the bot closes its side."""
        only = next(iter(links.values())) if len(links) == 1 else None
        while True:
            message = await context.read()
            if message is grpc.aio.EOF:
                return
            link = only
            if link is None:
                link, replies = _route(message, links)
                if replies:
                    async with writing:
                        for reply in replies:
                            await context.write(reply)
                    continue
            if link is None:
                continue
            while link.call is None:
                await link.ready.wait()  # re-attaching: the action is most likely stale, the worker says so
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                await link.call.write(message)

    async def _pump(
        self,
        link: _Link,
        token: str,
        context: grpc.aio.ServicerContext,
        writing: asyncio.Lock,
        slog: Any,
        self_only: bool,
    ) -> None:
        """The worker's messages for one match to the bot, re-attaching to whichever worker runs the
        match until it has finished. ``_RefusedError`` when the worker refuses the bot, or when no worker
        has run the match for ``REATTACH_S`` since its stream was lost.

        Between attempts the match's record is read again (a takeover changes its address) with a short
        back-off, while a worker that just failed is dialled again only after a back-off of its own, with
        jitter: a dead worker costs a few attempts a minute per stream, not twenty a second."""
        metadata = (("authorization", f"Bearer {token}"),)
        since = time.monotonic()  # when the match last had a live stream (or the relay started trying)
        poll = POLL_MIN_S
        lost = ""  # the worker whose stream broke last
        redial: dict[str, tuple[float, float]] = {}  # address -> (not before, its back-off)
        error = ""
        while True:
            try:
                status, address = await asyncio.to_thread(self._where, link.match_id)
            except redis.RedisError as e:  # Redis away or refusing: ask again, within the same limit
                metrics.REDIS_ERRORS.labels("relay").inc()
                status, address, error = "", "", f"redis: {str(e)[:200]}"
            if lost and address != lost:  # the match moved on: the lost worker's channel goes once unused
                self._forget(lost)
                lost = ""
            if status == MatchStatus.FINISHED:  # and the bot has no MatchEnded from a worker on this stream
                await self._tell_the_end(link, context, writing, self_only)
                return
            not_before, backoff = redial.get(address, (0.0, REDIAL_MIN_S))
            if status == MatchStatus.RUNNING and address and time.monotonic() >= not_before:
                outcome, error = await self._attempt(link, address, metadata, context, writing, self_only)
                if outcome == _ENDED:
                    return
                if outcome == _BROKE:  # it had a live stream: the clock and the back-offs start again
                    slog.info("worker stream lost", match_id=link.match_id, worker=address, error=error)
                    since = time.monotonic()
                    poll = POLL_MIN_S
                    redial.clear()
                    backoff = REDIAL_MIN_S
                else:
                    metrics.RELAY_RETRIES.inc()
                    backoff = min(REDIAL_MAX_S, backoff * 2)
                redial[address] = (time.monotonic() + backoff * random.uniform(0.5, 1.0), backoff)
                lost = address
            if time.monotonic() - since > REATTACH_S:
                why = f" (last error: {error})" if error else ""
                raise _RefusedError(
                    grpc.StatusCode.UNAVAILABLE, f"no worker runs {link.match_id} now{why}; reconnect later"
                )
            await asyncio.sleep(poll * random.uniform(0.5, 1.0))
            poll = min(POLL_MAX_S, poll * 2)

    async def _tell_the_end(
        self, link: _Link, context: grpc.aio.ServicerContext, writing: asyncio.Lock, self_only: bool
    ) -> None:
        """The recorded result of a finished match, as a worker would send it (MatchStarted, then MatchEnded
        for each of the bot's seats): a bot whose worker died between recording the result and telling it,
        or that comes back after the end, still learns how its match ended."""
        messages = await asyncio.to_thread(self._ended_messages, link.match_id, link.bot)
        if self_only:
            for message in messages:
                await context.write(message)
            return
        async with writing:
            for message in messages:
                await context.write(message)

    def _ended_messages(self, match_id: str, bot_name: str) -> list[bytes]:
        spec_json, result_json = self.r.hmget(keys.match(match_id), "spec", "result")
        if spec_json is None or result_json is None:
            return []
        spec = QueuedMatch.from_json(spec_json)
        result = result_to_proto(MatchResult.from_dict(json.loads(result_json)))
        out = []
        for seat, name in enumerate(spec.bot_names):
            if name != bot_name:
                continue
            started = bot_pb2.MatchStarted(
                match_id=match_id, game_id=spec.game_id, seat=seat, bot_names=list(spec.bot_names),
                time_control=control_to_proto(spec.time_control), seed_sha256=spec.seed_sha256, rated=spec.rated,
            )  # fmt: skip
            out.append(bot_pb2.PlayResponse(match_started=started).SerializeToString())
            out.append(bot_pb2.PlayResponse(match_ended=bot_pb2.MatchEnded(result=result)).SerializeToString())
        return out

    async def _attempt(
        self,
        link: _Link,
        address: str,
        metadata: tuple[tuple[str, str], ...],
        context: grpc.aio.ServicerContext,
        writing: asyncio.Lock,
        self_only: bool,
    ) -> tuple[str, str]:
        """One upstream stream for ``link`` to the worker at ``address``, relayed until it ends: (``_ENDED``:
        the bot has its MatchEnded; ``_BROKE``: the stream was live, then broke; ``_FAILED``: it never got
        the worker's Welcome) and the error text. ``_RefusedError`` for a worker's final answer.

        A cancellation that is not this task's own (the call cancelled under it) is a broken stream too:
        an exception of any kind here must never end the bot's stream without a status."""
        channel = self._acquire(address)
        call = channel.stream_stream(PLAY)(metadata=metadata)
        live = False
        try:
            # The Hello and the worker's Welcome as a task of their own that ``moved`` cancels: cancelling the
            # call alone did not wake a write or read waiting on a worker that accepted and never answered.
            dial = asyncio.ensure_future(_greet(call, link.hello))
            link.dialling, link.dialled = dial, address
            try:
                greeting = await asyncio.wait_for(dial, WELCOME_TIMEOUT_S)  # the bot has the gateway's Welcome
            except TimeoutError:
                return _FAILED, f"DEADLINE_EXCEEDED: no Welcome from the worker within {WELCOME_TIMEOUT_S:g} s"
            link.dialling, link.dialled = None, ""
            if greeting is grpc.aio.EOF:
                code = await call.code()
                if code in _FINAL_CODES:
                    raise _RefusedError(code, await call.details())
                return _FAILED, f"{code.name}: {await call.details()}"
            if not _is_welcome(greeting):
                async with writing:
                    await context.write(greeting)
            link.call = call
            link.address = address
            link.ready.set()
            live = True
            if link.attached:
                metrics.RELAY_REATTACHED.inc()
                link.log.info("match re-attached to its new worker", match_id=link.match_id, worker=address)
            link.attached = True
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    break
                if self_only:  # the stream's one writer: no lock on the hot path
                    await context.write(message)
                else:
                    async with writing:
                        await context.write(message)
                if message[:1] == _MATCH_ENDED_TAG and _is_match_ended(message):
                    return _ENDED, ""  # the bot has its result; the stream ends when every named match has
            code = await call.code()
            if code in _FINAL_CODES:
                raise _RefusedError(code, await call.details())
            return _BROKE, f"{code.name}: {await call.details()}"
        except grpc.aio.AioRpcError as e:
            if e.code() in _FINAL_CODES:
                raise _RefusedError(e.code(), e.details() or e.code().name) from None
            return (_BROKE if live else _FAILED), f"{e.code().name}: {e.details()}"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the bot's stream is ending: this task was told to stop
            return (_BROKE if live else _FAILED), "CANCELLED: the call to the worker was cancelled"
        finally:
            link.call = None
            link.address = ""
            link.dialling, link.dialled = None, ""
            link.ready.clear()
            call.cancel()
            self._release(address)


async def _greet(call: Any, hello: bytes) -> Any:
    """Send the bot's Hello upstream and read the worker's first message (its Welcome, or EOF)."""
    await call.write(hello)
    return await call.read()


_ENDED: Final = "ended"
_BROKE: Final = "broke"
_FAILED: Final = "failed"


def _hello(message: bytes) -> bot_pb2.Hello | None:
    try:
        request = bot_pb2.PlayRequest.FromString(message)
    except DecodeError:
        return None
    return request.hello if request.WhichOneof("message") == "hello" else None


def _upstream_hello(hello: bot_pb2.Hello, match_id: str) -> bytes:
    one = bot_pb2.Hello()
    one.CopyFrom(hello)
    del one.match_ids[:]
    one.match_ids.append(match_id)
    one.accept_batches = False  # the relay reads MatchEnded and Welcome message by message; its Welcome says so
    message: bytes = bot_pb2.PlayRequest(hello=one).SerializeToString()
    return message


_MATCH_ENDED_TAG: Final = bytes([bot_pb2.PlayResponse.MATCH_ENDED_FIELD_NUMBER << 3 | 2])
"""The first byte of a serialised ``PlayResponse`` carrying ``MatchEnded`` (its one field's tag), so the
relay decodes only the candidates."""


def _is_match_ended(message: bytes) -> bool:
    try:
        return bool(bot_pb2.PlayResponse.FromString(message).WhichOneof("message") == "match_ended")
    except DecodeError:
        return False


def _is_welcome(message: bytes) -> bool:
    try:
        return bool(bot_pb2.PlayResponse.FromString(message).WhichOneof("message") == "welcome")
    except DecodeError:
        return False


def _route(message: bytes, links: dict[str, _Link]) -> tuple[_Link | None, list[bytes]]:
    """Which match's worker a bot's message goes to, or the gateway's own replies to it.
    ``_RefusedError`` for a message that ends the stream (an ActionBatch over the limit)."""
    try:
        request = bot_pb2.PlayRequest.FromString(message)
    except DecodeError:
        return None, []
    kind = request.WhichOneof("message")
    if kind == "ping":
        return None, [bot_pb2.PlayResponse(pong=bot_pb2.Pong(nonce=request.ping.nonce)).SerializeToString()]
    if kind == "action":
        link = links.get(request.action.match_id)
        if link is not None:
            return link, []
        refusal = bot_pb2.ActionRefused(
            match_id=request.action.match_id[:200], seat=request.action.seat, turn_id=request.action.turn_id,
            code=bot_pb2.REFUSAL_CODE_UNKNOWN_MATCH, reason="this stream's Hello did not name that match",
        )  # fmt: skip
        return None, [bot_pb2.PlayResponse(refused=refusal).SerializeToString()]
    if kind == "actions":  # the gateway's Welcome offers no batches: refused as a worker refuses them
        if len(request.actions.actions) > MAX_BATCH:
            raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT, TOO_LONG)
        return None, [
            bot_pb2.PlayResponse(
                refused=bot_pb2.ActionRefused(
                    match_id=a.match_id[:200], seat=a.seat, turn_id=a.turn_id, action=a.action[:200],
                    code=bot_pb2.REFUSAL_CODE_MALFORMED, reason=NO_BATCHES,
                )
            ).SerializeToString()
            for a in request.actions.actions
        ]  # fmt: skip
    return None, []


def _bot_names(spec_json: str) -> list[str]:
    """The bots seated in a stored match spec (``QueuedMatch.to_json``)."""
    try:
        return [str(s["bot_name"]) for s in json.loads(spec_json)["seats"]]
    except (ValueError, KeyError, TypeError):
        return []
