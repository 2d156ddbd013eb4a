"""Match transcripts: a versioned JSON Lines format, its typed events, one replay walk, and the verifier.

One JSON object per line, each with a ``type``:

- ``header`` (first line): format, version, match_id, game_id, engine_version, sdk_version, rated,
  seats (seat, bot_name, bot_version), time_control, seed_sha256, started_at.
- ``ply``: ply, actor (seat, or -1 for chance), action (canonical notation); for seats also
  think_ms, bank_ms (left after the move) and fallback (true when the referee played it), and the
  bot's ``note`` on its move when it sent one (the seat's private data: ``seat_view`` leaves it out).
- ``refusal``: ply, seat, action, code, reason (the public form of another seat's refusal has no
  action and no reason).
- ``strike``: ply, seat, strikes (count so far), reason (``timeout``, or ``refusals``: too many in one turn).
- ``disconnect`` / ``reconnect``: ply, seat.
- ``resumed``: ply (another referee process took the match over from the lines above).
- ``forfeit``: ply, seat, reason (``strikes``, ``disconnected`` or ``refusals``: too many in one match).
- ``footer`` (last line): end_reason (completed, forfeit, aborted), plies, scores, game_ranks (the
  engine's), ranks (after forfeits: forfeited seats last), forfeited, seed, ended_at, detail.

docs/transcripts.md documents the same with an example.

Each type is a frozen dataclass (``Header``, ``Ply``, ``Refusal``, ``Strike``, ``Disconnect``,
``Reconnect``, ``Resumed``, ``Forfeit``, ``Footer``; ``Event`` is their union). ``parse_event``
reads one line and ``event.to_line()`` writes it back byte for byte; anything malformed is a
``TranscriptError``. ``walk`` (or ``walk_lines``) replays a transcript, header to footer, through the
engine and calls a ``Visitor``'s hooks on the way, as python-chess's PGN visitor does; ``verify``
is such a visitor that checks the seed, every chance outcome, every action and the result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

from referee import chance, games
from referee.fallback import fallback_action

FORMAT = "arena-transcript"
VERSION = 1
ENGINE_VERSION = "1"  # bump when a rule's implementation changes the outcome of any game
END_REASONS = ("completed", "forfeit", "aborted")

# One encoder for every line (json.dumps with options builds a new one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_json_str = json.encoder.encode_basestring  # how _ENCODER writes a string (ensure_ascii=False)
_NON_FINITE = frozenset({"nan", "inf", "-inf"})


def final_ranks(game_ranks: Sequence[int], forfeited: Iterable[int]) -> list[int]:
    """RULINGS A3/A4: forfeited seats rank last (sharing it); the rest keep their order among themselves."""
    out = set(forfeited)
    n = len(game_ranks)
    ranks = [0] * n
    active = [s for s in range(n) if s not in out]
    for s in active:
        ranks[s] = 1 + sum(1 for o in active if game_ranks[o] < game_ranks[s])
    for s in out:
        ranks[s] = len(active) + 1
    return ranks


class TranscriptError(ValueError):
    """A line that is not a transcript event, or events that do not replay. ``line`` is the 1-based
    line number when known; ``message`` says what is wrong (``str()`` gives both)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return self.message if self.line is None else f"line {self.line}: {self.message}"


# ------------------------------------------------------------------------------------ the events


class _Event:
    """What every event has: its ``type`` and its line."""

    __slots__ = ()
    TYPE: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object: fields in the format's order, absent optional fields left out."""
        raise NotImplementedError

    def to_line(self) -> str:
        """The transcript line, exactly as the referee writes it (no newline)."""
        return _ENCODER.encode(self.to_dict())


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatInfo:
    """One seat of the header."""

    seat: int
    bot_name: str
    bot_version: str

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "bot_name": self.bot_name, "bot_version": self.bot_version}


@dataclass(frozen=True, slots=True, kw_only=True)
class Header(_Event):
    TYPE: ClassVar[str] = "header"
    format: str = FORMAT
    version: int = VERSION
    match_id: str
    game_id: str
    engine_version: str = ENGINE_VERSION
    sdk_version: str
    rated: bool
    seats: tuple[SeatInfo, ...]
    time_control: Mapping[str, int]  # as the match ran it (TimeControl.to_dict())
    seed_sha256: str
    started_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "header", "format": self.format, "version": self.version, "match_id": self.match_id,
            "game_id": self.game_id, "engine_version": self.engine_version, "sdk_version": self.sdk_version,
            "rated": self.rated, "seats": [s.to_dict() for s in self.seats], "time_control": dict(self.time_control),
            "seed_sha256": self.seed_sha256, "started_at": self.started_at,
        }  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Ply(_Event):
    """A ply. ``think_ms``, ``bank_ms``, ``fallback`` and ``note`` belong to seat plies (actor >= 0) only: a
    chance ply's line has none of them. ``note`` is the bot's own note on its move ("" none: the line
    leaves it out), private to its seat (``public``)."""

    TYPE: ClassVar[str] = "ply"
    ply: int
    actor: int
    action: str
    think_ms: float | None = None  # as the referee measured it; None for a fallback
    bank_ms: int = 0  # time bank left after the move
    fallback: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        if self.actor < 0:
            return {"type": "ply", "ply": self.ply, "actor": self.actor, "action": self.action}
        d: dict[str, Any] = {"type": "ply", "ply": self.ply, "actor": self.actor, "action": self.action,
                             "think_ms": self.think_ms, "bank_ms": self.bank_ms, "fallback": self.fallback}  # fmt: skip
        if self.note:
            d["note"] = self.note
        return d

    def to_line(self) -> str:
        return ply_line(self.ply, self.actor, self.action, self.think_ms, self.bank_ms, self.fallback, self.note)

    def public(self) -> Ply:
        """The form other seats and the public see: the same ply without the bot's note."""
        return replace(self, note="")


def ply_line(
    ply: int,
    actor: int,
    action: str,
    think_ms: float | None = None,
    bank_ms: int = 0,
    fallback: bool = False,
    note: str = "",
) -> str:
    """``Ply(...).to_line()`` without building the Ply: the referee writes one of these per ply. Formatted
    directly, the same bytes as encoding ``to_dict()`` (numbers as repr, the action as JSON's own string
    encoder writes it), twice as fast."""
    head = f'{{"type":"ply","ply":{ply!r},"actor":{actor!r},"action":{_json_str(action)}'
    if actor < 0:
        return head + "}"
    ms = "null" if think_ms is None else repr(think_ms)
    if ms in _NON_FINITE:  # JSON writes these NaN, Infinity, -Infinity
        event = Ply(ply=ply, actor=actor, action=action, think_ms=think_ms, bank_ms=bank_ms, fallback=fallback,
                    note=note)  # fmt: skip
        return _ENCODER.encode(event.to_dict())
    tail = f',"note":{_json_str(note)}}}' if note else "}"
    return f'{head},"think_ms":{ms},"bank_ms":{bank_ms!r},"fallback":{"true" if fallback else "false"}{tail}'


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal(_Event):
    """An action the referee did not take. ``action`` and ``reason`` are None in the public form of
    another seat's refusal (the line leaves them out)."""

    TYPE: ClassVar[str] = "refusal"
    ply: int
    seat: int
    action: str | None
    code: str
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "refusal", "ply": self.ply, "seat": self.seat}
        if self.action is not None:
            d["action"] = self.action
        d["code"] = self.code
        if self.reason is not None:
            d["reason"] = self.reason
        return d

    def public(self) -> Refusal:
        """The form other seats see: seat, ply and code, without the refused text and the reason."""
        return Refusal(ply=self.ply, seat=self.seat, action=None, code=self.code, reason=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Strike(_Event):
    TYPE: ClassVar[str] = "strike"
    ply: int
    seat: int
    strikes: int  # count so far
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "strike", "ply": self.ply, "seat": self.seat, "strikes": self.strikes, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnect(_Event):
    TYPE: ClassVar[str] = "disconnect"
    ply: int
    seat: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "disconnect", "ply": self.ply, "seat": self.seat}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconnect(_Event):
    TYPE: ClassVar[str] = "reconnect"
    ply: int
    seat: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "reconnect", "ply": self.ply, "seat": self.seat}


@dataclass(frozen=True, slots=True, kw_only=True)
class Forfeit(_Event):
    TYPE: ClassVar[str] = "forfeit"
    ply: int
    seat: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "forfeit", "ply": self.ply, "seat": self.seat, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumed(_Event):
    TYPE: ClassVar[str] = "resumed"
    ply: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "resumed", "ply": self.ply}


@dataclass(frozen=True, slots=True, kw_only=True)
class Footer(_Event):
    TYPE: ClassVar[str] = "footer"
    end_reason: str  # one of END_REASONS
    plies: int
    scores: tuple[int, ...]
    game_ranks: tuple[int, ...]
    ranks: tuple[int, ...]
    forfeited: tuple[int, ...]
    seed: str
    ended_at: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "footer", "end_reason": self.end_reason, "plies": self.plies, "scores": list(self.scores),
            "game_ranks": list(self.game_ranks), "ranks": list(self.ranks), "forfeited": list(self.forfeited),
            "seed": self.seed, "ended_at": self.ended_at, "detail": self.detail,
        }  # fmt: skip


Incident: TypeAlias = Refusal | Strike | Disconnect | Reconnect | Forfeit | Resumed
"""Everything between header and footer that is not a ply."""
Event: TypeAlias = Header | Ply | Incident | Footer

# --------------------------------------------------------------------------------------- parsing


def _short(value: object) -> str:
    """``repr`` of a value in an error message, cut to 40 characters."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


class _Fields:
    """Reads the fields of one JSON object, each checked for presence and type."""

    __slots__ = ("d", "kind", "read")

    def __init__(self, d: dict[str, Any], kind: str) -> None:
        self.d = d
        self.kind = kind
        self.read = {"type"}

    def _get(self, key: str) -> Any:
        self.read.add(key)
        if key in self.d:
            return self.d[key]
        raise TranscriptError(f"{self.kind} line has no {key!r}")

    def _bad(self, key: str, expected: str) -> TranscriptError:
        return TranscriptError(f"{self.kind} field {key!r} must be {expected}, not {_short(self.d[key])}")

    def integer(self, key: str) -> int:
        v = self._get(key)
        if type(v) is not int:
            raise self._bad(key, "an integer")
        return v

    def text(self, key: str) -> str:
        v = self._get(key)
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        return v

    def optional_text(self, key: str) -> str | None:
        """A string that the line may leave out (None then); null is no string."""
        if key not in self.d:
            self.read.add(key)
            return None
        return self.text(key)

    def flag(self, key: str) -> bool:
        v = self._get(key)
        if type(v) is not bool:
            raise self._bad(key, "true or false")
        return v

    def ms(self, key: str) -> float | None:
        v: float | None = self._get(key)  # an int stays an int: its line is written back as it was
        if v is not None and type(v) not in (int, float):
            raise self._bad(key, "a number or null")
        return v

    def integers(self, key: str) -> tuple[int, ...]:
        v = self._get(key)
        if not isinstance(v, list) or any(type(x) is not int for x in v):
            raise self._bad(key, "a list of integers")
        return tuple(v)

    def seats(self, key: str) -> tuple[SeatInfo, ...]:
        v = self._get(key)
        if not isinstance(v, list) or not all(isinstance(item, dict) for item in v):
            raise self._bad(key, "a list of seats")
        out = []
        for item in v:
            f = _Fields(item, f"{self.kind} seat")
            f.read.discard("type")
            out.append(SeatInfo(seat=f.integer("seat"), bot_name=f.text("bot_name"),
                                bot_version=f.text("bot_version")))  # fmt: skip
            f.done()
        return tuple(out)

    def time_control(self, key: str) -> dict[str, int]:
        v = self._get(key)
        if not isinstance(v, dict) or any(type(x) is not int for x in v.values()):
            raise self._bad(key, "an object of milliseconds")
        return v

    def done(self) -> None:
        extra = [k for k in self.d if k not in self.read]
        if extra:
            raise TranscriptError(f"{self.kind} line has unexpected field(s): {', '.join(map(_short, extra))}")


def _header(f: _Fields) -> Header:
    d = f.d
    if d.get("format") != FORMAT or d.get("version") != VERSION:
        raise TranscriptError(f"unknown format {_short(d.get('format'))} version {_short(d.get('version'))}")
    return Header(
        format=f.text("format"), version=f.integer("version"), match_id=f.text("match_id"), game_id=f.text("game_id"),
        engine_version=f.text("engine_version"), sdk_version=f.text("sdk_version"), rated=f.flag("rated"),
        seats=f.seats("seats"), time_control=f.time_control("time_control"), seed_sha256=f.text("seed_sha256"),
        started_at=f.text("started_at"),
    )  # fmt: skip


def _ply(f: _Fields) -> Ply:
    ply, actor, action = f.integer("ply"), f.integer("actor"), f.text("action")
    if actor < 0:
        return Ply(ply=ply, actor=actor, action=action)
    think_ms, bank_ms, fallback = f.ms("think_ms"), f.integer("bank_ms"), f.flag("fallback")
    note = f.optional_text("note")
    if note == "":  # no note is no field: the line must write back as it was
        raise f._bad("note", "a non-empty string when present")
    return Ply(ply=ply, actor=actor, action=action, think_ms=think_ms, bank_ms=bank_ms, fallback=fallback,
               note=note or "")  # fmt: skip


def _refusal(f: _Fields) -> Refusal:
    return Refusal(ply=f.integer("ply"), seat=f.integer("seat"), action=f.optional_text("action"), code=f.text("code"),
                   reason=f.optional_text("reason"))  # fmt: skip


def _strike(f: _Fields) -> Strike:
    return Strike(ply=f.integer("ply"), seat=f.integer("seat"), strikes=f.integer("strikes"), reason=f.text("reason"))


def _disconnect(f: _Fields) -> Disconnect:
    return Disconnect(ply=f.integer("ply"), seat=f.integer("seat"))


def _reconnect(f: _Fields) -> Reconnect:
    return Reconnect(ply=f.integer("ply"), seat=f.integer("seat"))


def _forfeit(f: _Fields) -> Forfeit:
    return Forfeit(ply=f.integer("ply"), seat=f.integer("seat"), reason=f.text("reason"))


def _resumed(f: _Fields) -> Resumed:
    return Resumed(ply=f.integer("ply"))


def _footer(f: _Fields) -> Footer:
    if not isinstance(f.d.get("seed"), str):
        raise TranscriptError("the footer reveals no seed")
    end = f.text("end_reason")
    if end not in END_REASONS:
        raise f._bad("end_reason", " or ".join(map(repr, END_REASONS)))
    return Footer(
        end_reason=end, plies=f.integer("plies"), scores=f.integers("scores"), game_ranks=f.integers("game_ranks"),
        ranks=f.integers("ranks"), forfeited=f.integers("forfeited"), seed=f.text("seed"), ended_at=f.text("ended_at"),
        detail=f.text("detail"),
    )  # fmt: skip


_READERS: dict[str, Callable[[_Fields], Event]] = {
    "header": _header, "ply": _ply, "refusal": _refusal, "strike": _strike, "disconnect": _disconnect,
    "reconnect": _reconnect, "forfeit": _forfeit, "resumed": _resumed, "footer": _footer,
}  # fmt: skip


def event_from_dict(d: object) -> Event:
    """The event of one decoded JSON line; TranscriptError if it is not a well-formed event."""
    if not isinstance(d, dict) or "type" not in d:
        raise TranscriptError("not a transcript event (no 'type')")
    kind = d["type"]
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise TranscriptError(f"unknown event type {_short(kind)}")
    f = _Fields(d, kind)
    event = reader(f)
    f.done()
    return event


def parse_event(line: str | bytes) -> Event:
    """The event of one transcript line; TranscriptError (naming the problem) if it is not one."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TranscriptError(f"not UTF-8 text (byte {e.start})") from None
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise TranscriptError(f"not JSON: {e.msg}") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise TranscriptError(f"not JSON: {e}") from None
    except RecursionError:
        raise TranscriptError("not JSON: nested too deeply") from None
    return event_from_dict(d)


def seat_view(line: str, seats: Container[int] | None) -> str:
    """``line`` as a reader allowed the private data of ``seats`` reads it (None: of every seat, the
    whole transcript; an empty set: the public form). Another seat's refusal loses its refused text and
    the referee's reason (``Refusal.public``), another seat's ply its bot's note (``Ply.public``); every
    other line comes back as it is. The one rule of what is private in a transcript: the referee's
    watchers, the gateway's downloads and streams and the website all apply it."""
    if seats is None or ('"refusal"' not in line and '"note"' not in line):
        return line
    event = parse_event(line)
    if isinstance(event, Refusal) and event.seat not in seats:
        return event.public().to_line()
    if isinstance(event, Ply) and event.note and event.actor not in seats:
        return event.public().to_line()
    return line


def is_footer(line: str) -> bool:
    """Whether ``line`` is a well-formed footer (only lines that mention one are parsed)."""
    if '"footer"' not in line:
        return False
    try:
        return isinstance(parse_event(line), Footer)
    except TranscriptError:
        return False


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[tuple[int, Event]]:
    """(1-based line number, event) of each non-blank line; TranscriptError names the first bad line."""
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield i, parse_event(line)
        except TranscriptError as e:
            e.line = i
            raise


def file_lines(path: str | Path) -> list[bytes]:
    """The lines of a transcript file, undecoded (``parse_event`` decodes and checks each)."""
    return Path(path).read_bytes().splitlines()


def read(path: str | Path) -> list[Event]:
    """Every event of a transcript file, in order; TranscriptError names the first bad line."""
    return [event for _, event in parse_lines(file_lines(path))]


# ------------------------------------------------------------------------------------------ walk


class Visitor:
    """The hooks of a ``walk``. Each does nothing unless overridden; one that raises TranscriptError
    stops the walk (its line is filled in). States are the engine's, immutable."""

    def header(self, header: Header, state: games.State) -> None:
        """The header; ``state`` is the game's initial state."""

    def ply(self, ply: Ply, action: Any, before: games.State, after: games.State) -> None:
        """A ply, its parsed ``action``, and the states before and after it."""

    def incident(self, event: Incident, state: games.State) -> None:
        """Any other event between header and footer, in the position it happened in."""

    def footer(self, footer: Footer, state: games.State) -> None:
        """The footer, with the final state."""


def walk_lines(lines: Iterable[str | bytes], visitor: Visitor) -> games.State:
    """``walk`` over transcript lines, parsed as they come (a live follow works); errors name the line."""
    return walk(parse_lines(lines), visitor)


def walk(numbered: Iterable[tuple[int, Event]], visitor: Visitor) -> games.State:
    """Replay a transcript through the engine, calling ``visitor``'s hooks on the way; the final state.

    ``numbered`` is (line number, event) pairs as ``parse_lines`` gives them (``enumerate(events, 1)``
    for events without lines): the header first, then the events, then the footer if the match has
    ended. TranscriptError, naming the line, unless there is one header, first, of a known game with
    one seat per player; plies in order, each by the engine's player to move and legal; incidents of
    real seats at the current ply; and at most one footer, last, with one entry per seat."""
    it = iter(numbered)
    line, header = next(it, (1, None))
    if not isinstance(header, Header):
        raise TranscriptError("the first line must be the header", 1)
    try:
        game = games.get(header.game_id)
    except KeyError as e:
        raise TranscriptError(str(e), line) from None
    n = game.num_players
    if len(header.seats) != n:
        raise TranscriptError(f"the header has {len(header.seats)} seats but {header.game_id} has {n}", line)
    if any(s.seat != i for i, s in enumerate(header.seats)):
        raise TranscriptError(f"the header's seats must be numbered 0 to {n - 1}, in order", line)
    state: games.State = game.new_state()
    plies = 0
    ended = False
    try:
        visitor.header(header, state)
        for line, event in it:  # noqa: B007 (``line`` names the line of an error)
            if ended:
                raise TranscriptError("a line after the footer")
            if isinstance(event, Ply):
                if event.ply != plies:
                    raise TranscriptError(f"ply {event.ply} out of order; expected {plies}")
                if state.is_terminal():
                    raise TranscriptError("an action after the game ended")
                actor = state.current_player()
                if event.actor != actor:
                    raise TranscriptError(f"actor {event.actor} but the engine has {actor} to move")
                try:
                    action = state.parse_action(event.action)
                except games.ActionError as e:
                    raise TranscriptError(f"{e}") from None
                after = state.apply(action)
                visitor.ply(event, action, state, after)
                state = after
                plies += 1
            elif isinstance(event, Footer):
                _check_footer(event, n)
                visitor.footer(event, state)
                ended = True
            elif isinstance(event, Header):
                raise TranscriptError("a second header")
            else:
                if event.ply != plies:
                    raise TranscriptError(f"{event.TYPE} at ply {event.ply}, but {plies} plies were played")
                if not isinstance(event, Resumed) and not 0 <= event.seat < n:
                    raise TranscriptError(f"{event.TYPE} of seat {event.seat}, which {header.game_id} does not have")
                visitor.incident(event, state)
    except TranscriptError as e:
        if e.line is None:
            e.line = line
        raise
    return state


def _check_footer(footer: Footer, n: int) -> None:
    for name, values in (("scores", footer.scores), ("game_ranks", footer.game_ranks), ("ranks", footer.ranks)):
        if len(values) != n:
            raise TranscriptError(f"the footer has {len(values)} {name} for {n} seats")
    if any(not 0 <= s < n for s in footer.forfeited):
        raise TranscriptError(f"the footer's forfeited {list(footer.forfeited)} are not all seats of the game")


# ---------------------------------------------------------------------------------------- verify


@dataclass(frozen=True)
class VerifyError:
    line: int  # 1-based line number in the file
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class _Verifier(Visitor):
    """verify's checks beyond the replay: the seed, chance outcomes, fallbacks and the result."""

    def __init__(self, last: tuple[int, Event]) -> None:
        self.last = last
        self.seed = ""
        self.plies = 0
        self.forfeited: set[int] = set()

    def header(self, header: Header, state: games.State) -> None:
        line, footer = self.last
        if not isinstance(footer, Footer):
            raise TranscriptError("the last line must be the footer", line)
        if hashlib.sha256(footer.seed.encode()).hexdigest() != header.seed_sha256:
            raise TranscriptError("the revealed seed does not match the header's seed_sha256", line)
        self.seed = footer.seed

    def ply(self, ply: Ply, action: Any, before: games.State, after: games.State) -> None:
        if ply.actor == games.CHANCE:
            expected = chance.sample(before, self.seed, ply.ply)
            if action is not expected:
                raise TranscriptError(
                    f"chance outcome {ply.action!r} does not derive from the seed (expected {expected})"
                )
        elif ply.fallback:
            expected = fallback_action(before, self.seed, ply.ply)
            if action is not expected:
                raise TranscriptError(f"fallback {ply.action!r} is not the documented fallback ({expected})")
        self.plies += 1

    def incident(self, event: Incident, state: games.State) -> None:
        if isinstance(event, Forfeit):
            self.forfeited.add(event.seat)

    def footer(self, footer: Footer, state: games.State) -> None:
        if footer.end_reason == "aborted":
            return
        if footer.plies != self.plies:
            raise TranscriptError(f"footer says {footer.plies} plies, the transcript has {self.plies}")
        if footer.end_reason == "completed" and not state.is_terminal():
            raise TranscriptError("footer says completed but the game is not over")
        if set(footer.forfeited) != self.forfeited:
            raise TranscriptError("forfeited seats differ from the forfeit events")
        if state.is_terminal():
            if list(footer.scores) != state.scores():
                raise TranscriptError(f"scores {list(footer.scores)} but the replay gives {state.scores()}")
            if list(footer.game_ranks) != state.ranks():
                raise TranscriptError(f"game ranks {list(footer.game_ranks)} but the replay gives {state.ranks()}")
            game_ranks = state.ranks()
        else:
            game_ranks = list(footer.game_ranks)
        if list(footer.ranks) != final_ranks(game_ranks, self.forfeited):
            raise TranscriptError(f"ranks {list(footer.ranks)} do not follow from the game ranks and forfeits")


def verify_lines(lines: Sequence[str | bytes]) -> VerifyError | None:
    """None if the transcript is consistent; otherwise the first bad line and why."""
    try:
        numbered = list(parse_lines(lines))
        walk(numbered, _Verifier(numbered[-1] if numbered else (1, Resumed(ply=0))))
    except TranscriptError as e:
        return VerifyError(e.line or 1, e.message)
    return None


def verify(path: str | Path) -> VerifyError | None:
    """``verify_lines`` of a file (OSError if it cannot be read)."""
    return verify_lines(file_lines(path))
