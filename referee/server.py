"""The referee's gRPC server: the servicers of bot streams (BotService) and match control
(RefereeService), with health and reflection. They turn protobuf requests into calls on the host
(``referee.host.Referee``) and its answers into statuses; a bot's stream is a ``referee.session.Session``."""

from __future__ import annotations

import asyncio
import gc
import secrets
from collections.abc import AsyncIterator
from typing import Any

import grpc
import structlog

from referee import games, transcript
from referee.host import MatchExistsError, Referee
from referee.session import Session
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc, match_pb2, referee_pb2, referee_pb2_grpc
from referee.wire.contract import (
    MAX_BATCH,
    TOO_LONG,
    abort,
    bearer,
    control_from_proto,
    malformed,
    new_server,
    refuse_bot_token,
    refuse_stream,
    require_bot_token,
    result_to_proto,
    serve,
    service_name,
)
from referee.wire.tls import ServerTls
from referee.wire.values import token_sha256

log = structlog.get_logger("referee.server")

_HEX_DIGITS = frozenset("0123456789abcdef")
PLAY = f"/{service_name(bot_pb2, 'BotService')}/Play"


def spec_from_proto(p: match_pb2.MatchSpec) -> MatchSpec:
    """Validates as it converts: ValueError says what is wrong."""
    if not p.match_id:
        raise ValueError("match_id is required")
    try:
        game = games.get(p.game_id)
    except KeyError as e:
        raise ValueError(str(e.args[0])) from None
    seats = tuple(SeatSpec(s.seat, s.bot_name, s.token_sha256) for s in p.seats)
    if sorted(s.seat for s in seats) != list(range(game.num_players)):
        raise ValueError(f"{p.game_id} needs seats 0..{game.num_players - 1}, each once")
    for s in seats:  # sessions are matched by the lowercase digest: any other spelling could never join
        if len(s.token_sha256) != 64 or not set(s.token_sha256) <= _HEX_DIGITS:  # (not echoed: it may be a token)
            raise ValueError(f"seat {s.seat}: token_sha256 must be the lowercase hex SHA-256 of the bot's token, "
                             "64 characters 0-9a-f")  # fmt: skip
    kwargs: dict[str, Any] = {}
    if p.seed:
        kwargs["seed"] = p.seed
    return MatchSpec(
        match_id=p.match_id,
        game_id=p.game_id,
        seats=seats,
        time_control=control_from_proto(p.time_control, p.game_id) if p.HasField("time_control") else None,
        rated=p.rated,
        **kwargs,
    )


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, referee: Referee) -> None:
        self.referee = referee

    async def Play(  # noqa: N802 - gRPC method name
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> None:
        """gRPC's reader/writer form: this writes with ``context.write`` and its reader task reads with
        ``context.read``. Yielding the messages and taking ``request_iterator`` puts three async generators
        (gRPC's, ``EdgeInterceptor``'s two) in each message's way (the cost: docs/benchmarks.md)."""
        token = await require_bot_token(context, bearer(context), refuse_stream)
        token_hash = token_sha256(token)
        admitted, identity = await self.referee.admit(token_hash)
        if not admitted:
            await refuse_bot_token(context, "unknown bot token (or rotated, or its bot disabled)", refuse=refuse_stream)
        session = self.referee.open_session(token_hash, identity)
        slog = log.bind(session_id=session.session_id)
        reader = asyncio.get_running_loop().create_task(self._read(context, session))
        try:
            while True:
                if not session.outbox or session.writing:
                    await session.ready()
                message = session.take()
                if message is None:
                    if session.revoked:
                        await abort(context, grpc.StatusCode.UNAUTHENTICATED, session.revoked)
                    if session.refused:
                        await abort(context, grpc.StatusCode.INVALID_ARGUMENT, session.refused)
                    if session.closing:
                        await abort(context, grpc.StatusCode.UNAVAILABLE, session.closing)
                    return
                await context.write(message)
        finally:
            reader.cancel()
            self.referee.close_session(session)
            slog.info("bot session closed", bot_name=session.bot_name)

    async def _read(self, context: grpc.aio.ServicerContext, session: Session) -> None:
        """Handle the bot's messages in order; the match goes on inside each action's submit. What a
        message produces for this same stream goes out before the next read: written here when Play (the
        writer) is idle, as an echo server answers, else by Play as soon as its write in flight is done
        (``Session.writing`` keeps the two from writing at once). A message that is not a PlayRequest
        ends the stream with INVALID_ARGUMENT."""
        read = context.read
        try:
            while (request := await read()) is not grpc.aio.EOF:
                if (problem := malformed(PLAY, request)) is not None:
                    session.refused = problem
                    return
                session.holding = True
                try:
                    kind = request.WhichOneof("message")
                    if kind == "action":
                        reply = self.referee.submit(session, request.action)
                        if reply is not None:
                            session.send(reply)
                    elif kind == "actions":
                        if len(request.actions.actions) > MAX_BATCH:  # one refusal each would multiply the input
                            session.refused = TOO_LONG
                            return
                        for reply in self.referee.submit_batch(session, request.actions.actions):
                            session.send(reply)
                    elif kind == "hello":
                        self.referee.hello(session, request.hello)
                    elif kind == "ping":
                        session.send(bot_pb2.PlayResponse(pong=bot_pb2.Pong(nonce=request.ping.nonce)))
                finally:
                    session.holding = False
                outbox = session.outbox
                if outbox:
                    if outbox[0] is None or not session.answers_inline():
                        session.wake()
                        continue
                    # The writer is idle: the reader writes the answer itself, as an echo server would,
                    # before it sets up its next read, and without waking another task.
                    session.writing = True
                    try:
                        await context.write(session.take())
                    except Exception as e:  # the call ended under the write (gRPC's ExecuteBatchError, AbortError)
                        log.info("bot stream ended during a write", session_id=session.session_id, error=repr(e))
                        return
                    finally:
                        session.writing = False
                    if outbox:
                        session.wake()
        except (asyncio.CancelledError, grpc.aio.AioRpcError):
            pass
        finally:
            session.end()


class RefereeServicer(referee_pb2_grpc.RefereeServiceServicer):
    def __init__(self, referee: Referee) -> None:
        self.referee = referee

    async def _admin(self, context: grpc.aio.ServicerContext) -> bool:
        """Every RefereeService call needs the admin token when the referee has one: a caller without a
        known token is UNAUTHENTICATED, a bot is PERMISSION_DENIED. True when the caller is the admin."""
        token = bearer(context)
        admin = self.referee.admin_token
        if admin is None:
            return False
        if token is not None and secrets.compare_digest(token.encode(), admin.encode()):
            return True
        if token is not None and (await self.referee.admit(token_sha256(token)))[0]:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, "RefereeService needs the admin token, not a bot's")
        await abort(context, grpc.StatusCode.UNAUTHENTICATED, "this call needs the referee's admin token")

    async def StartMatch(  # noqa: N802
        self, request: referee_pb2.StartMatchRequest, context: grpc.aio.ServicerContext
    ) -> referee_pb2.StartMatchResponse:
        await self._admin(context)
        try:
            spec = spec_from_proto(request.spec)
        except ValueError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        try:
            match = self.referee.start_match(spec)
        except MatchExistsError as e:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e.args[0]))
        return referee_pb2.StartMatchResponse(match_id=match.match_id, seed_sha256=match.seed_sha256)

    async def GetMatch(  # noqa: N802
        self, request: referee_pb2.GetMatchRequest, context: grpc.aio.ServicerContext
    ) -> referee_pb2.GetMatchResponse:
        await self._admin(context)
        match = self.referee.matches.get(request.match_id)
        if match is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {request.match_id!r}")
        response = referee_pb2.GetMatchResponse(
            match_id=match.match_id, finished=match.result is not None, ply=match.ply
        )
        if match.result is not None:
            response.result.CopyFrom(result_to_proto(match.result))
        return response

    async def WatchMatch(  # noqa: N802
        self, request: referee_pb2.WatchMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[referee_pb2.WatchMatchResponse]:
        """The match's transcript lines as they come; the seats' refused texts, reasons and notes only for the admin."""
        admin = await self._admin(context)
        match = self.referee.matches.get(request.match_id)
        if match is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {request.match_id!r}")
        public: frozenset[int] | None = None if admin else frozenset()
        async for line in match.follow():
            yield referee_pb2.WatchMatchResponse(transcript_line=transcript.seat_view(line, public))
        if match.result is not None:
            yield referee_pb2.WatchMatchResponse(result=result_to_proto(match.result))


_heap_frozen: list[bool] = [False]


def freeze_startup_heap() -> None:
    """Move every object alive now (modules, classes, functions: the start-up heap) out of the
    garbage collector's reach, once per process. A full collection otherwise walks all of them again
    each time with the loop stopped, so every open turn loses that time (docs/benchmarks.md, "Figures behind
    the code's choices")."""
    if not _heap_frozen[0]:
        _heap_frozen[0] = True
        gc.collect()
        gc.freeze()


async def start_server(
    referee: Referee, address: str = "127.0.0.1:0", tls: ServerTls | None = None
) -> tuple[grpc.aio.Server, int]:
    """Serve the referee on ``address`` (port 0: any free port), with TLS when ``tls`` is given.
    Returns the server and its port. The first call in a process freezes the start-up heap."""
    freeze_startup_heap()
    server = new_server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(BotServicer(referee), server)  # type: ignore[no-untyped-call]
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(RefereeServicer(referee), server)  # type: ignore[no-untyped-call]
    services = (service_name(bot_pb2, "BotService"), service_name(referee_pb2, "RefereeService"))
    port = await serve(server, services, address, tls)
    log.info("referee serving", address=address, port=port)
    return server, port
