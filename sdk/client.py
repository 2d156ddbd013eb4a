"""Connecting a bot to a referee: authenticate, receive turns, answer them, reconnect with back-off.

One stream serves every match the bot's token is seated in. For each match the client keeps the
engine state, replaying the history the referee sends, so a bot sees typed views and can search.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import random
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import grpc
import structlog

from referee import games
from referee.wire import bot_pb2, bot_pb2_grpc
from referee.wire.contract import MAX_BATCH, ROUTE_HEADER, bearer_metadata, from_proto_enum, to_proto_enum
from referee.wire.tls import ClientTls, aio_channel
from referee.wire.values import EndReason, RefusalCode, SeatStatus, bot_text_error, fit_note
from sdk.bot import Bot, MatchInfo, MatchOutcome, Noted, Refusal, SeatOutcome, Turn
from sdk.stdio import STDIO_PREFIX, StdioBot

log = structlog.get_logger("sdk.client")

SDK_VERSION = "0.1.0"
MAX_RETRIES_PER_TURN = 4
"""New answers to a refused turn, at most: five answers in all, since the referee's fifth refusal of a turn
ends it with a strike (``referee.match.MAX_REFUSALS_PER_TURN``) and a sixth would only be stale."""


FORFEITED: Final = to_proto_enum(SeatStatus.FORFEITED)

_NOT_RETRIED = {RefusalCode.STALE_TURN, RefusalCode.PERMISSION_DENIED, RefusalCode.UNKNOWN_MATCH}
"""Refusals a new answer cannot mend: the turn is gone or was never the bot's."""


class AuthenticationError(Exception):
    """The referee refused the token: reconnecting will not help."""


class SessionRefusedError(Exception):
    """The referee (or the gateway's relay) refused the stream for good: the match is not the bot's,
    has finished, or the request was malformed. Reconnecting will not help."""

    def __init__(self, message: str, code: grpc.StatusCode) -> None:
        super().__init__(message)
        self.code = code


_REFUSED: Final = frozenset(
    {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION,
     grpc.StatusCode.INVALID_ARGUMENT}
)  # fmt: skip


class BotLoadError(ValueError):
    """A bot spec that gives no playable bot (no such file, module or class, an error importing it, or a
    name or version the referee would refuse); the message says which and why."""


def check_bot(bot: Bot) -> Bot:
    """``bot``, if the referee will accept its ``name`` and ``version`` (``bot_text_error``: at most 64
    printable characters); BotLoadError otherwise, before anything connects."""
    problem = bot_text_error(name=bot.name, version=bot.version)
    if problem is not None:
        raise BotLoadError(f"bot {type(bot).__name__}: {problem}")
    return bot


@dataclass
class _Match:
    info: MatchInfo
    state: Any
    actions: list[Any] = field(default_factory=list)  # the actions played, in ply order
    current: Turn | None = None
    turn_id: int = -1  # the referee's id of ``current``
    retries: int = 0
    note_bytes: int = 0  # what this seat's notes hold in the match, as the referee counts them (fit_note)
    last_note: int = 0  # bytes of the note sent with the last answer (given back if it is refused)
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def plies(self) -> int:
        return len(self.actions)

    def catch_up(self, history: Any) -> None:
        """Apply the plies not yet seen; replay from the start if the referee resends everything."""
        records = list(history)
        if records and records[0].ply == 0 and self.plies:
            self.state = games.get(self.info.game_id).new_state()
            self.actions.clear()
        for record in records:
            if record.ply < self.plies:
                continue
            if record.ply != self.plies:
                raise RuntimeError(f"history gap in {self.info.match_id}: got ply {record.ply}, have {self.plies}")
            action = self.state.parse_action(record.action)
            self.state = self.state.apply(action)
            self.actions.append(action)


class BotClient:
    """Runs ``bot`` against the referee at ``target`` with ``token`` until stopped.

    ``max_matches``: return after this many matches ended (None: run forever).
    """

    def __init__(
        self,
        bot: Bot,
        target: str,
        token: str,
        *,
        match_ids: tuple[str, ...] = (),
        max_matches: int | None = None,
        reconnect: bool = True,
        max_backoff: float = 5.0,
        on_outcome: Callable[[MatchOutcome], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        tls: ClientTls | None = None,
        channel: grpc.aio.Channel | None = None,
        route: str = "",
    ) -> None:
        self.bot = check_bot(bot)
        self.route = route  # behind the arena's Play proxy: the worker's route (MatchAssigned.route)
        self.target = target
        self.tls = tls
        self.channel = channel  # a caller's channel to ``target``, shared and left open; else one per session
        self.token = token
        self.match_ids = match_ids
        self.max_matches = max_matches
        self.reconnect = reconnect
        self.max_backoff = max_backoff
        self.on_outcome = on_outcome
        self.on_error = on_error  # told of each exception the bot's ``act`` raised
        self.matches: dict[str, _Match] = {}
        self.outcomes: list[MatchOutcome] = []
        self.log = log.bind(bot=bot.name)
        self._outbox: asyncio.Queue[bot_pb2.PlayRequest | None] | None = None
        self._stop = asyncio.Event()
        self._batches = False  # the stream takes ActionBatch (its Welcome said so)
        self.connected = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()
        if self._outbox is not None:
            self._outbox.put_nowait(None)

    async def run(self) -> list[MatchOutcome]:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                await self._session()
                backoff = 0.1
            except (AuthenticationError, SessionRefusedError):
                raise
            except (grpc.aio.AioRpcError, ConnectionError) as e:
                self.log.warning("connection lost", error=str(e)[:200])
            finally:
                self.connected.clear()
            if self._done() or not self.reconnect or self._stop.is_set():
                break
            await asyncio.sleep(backoff * (0.5 + random.random()))
            backoff = min(self.max_backoff, backoff * 2)
        return self.outcomes

    def _done(self) -> bool:
        return self.max_matches is not None and len(self.outcomes) >= self.max_matches

    async def _session(self) -> None:
        outbox: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
        self._outbox = outbox
        outbox.put_nowait(
            bot_pb2.PlayRequest(
                hello=bot_pb2.Hello(
                    bot_name=self.bot.name,
                    bot_version=self.bot.version,
                    sdk_version=SDK_VERSION,
                    match_ids=list(self.match_ids),
                    omit_view_json=True,  # we replay the history and build the view locally
                    accept_batches=True,
                )
            )
        )
        self._batches = False  # until a Welcome offers them

        async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
            carried: bot_pb2.PlayRequest | None = None  # taken from the outbox behind a batch, not an action
            ending = False  # the end (None) came out of the outbox behind a batch
            while True:
                item = carried if carried is not None else None if ending else await outbox.get()
                carried = None
                if item is None:
                    return
                if not self._batches or outbox.empty() or not item.HasField("action"):
                    yield item
                    continue
                # answers that wait together (many matches, a busy machine) leave in one message
                batch = bot_pb2.PlayRequest()
                actions = batch.actions.actions
                actions.append(item.action)
                while len(actions) < MAX_BATCH and not outbox.empty():
                    nxt = outbox.get_nowait()
                    if nxt is None:
                        ending = True
                        break
                    if not nxt.HasField("action"):
                        carried = nxt
                        break
                    actions.append(nxt.action)
                yield batch if len(actions) > 1 else item

        async with contextlib.AsyncExitStack() as stack:
            channel = self.channel
            if channel is None:
                channel = await stack.enter_async_context(aio_channel(self.target, self.tls))
            stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]
            metadata = bearer_metadata(self.token) + (((ROUTE_HEADER, self.route),) if self.route else ())
            call = stub.Play(requests(), metadata=metadata)
            try:
                async for message in call:
                    self._handle(message)
                    if self._done():
                        outbox.put_nowait(None)
                        break
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                    raise AuthenticationError(e.details() or "unauthenticated") from None
                if e.code() in _REFUSED:
                    raise SessionRefusedError(e.details() or e.code().name, e.code()) from None
                raise
            finally:
                call.cancel()
                for m in self.matches.values():
                    if m.task is not None:
                        m.task.cancel()

    def _send(self, request: bot_pb2.PlayRequest) -> None:
        if self._outbox is not None:
            self._outbox.put_nowait(request)

    # ----------------------------------------------------------------- messages

    def _handle(self, message: bot_pb2.PlayResponse) -> None:
        kind = message.WhichOneof("message")
        if kind == "batch":
            for inner in message.batch.messages:
                self._handle(inner)
        elif kind == "welcome":
            self._batches = message.welcome.batches
            self.connected.set()
            self.log.info("connected", session_id=message.welcome.session_id)
        elif kind == "match_started":
            self._match_started(message.match_started)
        elif kind == "turn":
            self._turn(message.turn)
        elif kind == "refused":
            self._refused(message.refused)
        elif kind == "match_ended":
            self._match_ended(message.match_ended)

    def _match_started(self, m: bot_pb2.MatchStarted) -> None:
        info = MatchInfo(m.match_id, m.game_id, m.seat, tuple(m.bot_names), m.seed_sha256, m.rated)
        key = f"{m.match_id}/{m.seat}"
        if key not in self.matches:
            self.matches[key] = _Match(info, games.get(m.game_id).new_state())
        self.bot.on_match_start(info)

    def _turn(self, t: bot_pb2.Turn) -> None:
        match = self.matches.get(f"{t.match_id}/{t.seat}")
        if match is None:
            self.log.error("turn for an unknown match", match_id=t.match_id)
            return
        match.catch_up(t.history)
        state = match.state
        legal = state.legal_actions()
        if sorted(map(str, legal)) != sorted(t.legal_actions):
            self.log.error("local engine disagrees with the referee's legal actions", match_id=t.match_id, ply=t.ply)
        turn = Turn(
            match_id=t.match_id,
            game_id=match.info.game_id,
            seat=t.seat,
            ply=t.ply,
            state=state,
            view=state.view(t.seat),
            legal_actions=legal,
            move_ms=t.move_ms,
            time_bank_ms=t.time_bank_ms,
            history=tuple(match.actions),
        )
        match.current = turn
        match.turn_id = t.turn_id
        match.retries = 0
        self._decide(match, turn, t.turn_id)

    def _decide(self, match: _Match, turn: Turn, turn_id: int) -> None:
        if match.task is not None and not match.task.done():
            match.task.cancel()
        match.task = asyncio.get_running_loop().create_task(self._answer(turn, turn_id))

    async def _answer(self, turn: Turn, turn_id: int) -> None:
        try:
            if inspect.iscoroutinefunction(self.bot.act):
                action = await self.bot.act(turn)
            else:
                action = await asyncio.to_thread(self.bot.act, turn)
        except Exception as e:  # a bug in the bot: report it and let the referee's clock decide
            self.log.exception("bot.act raised", match_id=turn.match_id, ply=turn.ply, error=repr(e))
            if self.on_error is not None:
                self.on_error(e)
            return
        note = ""
        if isinstance(action, Noted):
            action, note = action.action, action.note
            note = self._fit_note(turn, str(note) if note is not None else "")
        self._send(
            bot_pb2.PlayRequest(
                action=bot_pb2.SubmitAction(
                    match_id=turn.match_id, seat=turn.seat, turn_id=turn_id, action=str(action), note=note
                )
            )
        )

    def _fit_note(self, turn: Turn, note: str) -> str:
        """The note as the referee will record it (``fit_note``: the same limits and checks), so that
        nothing over them is sent; a cut or dropped note is a warning in the author's log, with why."""
        match = self.matches.get(f"{turn.match_id}/{turn.seat}")
        used = match.note_bytes if match is not None else 0
        kept, why = fit_note(note, used)
        if why:
            self.log.warning("note cut", match_id=turn.match_id, seat=turn.seat, ply=turn.ply, reason=why)
        if match is not None:
            match.last_note = len(kept.encode())
            match.note_bytes += match.last_note
        return kept

    def _refused(self, r: bot_pb2.ActionRefused) -> None:
        code = str(from_proto_enum(RefusalCode, r.code) or "unspecified")
        self.log.warning(
            "action refused", match_id=r.match_id, seat=r.seat, action=r.action, code=code, reason=r.reason
        )
        match = self.matches.get(f"{r.match_id}/{r.seat}")
        if match is not None:  # the refused answer's note was not recorded
            match.note_bytes -= match.last_note
            match.last_note = 0
        if match is None or match.current is None or code in _NOT_RETRIED:
            return
        if r.turn_id != match.turn_id:  # the refusal that struck a turn comes behind the next turn: not its
            return
        if match.retries >= MAX_RETRIES_PER_TURN:
            return
        match.retries += 1
        turn = replace(match.current, refusals=(*match.current.refusals, Refusal(r.action, code, r.reason)))
        match.current = turn
        self._decide(match, turn, r.turn_id)

    def _match_ended(self, e: bot_pb2.MatchEnded) -> None:
        r = e.result
        for key, match in list(self.matches.items()):
            if match.info.match_id != r.match_id:
                continue
            records = e.history
            if not records or records[0].ply <= match.plies:  # a bot in several seats: the message's history
                match.catch_up(records)  # is that of one seat's channel, and may start past another seat's plies
            outcome = outcome_of(r, match.info.seat)
            self.outcomes.append(outcome)
            if match.task is not None:
                match.task.cancel()
            del self.matches[key]
            self.bot.on_match_end(outcome)
            if self.on_outcome is not None:
                self.on_outcome(outcome)


def outcome_of(r: Any, seat: int) -> MatchOutcome:
    """A seat's outcome from a ``MatchResult`` message (MatchEnded's, or a finished match's record)."""
    return MatchOutcome(
        match_id=r.match_id,
        game_id=r.game_id,
        seat=seat,
        end_reason=str(from_proto_enum(EndReason, r.end_reason) or "unspecified"),
        seats=tuple(SeatOutcome(s.seat, s.bot_name, s.score, s.rank, s.status == FORFEITED) for s in r.seats),
        seed=r.seed,
        plies=r.plies,
    )


async def run_bot(bot: Bot, target: str, token: str, **kwargs: Any) -> list[MatchOutcome]:
    return await BotClient(bot, target, token, **kwargs).run()


def load_bot(spec: str, factory: Callable[[str], Bot] | None = None) -> Bot:
    """A bot from ``path/to/file.py:ClassName``, ``package.module:ClassName``, ``stdio:COMMAND`` (or, without a colon,
    ``factory(spec)``), checked with ``check_bot``. BotLoadError says what is wrong with the spec."""
    try:
        return check_bot(_load(spec, factory))
    except BotLoadError:
        raise
    except Exception as e:  # the bot's own module may raise anything while it is imported
        reason = str(e) if isinstance(e, ValueError | LookupError | OSError) else f"{type(e).__name__}: {e}"
        raise BotLoadError(f"cannot load bot {spec!r}: {reason}") from e


def _load(spec: str, factory: Callable[[str], Bot] | None) -> Bot:
    if spec.startswith(STDIO_PREFIX):  # a command speaking the line protocol
        return StdioBot(spec.removeprefix(STDIO_PREFIX))
    if ":" not in spec:
        if factory is not None:
            return factory(spec)
        raise BotLoadError(f"{spec!r}: write FILE.py:ClassName or module:ClassName")
    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise BotLoadError(f"cannot load bot {spec!r}: no file {where}")
        module_spec = importlib.util.spec_from_file_location(f"arena_bot_{path.stem}", path)
        if module_spec is None or module_spec.loader is None:
            raise BotLoadError(f"cannot load bot {spec!r}: {where} is not a Python module")
        module = importlib.util.module_from_spec(module_spec)
        # registered before it runs, as an import would be: dataclasses, typing and pickle look the
        # module up by name while its classes are made; its folder is importable, as with ``python FILE``
        sys.modules[module_spec.name] = module
        if str(path.resolve().parent) not in sys.path:
            sys.path.append(str(path.resolve().parent))
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_spec.name, None)
            raise
    else:
        module = importlib.import_module(where)
    cls = getattr(module, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise BotLoadError(f"cannot load bot {spec!r}: {where} has no Bot subclass {name!r}")
    return cls()
