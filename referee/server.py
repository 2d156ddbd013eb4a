"""The referee's gRPC server: bot sessions (BotService), match control (RefereeService), health and
reflection. Protobuf conversion happens here and nowhere else in the referee."""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import json
import secrets
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog

from referee import games, transcript
from referee.match import SDK_VERSION, Match, RefusalError, Seat
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc, match_pb2, referee_pb2, referee_pb2_grpc
from referee.wire.contract import (
    MAX_BATCH,
    MAX_MESSAGE_BYTES,
    NO_BATCHES,
    TOO_LONG,
    abort,
    bearer,
    control_from_proto,
    control_to_proto,
    malformed,
    new_server,
    refuse_bot_token,
    refuse_stream,
    require_bot_token,
    result_to_proto,
    serve,
    service_name,
    to_proto_enum,
)
from referee.wire.tls import ServerTls
from referee.wire.values import MatchResult, RefusalCode, bot_text_error, token_sha256

log = structlog.get_logger("referee.server")

MAX_ACTION_CHARS = 200
BATCH_BYTES = MAX_MESSAGE_BYTES // 2
"""A ResponseBatch stops growing at this size, so that any client's default receive limit takes it."""
_HEX_DIGITS = frozenset("0123456789abcdef")
REFEREE_VERSION = SDK_VERSION
PLAY = f"/{service_name(bot_pb2, 'BotService')}/Play"
SHUTTING_DOWN = "the referee is shutting down; reconnect (an arena resumes the match on another worker)"
MOVED = "the match moved to another worker: follow it there (the arena's gateway does so itself)"


@dataclass(eq=False)
class Session:
    """One connected bot stream. Implements the runner's SeatChannel by queueing protobuf messages in
    ``outbox``, which Play (the stream's writer) writes; the session's reader hands it the bot's
    requests, and writes the answers of a one-match stream itself (``answers_inline``)."""

    session_id: str
    token_hash: str
    bot_name: str = ""
    bot_version: str = ""
    match_filter: frozenset[str] = frozenset()
    outbox: deque[bot_pb2.PlayResponse | None] = field(default_factory=deque)  # None: the stream ends
    seats: set[tuple[str, int]] = field(default_factory=set)
    hello: bool = False
    view_json: bool = True
    acks: bool = False
    batches: bool = False  # the bot reads ResponseBatch and may send ActionBatch
    identity: str | None = None  # the bot's registered name, when an authorizer vouched for the token
    revoked: str = ""  # why the referee ended the session (its token stopped being valid)
    refused: str = ""  # why the referee ended the stream with INVALID_ARGUMENT (its Hello; a batch too long)
    closing: str = ""  # why the referee ended the session as it shut down (UNAVAILABLE: reconnect elsewhere)
    holding: bool = False  # the reader is handling one of this stream's requests (``send``)
    writing: bool = False  # the reader is writing its answer itself (``BotServicer._read``); Play waits
    _waiter: asyncio.Future[None] | None = field(default=None, repr=False)  # Play, waiting for messages
    _turns: deque[tuple[bot_pb2.PlayResponse, Match, int, int]] = field(default_factory=deque, repr=False)
    """The Turns in ``outbox``, in its order, with their match, seat and turn id (``_leaving``)."""
    _waking: bool = False  # a wake of the writer is due on the loop's next pass

    def wants(self, match_id: str) -> bool:
        return not self.match_filter or match_id in self.match_filter

    def holds(self, seat: Seat) -> bool:
        """Whether this session's bot sits in ``seat``: by the token the match was started with, or by
        the registered name the authorizer gave (a bot whose token was rotated gets its seats back)."""
        return seat.token_sha256 == self.token_hash or (self.identity is not None and seat.bot_name == self.identity)

    def send(self, message: bot_pb2.PlayResponse) -> None:
        """Queue a message for the bot. The writer wakes on the loop's next pass, so that the Turns of all
        the answers read in one pass leave together, in fewer gRPC writes; what answers this stream's own
        request (``holding``: an acknowledgement, a refusal, the next Turn when the bot holds the next seat
        too) leaves as soon as the request is handled (``BotServicer._read``)."""
        self.outbox.append(message)
        if not self.holding and self._waiter is not None and not self._waking:
            self._waking = True
            asyncio.get_running_loop().call_soon(self._wake_later)

    def _wake_later(self) -> None:
        self._waking = False
        self.wake()

    def end(self) -> None:
        """The stream ends after what is queued (its status from ``revoked``, ``refused``, ``closing``)."""
        self.outbox.append(None)
        self.wake()

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # cancelled: the writer's task is being cancelled
                waiter.set_result(None)

    def answers_inline(self) -> bool:
        """Whether the reader should write this stream's answer itself (``BotServicer._read``): the
        writer waits, idle, and the stream holds seats of one match at most, so nothing else can come in
        for it before the bot has the answer. A stream that carries many matches reads on while its
        writer writes: with 3,000 matches on 128 streams, answering inline cost 25 % of the referee's
        moves per second."""
        if self._waiter is None:
            return False
        seats = self.seats
        if len(seats) <= 1:
            return True
        first = None
        for match_id, _ in seats:
            if first is None:
                first = match_id
            elif match_id != first:
                return False
        return True

    async def ready(self) -> None:
        """Wait until there is something to write and the reader is not writing."""
        while not self.outbox or self.writing:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None

    def take(self) -> bot_pb2.PlayResponse | None:
        """The next thing to write (after ``ready``): a message, or what waits as one ResponseBatch
        (at most MAX_BATCH messages, ~BATCH_BYTES) when the stream takes batches; None: the stream ends."""
        message = self._pop()
        if message is None:
            return None
        outbox = self.outbox
        if not self.batches or not outbox or outbox[0] is None:
            return message
        batch = bot_pb2.PlayResponse()
        items = batch.batch.messages
        items.append(message)
        size = message.ByteSize()
        while len(items) < MAX_BATCH and outbox and (nxt := outbox[0]) is not None:
            size += nxt.ByteSize()
            if size > BATCH_BYTES:
                break
            outbox.popleft()
            self._leaving(nxt)
            items.append(nxt)
        return batch if len(items) > 1 else message

    async def get(self) -> bot_pb2.PlayResponse | None:
        """The next message, one at a time (None: the stream ended), for a consumer in the referee's
        process (tests, tools) instead of a gRPC stream."""
        await self.ready()
        return self._pop()

    def _pop(self) -> bot_pb2.PlayResponse | None:
        """The outbox's next message, which leaves the referee now (``_leaving``); None: the stream ends."""
        message = self.outbox.popleft()
        if message is not None:
            self._leaving(message)
        return message

    def _leaving(self, message: bot_pb2.PlayResponse) -> None:
        """``message`` leaves the referee for the bot: when it is a Turn, the turn's clock starts now."""
        turns = self._turns
        if turns and turns[0][0] is message:
            _, match, seat, turn_id = turns.popleft()
            match.turn_handed_off(seat, turn_id)

    # SeatChannel
    def match_started(self, match: Match, seat: int) -> None:
        self.send(
            bot_pb2.PlayResponse(
                match_started=bot_pb2.MatchStarted(
                    match_id=match.match_id,
                    game_id=match.spec.game_id,
                    seat=seat,
                    bot_names=[s.bot_name for s in match.seats],
                    time_control=control_to_proto(match.control),
                    seed_sha256=match.seed_sha256,
                    rated=match.spec.rated,
                )
            )
        )

    def turn(self, match: Match, seat: int, turn_id: int, history_from: int, move_ms: int, bank_ms: int) -> None:
        state = match.state
        message = bot_pb2.PlayResponse()
        turn = message.turn  # filled in place: a Turn built apart would be copied into the message
        turn.match_id = match.match_id
        turn.seat = seat
        turn.turn_id = turn_id
        turn.ply = len(match.history)
        add_history(turn.history, match, history_from)
        if self.view_json:
            turn.view_json = json.dumps(state.view(seat).to_dict(), separators=(",", ":"))
        turn.legal_actions.extend([str(a) for a in state.legal_actions()])
        turn.move_ms = move_ms
        turn.time_bank_ms = bank_ms
        self._turns.append((message, match, seat, turn_id))
        self.send(message)

    def match_ended(self, match: Match, seat: int, result: MatchResult, history_from: int) -> None:
        message = bot_pb2.PlayResponse()
        ended = message.match_ended
        ended.result.CopyFrom(_result_message(result))
        add_history(ended.history, match, history_from)
        self.send(message)


@functools.lru_cache(maxsize=64)
def _result_message(result: MatchResult) -> match_pb2.MatchResult:
    """A result as sent in MatchEnded: built once for all the match's seats (the message that takes it
    copies it; never changed in place)."""
    return result_to_proto(result)


def _refusal(
    action: bot_pb2.SubmitAction, code: RefusalCode, reason: str, remaining_ms: int = 0
) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(
        refused=bot_pb2.ActionRefused(
            match_id=action.match_id,
            seat=action.seat,
            turn_id=action.turn_id,
            action=action.action[:MAX_ACTION_CHARS],
            code=to_proto_enum(code),  # type: ignore[arg-type]
            reason=reason,
            remaining_ms=remaining_ms,
        )
    )


def _accepted(session: Session, action: bot_pb2.SubmitAction, taken: Any, think_ms: int) -> None:
    """A taken action's acknowledgement (``Hello.want_acks``), queued before the match's next Turn."""
    session.send(
        bot_pb2.PlayResponse(
            accepted=bot_pb2.ActionAccepted(
                match_id=action.match_id, seat=action.seat, turn_id=action.turn_id, action=str(taken),
                think_ms=think_ms,
            )
        )
    )  # fmt: skip


def add_history(records: Any, match: Match, start: int) -> None:
    """The match's plies from ``start`` on, added to a message's repeated PlyRecord field."""
    add = records.add
    for i, (actor, text) in enumerate(match.history[start:], start):
        add(ply=i, actor=actor, action=text)


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


Authorizer = Callable[[Collection[str]], Awaitable[Mapping[str, str]]]
"""Token hashes -> the registered bot name of each one still valid (known, current, bot enabled). The
arena's workers ask the registry; without one, a referee admits the tokens of its matches' seats."""


class Referee:
    """Hosts matches and bot sessions. Servicers delegate here; the arena hooks ``on_result``.

    ``admin_token``: needed on every RefereeService call when set. ``authorizer``: consulted when a bot
    opens a session and by ``revalidate`` (the arena calls it every second), so that a rotated-away
    token or a disabled bot stops playing at once.
    """

    def __init__(
        self,
        *,
        admin_token: str | None = None,
        keep_finished_s: float = 600.0,
        authorizer: Authorizer | None = None,
        hold_results: bool = False,
    ) -> None:
        self.admin_token = admin_token
        # the host (an arena worker) records each result before the bots hear it: ``announce`` / ``abandon``
        self.hold_results = hold_results
        self.authorizer = authorizer
        self.keep_finished_s = keep_finished_s  # finished matches stay queryable this long, then are dropped
        self.matches: dict[str, Match] = {}
        self.tasks: dict[str, asyncio.Task[MatchResult]] = {}
        self.sessions: dict[str, set[Session]] = {}  # token hash -> live sessions
        self.identities: dict[str, set[Session]] = {}  # registered bot name -> live sessions
        self.bot_tokens: dict[str, str] = {}  # token hash -> bot name, for bots not yet seated
        self.on_result: list[Callable[[Match, MatchResult], Any]] = []
        self._ids = itertools.count(1)

    def allow_token(self, token_hash: str, bot_name: str) -> None:
        self.bot_tokens[token_hash] = bot_name

    def known_token(self, token_hash: str) -> bool:
        if token_hash in self.bot_tokens:
            return True
        return any(s.token_sha256 == token_hash for m in self.matches.values() if m.result is None for s in m.seats)

    async def admit(self, token_hash: str) -> tuple[bool, str | None]:
        """Whether a bot token may open a session here, and the registered name it belongs to."""
        if self.authorizer is None:
            return self.known_token(token_hash), None
        name = (await self.authorizer([token_hash])).get(token_hash)
        return name is not None, name

    async def revalidate(self, check: Authorizer | None = None) -> int:
        """End the sessions whose token is no longer valid (rotated away, bot disabled) by ``check``
        (default: the authorizer); returns how many. An error of ``check`` ends none."""
        check = check or self.authorizer
        if check is None:
            return 0
        hashes = {h for h, sessions in self.sessions.items() if sessions}
        if not hashes:
            return 0
        valid = await check(hashes)
        ended = 0
        for token_hash in hashes - set(valid):
            for session in list(self.sessions.get(token_hash, ())):
                self.revoke(session, "the bot's token was rotated or the bot was disabled")
                ended += 1
        return ended

    def revoke(self, session: Session, reason: str) -> None:
        """End a session: its stream closes with UNAUTHENTICATED and ``reason``; its seats are let go."""
        session.revoked = reason
        self.close_session(session)
        session.end()

    def start_match(self, spec: MatchSpec, resume_from: Sequence[str] | None = None) -> Match:
        """Run a match; with ``resume_from`` (its transcript lines so far), take it over where it stopped."""
        if spec.match_id in self.matches:
            raise KeyError(f"match {spec.match_id!r} already exists")
        hold = self.hold_results
        match = Match(spec, hold_end=hold) if resume_from is None else Match.resume(spec, resume_from, hold_end=hold)
        self.matches[spec.match_id] = match
        for seat, s in enumerate(match.seats):
            for session in self._holders(s):
                if session.hello and session.wants(spec.match_id):
                    session.seats.add((spec.match_id, seat))
                    match.attach(seat, session, session.bot_version)
        task = asyncio.get_running_loop().create_task(match.run(), name=f"match-{spec.match_id}")
        self.tasks[spec.match_id] = task
        task.add_done_callback(functools.partial(self._done, match))
        return match

    def _done(self, match: Match, task: asyncio.Task[MatchResult]) -> None:
        asyncio.get_running_loop().call_later(self.keep_finished_s, self._forget, match.match_id)
        unfinished = task.cancelled() or task.exception() is not None
        if not self.hold_results:
            self._release_seats(match)
        elif unfinished:  # the host will not record it: another worker takes the match over
            self.abandon(match.match_id, MOVED)
        # else the host records the result, then calls ``announce`` (or ``abandon``)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("match crashed", match_id=match.match_id, error=repr(error))
            return
        for callback in self.on_result:
            callback(match, task.result())

    def announce(self, match_id: str) -> None:
        """The host recorded the match's result: its bots are told now (``hold_results``)."""
        match = self.matches.get(match_id)
        if match is None or match.result is None or match.end_announced:
            return
        match.announce_end()
        self._release_seats(match)

    def abandon(self, match_id: str, reason: str) -> None:
        """The host cannot finish the match here (another worker holds it now): its bots are told no
        result. A stream that named only this match ends with UNAVAILABLE and ``reason``, so that it
        follows the match to the worker that runs it now (the gateway's relay does so at once); other
        streams just leave its seats."""
        match = self.matches.pop(match_id, None)
        self.tasks.pop(match_id, None)
        if match is None:
            return
        for seat, s in enumerate(match.seats):
            for session in self._holders(s):
                if (match_id, seat) not in session.seats:
                    continue
                session.seats.discard((match_id, seat))
                if session.match_filter == frozenset((match_id,)):
                    session.closing = reason
                    self.close_session(session)
                    session.end()
            s.channel = None

    def _release_seats(self, match: Match) -> None:
        """The match is over: its seats leave the sessions that held them, so that a stream that plays
        match after match does not keep them all (an action for it is then refused as too late)."""
        match_id = match.match_id
        for seat, s in enumerate(match.seats):
            for session in self._holders(s):
                session.seats.discard((match_id, seat))

    def _holders(self, seat: Seat) -> set[Session]:
        """The open sessions that may sit in ``seat``: by the token it was started with, or by the bot's
        registered name (``Session.holds``)."""
        return self.sessions.get(seat.token_sha256, set()) | self.identities.get(seat.bot_name, set())

    def _forget(self, match_id: str) -> None:
        self.matches.pop(match_id, None)
        self.tasks.pop(match_id, None)

    def open_session(self, token_hash: str, identity: str | None = None) -> Session:
        session = Session(session_id=f"s{next(self._ids)}", token_hash=token_hash, identity=identity)
        self.sessions.setdefault(token_hash, set()).add(session)
        if identity is not None:
            self.identities.setdefault(identity, set()).add(session)
        return session

    def hello(self, session: Session, hello: bot_pb2.Hello) -> None:
        problem = bot_text_error(bot_name=hello.bot_name, bot_version=hello.bot_version, sdk_version=hello.sdk_version)
        if problem is not None:  # the stream ends with INVALID_ARGUMENT; nothing of it is kept
            session.refused = problem
            session.end()
            return
        session.hello = True
        session.bot_name = hello.bot_name
        session.bot_version = hello.bot_version
        session.match_filter = frozenset(hello.match_ids)
        session.view_json = not hello.omit_view_json
        session.acks = hello.want_acks
        session.batches = hello.accept_batches
        session.send(
            bot_pb2.PlayResponse(
                welcome=bot_pb2.Welcome(
                    session_id=session.session_id, referee_version=REFEREE_VERSION,
                    max_message_bytes=MAX_MESSAGE_BYTES, batches=session.batches,
                )
            )
        )  # fmt: skip
        for match in self.matches.values():
            if not session.wants(match.match_id):
                continue
            if match.result is not None and match.match_id not in session.match_filter:
                continue  # an ended match is told only to a stream that names it (one back after the end)
            for seat, s in enumerate(match.seats):
                if session.holds(s):
                    if not match.end_announced:
                        session.seats.add((match.match_id, seat))
                    match.attach(seat, session, session.bot_version)

    def close_session(self, session: Session) -> None:
        self.sessions.get(session.token_hash, set()).discard(session)
        if session.identity is not None:
            self.identities.get(session.identity, set()).discard(session)
        for match_id, seat in session.seats:
            match = self.matches.get(match_id)
            if match is not None:
                match.detach(seat, session)
        session.seats.clear()

    def submit(self, session: Session, action: bot_pb2.SubmitAction) -> bot_pb2.PlayResponse | None:
        """The refusal to send back, or None: taken (the acknowledgement, when the bot wants them, is
        queued already, and the match has moved on to its next decision)."""
        if not session.hello:
            return _refusal(action, RefusalCode.MALFORMED, "send Hello before any action")
        text = action.action
        if len(text) > MAX_ACTION_CHARS:
            return _refusal(action, RefusalCode.MALFORMED, f"an action is at most {MAX_ACTION_CHARS} characters")
        match_id = action.match_id
        seat = action.seat
        match = self.matches.get(match_id)
        if match is None:
            return _refusal(action, RefusalCode.UNKNOWN_MATCH, f"no match {match_id!r} on this referee")
        if (match_id, seat) not in session.seats:
            if 0 <= seat < len(match.seats) and session.holds(match.seats[seat]):
                if match.result is not None:
                    return _refusal(action, RefusalCode.STALE_TURN, "the match is over")  # its seats were released
                task = self.tasks.get(match_id)
                if task is not None and task.cancelled():
                    # Called off by its host (arena play's SPRT has decided): an action already on its way
                    # is no mistake of the bot's, and a refusal would be a warning in its log; its bots are
                    # stopped next, so nothing is answered.
                    return None
            reason = f"seat {seat} of {match_id} is not your bot's seat"
            return _refusal(action, RefusalCode.PERMISSION_DENIED, reason)
        acknowledge = functools.partial(_accepted, session, action) if session.acks else None
        try:
            match.submit(seat, action.turn_id, text, acknowledge)
        except RefusalError as e:
            return _refusal(action, e.code, e.reason, e.remaining_ms)
        return None

    def submit_batch(self, session: Session, actions: Sequence[bot_pb2.SubmitAction]) -> list[bot_pb2.PlayResponse]:
        """An ActionBatch of at most MAX_BATCH actions (a longer one ends the stream: ``BotServicer``):
        each taken in order as if it had come alone; the refusals to send back. Refused action by action
        on a stream whose Welcome did not offer batches."""
        if not session.hello or session.batches:  # no Hello: each action is refused as such
            return [reply for a in actions if (reply := self.submit(session, a)) is not None]
        return [_refusal(a, RefusalCode.MALFORMED, NO_BATCHES) for a in actions]

    async def shutdown(self, drain_s: float = 1.0) -> None:
        """Stop every match, then end every bot's stream with UNAVAILABLE and a reason, and wait up to
        ``drain_s`` for them to go: a stream still open when the process exits is cancelled under gRPC,
        which logs an error with a traceback for each (hundreds on a busy worker's every restart)."""
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        for sessions in self.sessions.values():
            for session in sessions:
                session.closing = SHUTTING_DOWN
                session.end()
        deadline = asyncio.get_running_loop().time() + drain_s
        while any(self.sessions.values()) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, referee: Referee) -> None:
        self.referee = referee

    async def Play(  # noqa: N802 - gRPC method name
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> None:
        """gRPC's reader/writer form: this writes with ``context.write`` and its reader task reads with
        ``context.read``. Yielding the messages and taking ``request_iterator`` puts three async generators
        (gRPC's, ``EdgeInterceptor``'s two) in each message's way, ~3 % of a move's round trip."""
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
        except KeyError as e:
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
        """The match's transcript lines as they come; other seats' refused text and reasons only for the admin."""
        admin = await self._admin(context)
        match = self.referee.matches.get(request.match_id)
        if match is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {request.match_id!r}")
        async for line in match.follow():
            if not admin and '"refusal"' in line:
                event = transcript.parse_event(line)
                if isinstance(event, transcript.Refusal):
                    line = event.public().to_line()
            yield referee_pb2.WatchMatchResponse(transcript_line=line)
        if match.result is not None:
            yield referee_pb2.WatchMatchResponse(result=result_to_proto(match.result))


_heap_frozen: list[bool] = [False]


def freeze_startup_heap() -> None:
    """Move every object alive now (modules, classes, functions: the start-up heap) out of the
    garbage collector's reach, once per process. A full collection otherwise walks all of them again
    each time (~60k objects, 30-100 ms with the loop stopped, so every open turn loses that time)."""
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
