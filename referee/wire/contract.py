"""The hand-written side of the wire contract at the gRPC edge: conversions between the wire's values
(``referee.wire.values``) and protobuf messages, the enum maps, bearer-token parsing and gRPC server
set-up.

Python code passes typed values (``MatchResult``, ``EndReason``, ``TimeControl`` ...); protobuf
messages exist only at the edges, converted here. Each Python enum's values are its proto enum's
names without the prefix, in lower case (``EndReason.COMPLETED`` <-> ``END_REASON_COMPLETED``), so
one pair of functions maps them all and a new enum value needs no new table.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Any, Final, NoReturn, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from referee import games
from referee.games import TimeControl
from referee.wire._generated.arena.v1 import arena_pb2, bot_pb2, match_pb2
from referee.wire.tls import ServerTls
from referee.wire.values import EndReason, MatchResult, MatchStatus, RefusalCode, SeatStatus

MAX_MESSAGE_BYTES: Final = 256 * 1024
"""The largest message a bot may send (the referee says so in ``Welcome``)."""
MAX_BATCH: Final = 64
"""Most messages in one ResponseBatch or ActionBatch."""
NO_BATCHES: Final = "this stream takes no ActionBatch (its Welcome did not say batches): send actions one by one"
TOO_LONG: Final = f"an ActionBatch holds at most {MAX_BATCH} actions"

SERVER_OPTIONS: Final = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", 8 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.keepalive_permit_without_calls", 1),
    # Clients' keepalive pings (the gateway's relay pings its workers every 10 s) are welcome down to 5 s
    # apart: gRPC's default (one per 5 minutes without data) answered an idle relay link with GOAWAY
    # "too_many_pings" after about 30 s, a needless re-attach in the middle of a slow bot's match.
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    # gRPC sets SO_REUSEPORT by default: a second server on a busy port would start and share it.
    ("grpc.so_reuseport", 0),
    # Calls that arrived before the application asked for them: gRPC's defaults (1,000, hard limit 3,000)
    # stalled a gateway at about 3,000 bot sessions opened at once (benchmarks/sessions_bench.py).
    ("grpc.server.max_pending_requests", 20_000),
    ("grpc.server.max_pending_requests_hard_limit", 50_000),
]
"""The options of every server the project starts (``new_server``)."""


# ------------------------------------------------------------------------------- enums

E = TypeVar("E", bound=StrEnum)

_PROTO_ENUMS: Final[dict[type[StrEnum], tuple[Any, str]]] = {
    EndReason: (match_pb2.EndReason, "END_REASON_"),
    SeatStatus: (match_pb2.SeatStatus, "SEAT_STATUS_"),
    MatchStatus: (arena_pb2.MatchState, "MATCH_STATE_"),
    RefusalCode: (bot_pb2.RefusalCode, "REFUSAL_CODE_"),
}


def to_proto_enum(value: StrEnum) -> int:
    """The proto enum number of a Python enum value."""
    wrapper, prefix = _PROTO_ENUMS[type(value)]
    number: int = wrapper.Value(prefix + value.value.upper())
    return number


def from_proto_enum(cls: type[E], number: int) -> E | None:
    """The Python enum value of a proto enum number; None for ``*_UNSPECIFIED`` or an unknown number."""
    wrapper, prefix = _PROTO_ENUMS[cls]
    try:
        name: str = wrapper.Name(number)
    except ValueError:
        return None
    try:
        return cls(name.removeprefix(prefix).lower())
    except ValueError:
        return None


# ------------------------------------------------------------------------------- messages


def control_to_proto(tc: TimeControl) -> match_pb2.TimeControl:
    return match_pb2.TimeControl(**tc.to_dict())


def control_overrides(tc: match_pb2.TimeControl) -> dict[str, int]:
    """The fields a TimeControl message sets, by name: what a request asks to change of the game's
    default (proto3 cannot tell a zero from unset, and a zero keeps the default anyway)."""
    return {f.name: int(v) for f, v in tc.ListFields()}


def control_from_proto(tc: match_pb2.TimeControl, game_id: str) -> TimeControl:
    """The game's default time control with the fields the message sets (0 or absent: the default).
    ValueError names a field out of range."""
    return games.time_control(game_id, control_overrides(tc))


def result_to_proto(r: MatchResult) -> match_pb2.MatchResult:
    return match_pb2.MatchResult(
        match_id=r.match_id,
        game_id=r.game_id,
        end_reason=to_proto_enum(r.end_reason),  # type: ignore[arg-type]
        seats=[
            match_pb2.SeatResult(
                seat=s.seat, bot_name=s.bot_name, bot_version=s.bot_version, score=s.score, rank=s.rank,
                status=to_proto_enum(s.status), strikes=s.strikes, refusals=s.refusals,  # type: ignore[arg-type]
            )
            for s in r.seats
        ],
        seed=r.seed,
        seed_sha256=r.seed_sha256,
        plies=r.plies,
        detail=r.detail,
    )  # fmt: skip


# ------------------------------------------------------------------------------- bearer tokens


ROUTE_HEADER: Final = "x-arena-route"
"""The Play call's metadata that names the worker to a Play proxy (``MatchAssigned.route``)."""


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none for an empty token)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def bearer(context: grpc.aio.ServicerContext) -> str | None:
    """The token of a call's ``authorization: Bearer <token>`` metadata, or None."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer ") :].strip() or None
    return None


# ------------------------------------------------------------------------------- request ids

REQUEST_ID_KEY: Final = "arena-request-id"
"""Call metadata naming one logical request across its retries: a registration (a bot's, an owner's) that
the caller retries after UNAVAILABLE (Redis failing over) with the same id is answered as the same
registration, with a fresh token, instead of "the name is taken" (``arena.service.registry``)."""
REQUEST_ID_RE: Final = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


def request_id_metadata(request_id: str) -> tuple[tuple[str, str], ...]:
    return ((REQUEST_ID_KEY, request_id),) if request_id else ()


def request_id(context: grpc.aio.ServicerContext) -> str:
    """The call's request id ("" when it has none); ValueError for one that is not 8-64 letters, digits,
    '_' or '-'."""
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY:
            if not isinstance(value, str) or not REQUEST_ID_RE.match(value):
                raise ValueError(f"metadata {REQUEST_ID_KEY} must be 8-64 letters, digits, '_' or '-'")
            return value
    return ""


# ------------------------------------------------------------------------------- servers


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    """End the call with ``code`` (typed NoReturn, so checkers know the handler stops here)."""
    await context.abort(code, message)
    raise AssertionError("unreachable: abort raises")


REFUSAL_WAIT_S: Final = 5.0
"""How long a refused stream waits for the client's first message before its status goes out."""


async def refuse_stream(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    """End a call whose client streams (Play) with ``code``, once its first message has arrived (or
    ``REFUSAL_WAIT_S`` passed). A status that overtakes the client's first write reaches a grpc.aio
    client as INTERNAL, "Internal error from Core", instead of ``code`` (grpc/grpc#36066): a bot with a
    wrong token was told its connection broke, now and then, rather than that its token is wrong."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(context.read(), REFUSAL_WAIT_S)
    await abort(context, code, message)


Refuse = Callable[[grpc.aio.ServicerContext, grpc.StatusCode, str], Awaitable[NoReturn]]
"""How a call is ended: ``abort``, or ``refuse_stream`` for a stream whose first message may be on its way."""

MISSING_BOT_TOKEN: Final = "missing bot token: send 'authorization: Bearer <token>'"


async def require_bot_token(context: grpc.aio.ServicerContext, token: str | None, refuse: Refuse = abort) -> str:
    """``token``, the call's bearer token; without one the call ends UNAUTHENTICATED, in the same words at
    every call that needs a bot's token (the gateway's OpenSession and Play relay, a referee's Play)."""
    if token is None:
        await refuse(context, grpc.StatusCode.UNAUTHENTICATED, MISSING_BOT_TOKEN)
    return token


async def refuse_bot_token(
    context: grpc.aio.ServicerContext, message: str, *, known: bool = False, refuse: Refuse = abort
) -> NoReturn:
    """End a bot's call whose token may not play: PERMISSION_DENIED when the token is ``known`` (the
    admin's, an owner's, a disabled bot's: retrying with it cannot help), UNAUTHENTICATED when it is
    nobody's. ``message``: the call's own words (``disabled_bot`` for a disabled bot)."""
    code = grpc.StatusCode.PERMISSION_DENIED if known else grpc.StatusCode.UNAUTHENTICATED
    await refuse(context, code, message)


def disabled_bot(name: str, reason: str) -> str:
    """Why a disabled bot's session or stream is refused (``reason``: its owner's or the admin's)."""
    return f"bot {name} is disabled: {reason or '-'}"


def service_name(module: Any, service: str) -> str:
    """The full name of a service of a generated module (``service_name(bot_pb2, "BotService")``)."""
    name: str = module.DESCRIPTOR.services_by_name[service].full_name
    return name


class ListenError(OSError):
    """A server cannot listen on its address: the port is taken (by any process), or the address is
    not one of this machine's."""


class _Undecodable:
    """What a request that is not a valid message decodes to (``EdgeInterceptor``)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _decoding(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as e:  # protobuf's DecodeError, or text that is not UTF-8
            return _Undecodable(str(e) or type(e).__name__)

    return decode


def _malformed(method: str, request: _Undecodable) -> str:
    return f"malformed request to {method}: {request.reason}"


def malformed(method: str, request: Any) -> str | None:
    """Why a request that a handler read itself (``context.read()``, not the request iterator
    ``EdgeInterceptor`` guards) is not a message of ``method``'s type, or None: the handler ends the
    stream with INVALID_ARGUMENT and this."""
    return _malformed(method, request) if isinstance(request, _Undecodable) else None


class EdgeInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Every server's first look at a call: a request body that is not a valid message is answered
    ``INVALID_ARGUMENT`` with the parser's reason. (gRPC itself answers ``UNKNOWN``: the handler's
    deserializer raised.) A streamed request stops at the first bad message, with that status; a handler
    that reads its stream itself (``context.read()``) checks each message with ``malformed``.

    It keeps the handler it got for each method, so the interceptors after it (``new_server``'s
    ``interceptors``) must return handlers that do not depend on the call: per-call checks belong in
    the handler's behaviour."""

    def __init__(self) -> None:
        self._handlers: dict[str, Any] = {}

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        method: str = details.method
        if method in self._handlers:
            return self._handlers[method]
        handler = await continuation(details)
        guarded = _guard(method, handler)
        if handler is not None:  # the methods served, not every name a client may send
            self._handlers[method] = guarded
        return guarded


def _guard(method: str, handler: Any) -> Any:
    """``handler`` with a deserializer that never raises and a behaviour that refuses what it could not
    decode. Left as it is: a streamed request to a plain (not async) function, which our servers have none of."""
    if handler is None or handler.request_deserializer is None:
        return handler
    kind = ("stream" if handler.request_streaming else "unary") + "_" + ("stream" if handler.response_streaming
                                                                         else "unary")  # fmt: skip
    behavior = getattr(handler, kind)
    if handler.request_streaming:

        async def requests(iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for request in iterator:
                if isinstance(request, _Undecodable):  # end the stream here; the call ends with this status
                    context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
                    context.set_details(_malformed(method, request))
                    return
                yield request

        if inspect.isasyncgenfunction(behavior):

            async def stream_gen(iterator: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                async for response in behavior(requests(iterator, context), context):
                    yield response

            wrapped: Any = stream_gen
        elif inspect.iscoroutinefunction(behavior):

            async def stream_coro(iterator: Any, context: grpc.aio.ServicerContext) -> Any:
                return await behavior(requests(iterator, context), context)

            wrapped = stream_coro
        else:
            return handler
    elif handler.response_streaming and (inspect.isasyncgenfunction(behavior) or inspect.isgeneratorfunction(behavior)):

        async def unary_gen(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, _malformed(method, request))
            if inspect.isasyncgenfunction(behavior):
                async for response in behavior(request, context):
                    yield response
            else:
                for response in behavior(request, context):
                    yield response

        wrapped = unary_gen
    elif inspect.iscoroutinefunction(behavior) or not handler.response_streaming:

        async def unary_coro(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if isinstance(request, _Undecodable):
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, _malformed(method, request))
            result = behavior(request, context)  # a plain function runs in the event loop, as gRPC runs it
            return await result if inspect.isawaitable(result) else result

        wrapped = unary_coro
    else:
        return handler
    return handler._replace(request_deserializer=_decoding(handler.request_deserializer), **{kind: wrapped})


def new_server(*interceptors: grpc.aio.ServerInterceptor) -> grpc.aio.Server:
    """A gRPC server as every service of the project runs one: ``SERVER_OPTIONS`` (message limits,
    keepalive, no port sharing) and ``EdgeInterceptor`` (malformed requests are INVALID_ARGUMENT),
    then ``interceptors``. Add the servicers, then ``serve`` it."""
    return grpc.aio.server(options=SERVER_OPTIONS, interceptors=[EdgeInterceptor(), *interceptors])


async def serve(server: grpc.aio.Server, services: Sequence[str], address: str, tls: ServerTls | None = None) -> int:
    """Start ``server`` (from ``new_server``, its servicers added) on ``address`` with gRPC health
    checking (every one of ``services`` and the whole server SERVING) and reflection, so grpcurl and
    grpc_health_probe work; TLS with ``tls``, else plaintext. Returns the port (``address`` with port 0:
    any free port).
    ``ListenError`` when it cannot listen there (a port in use by any process is never shared)."""
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = (*services, service_name(health_pb2, "Health"), reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    try:
        if tls is None:
            port: int = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, tls.credentials())
    except RuntimeError:  # gRPC's "Failed to bind to address"
        port = 0
    if not port:
        raise ListenError(
            errno.EADDRINUSE, f"cannot listen on {address}: the port is in use, or that is not an address of this host"
        )
    await server.start()
    for name in ("", *services):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    return port
