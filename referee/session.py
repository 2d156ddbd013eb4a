"""A bot's stream as the referee holds it: ``Session`` is the runner's SeatChannel for each seat the
stream's bot holds, queueing the protobuf messages (MatchStarted, Turn, MatchEnded) that the stream's
writer (``referee.server.BotServicer``) sends; the host (``referee.host.Referee``) opens and closes them."""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from referee.match import Match, Seat
from referee.wire import bot_pb2, match_pb2
from referee.wire.contract import MAX_BATCH, MAX_MESSAGE_BYTES, control_to_proto, result_to_proto
from referee.wire.values import MatchResult

BATCH_BYTES = MAX_MESSAGE_BYTES // 2
"""A ResponseBatch stops growing at this size, so that any client's default receive limit takes it."""


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
        writer writes: answering inline there cost many of the referee's moves per second with thousands
        of matches (docs/benchmarks.md, "Figures behind the code's choices")."""
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


def add_history(records: Any, match: Match, start: int) -> None:
    """The match's plies from ``start`` on, added to a message's repeated PlyRecord field."""
    add = records.add
    for i, (actor, text) in enumerate(match.history[start:], start):
        add(ply=i, actor=actor, action=text)
