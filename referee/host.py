"""The referee's host of matches: ``Referee`` keeps the matches it runs and the bot sessions that play
them, admits tokens (through the arena's authorizer, or by the seats of its matches), seats sessions,
takes actions and hands each result to ``on_result`` (an arena worker records it before the bots hear
it). The gRPC servicers (``referee.server``) delegate here; a session is ``referee.session.Session``."""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import structlog

from referee.match import SDK_VERSION, Match, RefusalError, Seat
from referee.session import Session
from referee.spec import MatchSpec
from referee.wire import bot_pb2
from referee.wire.contract import MAX_MESSAGE_BYTES, NO_BATCHES, to_proto_enum
from referee.wire.values import MatchResult, RefusalCode, bot_text_error

log = structlog.get_logger("referee.server")  # the name the referee's log lines have always had

MAX_ACTION_CHARS = 200
REFEREE_VERSION = SDK_VERSION
SHUTTING_DOWN = "the referee is shutting down; reconnect (an arena resumes the match on another worker)"
MOVED = "the match moved to another worker: follow it there (the arena's gateway does so itself)"


class MatchExistsError(KeyError):
    """``start_match`` of a match id this referee holds already (RefereeService: ALREADY_EXISTS)."""


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


def _accepted(session: Session, action: bot_pb2.SubmitAction, taken: Any, think_ms: int, note_reason: str) -> None:
    """A taken action's acknowledgement (``Hello.want_acks``), queued before the match's next Turn."""
    session.send(
        bot_pb2.PlayResponse(
            accepted=bot_pb2.ActionAccepted(
                match_id=action.match_id, seat=action.seat, turn_id=action.turn_id, action=str(taken),
                think_ms=think_ms, note_reason=note_reason,
            )
        )
    )  # fmt: skip


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
            raise MatchExistsError(f"match {spec.match_id!r} already exists")
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
            match.submit(seat, action.turn_id, text, acknowledge, action.note)
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
