"""A finished match's result as the arena stores it, in one place: the typed value (``StoredResult``), its
JSON on the match hash, its ladder record in the results stream, and the one rule of whether it moves a
ladder (``counts``). The worker makes it, ``MatchQueue.complete`` stores it, the ladder and the scheduler
read it; none of them owns the layout, so a change to it is made here once. Ground floor: only the referee
and the standard library are imported (the service and the ladder both import this, not each other).

Two stored forms, which must not change (every rebuild reads back every result ever stored):

- **the result**, field ``result`` of the match hash: ``MatchResult.to_dict()`` then ``rated`` and
  ``finished_at``, as ``json.dumps`` writes it (default separators);
- **the record**, field ``keys.RESULT_RECORD`` of the match's results-stream entry: what a reader of every
  result needs, as a flat compact JSON list: ``[game_id, match_id, finished_at, rated, end_reason]`` then,
  per seat in seat order, ``bot_name, bot_version, rank, forfeited`` (1 or 0). The ladder's rebuild reads a
  million of them; decoding this list costs a fraction of decoding the whole result. ``finished_at`` is a
  float written as ``repr`` writes it, which decodes to the same float.

A change of the record's layout takes a new field name: entries stored with the old one (or none, before
records existed) are read from the result, through ``record``, which reads results of any age (missing
``rated``, ``finished_at`` or seat ``status`` read as unrated, 0.0 and active).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from referee import games, transcript
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus

HEAD: Final = 5  # record values before the seats
SEAT: Final = 4  # record values per seat
MIN_SEATS: Final = 2  # a result with fewer seats rates nobody

Record = list[Any]
"""A result's ladder record (the module doc's layout), a plain list: the ladder's hot loops unpack it."""

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_FORFEITED: Final = SeatStatus.FORFEITED
_ABORTED: Final = EndReason.ABORTED


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A finished match as stored: the referee's result, whether it was rated, and when it finished."""

    result: MatchResult
    rated: bool
    finished_at: float

    @classmethod
    def of(cls, result: MatchResult, rated: bool, finished_at: float | None = None) -> StoredResult:
        """The referee's result, finished now unless ``finished_at`` says when."""
        return cls(result, rated, time.time() if finished_at is None else finished_at)

    @classmethod
    def from_lines(cls, lines: Sequence[str], rated: bool) -> StoredResult:
        """The result a complete transcript (header to footer) records, finished now: a worker that takes
        over a match whose log already ends stores this. TranscriptError (a ValueError) if the lines do not
        replay to a footer."""
        tally = _Tally()
        transcript.walk_lines(lines, tally)
        header, footer = tally.start, tally.end
        if header is None or footer is None:
            raise transcript.TranscriptError("the last line must be the footer", len(lines))
        forfeited = set(footer.forfeited)
        seats = tuple(
            SeatResult(
                seat=s.seat, bot_name=s.bot_name, bot_version=s.bot_version, score=footer.scores[s.seat],
                rank=footer.ranks[s.seat], status=_FORFEITED if s.seat in forfeited else SeatStatus.ACTIVE,
                strikes=tally.strikes.get(s.seat, 0), refusals=tally.refusals.get(s.seat, 0),
            )
            for s in header.seats
        )  # fmt: skip
        result = MatchResult(
            match_id=header.match_id, game_id=header.game_id, end_reason=EndReason(footer.end_reason), seats=seats,
            seed=footer.seed, seed_sha256=header.seed_sha256, plies=footer.plies, detail=footer.detail,
        )  # fmt: skip
        return cls.of(result, rated)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredResult:
        """From its stored form (``to_dict``); KeyError, TypeError or ValueError for anything else."""
        return cls(MatchResult.from_dict(d), bool(d["rated"]), float(d["finished_at"]))

    @classmethod
    def from_json(cls, text: str | bytes) -> StoredResult:
        return cls.from_dict(json.loads(text))

    def to_dict(self) -> dict[str, Any]:
        """The stored form: plain JSON types, keys in the order stored."""
        d = self.result.to_dict()
        d["rated"] = self.rated
        d["finished_at"] = self.finished_at
        return d

    def to_json(self) -> str:
        """What the match hash stores (field ``result``)."""
        return json.dumps(self.to_dict())

    def record(self) -> Record:
        return record(self.to_dict())

    def record_json(self) -> str:
        """What the results-stream entry stores (field ``keys.RESULT_RECORD``)."""
        return _JSON.encode(self.record())

    @property
    def counts(self) -> bool:
        return counts(self.record())


def record(stored: Mapping[str, Any]) -> Record:
    """The record of a stored result of any age (the module doc), converted as the ladder reads it. KeyError,
    TypeError, ValueError or AttributeError for a result without the values."""
    out: Record = [str(stored["game_id"]), str(stored["match_id"]), float(stored.get("finished_at", 0.0)),
                   bool(stored.get("rated")), str(stored.get("end_reason") or "")]  # fmt: skip
    for s in stored["seats"]:
        out += (str(s["bot_name"]), str(s["bot_version"]), int(s["rank"]), 1 if forfeited(s) else 0)
    return out


def record_json(stored: Mapping[str, Any]) -> str:
    """``record`` as the results stream stores it (compact JSON)."""
    return _JSON.encode(record(stored))


def counts(rec: Record) -> bool:
    """The rule of whether a result changes its game's ladder: rated, not aborted, at least two seats. (The
    ladder's two-seat loop, ``elo.Table.apply_records``, inlines it.)"""
    return bool(rec[3]) and rec[4] != _ABORTED and len(rec) >= HEAD + MIN_SEATS * SEAT


def counting_record(stored: Mapping[str, Any]) -> Record | None:
    """The record of a stored result that ``counts``; None for any other, and for a result without the
    values (the ladder skips what it cannot rate rather than stop on it)."""
    try:
        rec = record(stored)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return rec if counts(rec) else None


def game_prefix(game_id: str) -> str:
    """How the record of every result of ``game_id`` begins (a reader picks one game's records by it)."""
    return _JSON.encode([str(game_id)])[:-1] + ","


def seat_key(seat: Mapping[str, Any]) -> tuple[str, str]:
    """A stored seat's (bot name, bot version): its ladder row."""
    return (str(seat["bot_name"]), str(seat["bot_version"]))


def forfeited(seat: Mapping[str, Any]) -> bool:
    """Whether a stored seat forfeited (a seat stored without a status played to the end)."""
    return seat.get("status") == _FORFEITED


class _Tally(transcript.Visitor):
    """What ``StoredResult.from_lines`` needs of a transcript beyond its header and footer: strikes and
    refusals per seat."""

    def __init__(self) -> None:
        self.start: transcript.Header | None = None
        self.end: transcript.Footer | None = None
        self.strikes: dict[int, int] = {}
        self.refusals: dict[int, int] = {}

    def header(self, header: transcript.Header, state: games.State) -> None:
        self.start = header

    def incident(self, event: transcript.Incident, state: games.State) -> None:
        if isinstance(event, transcript.Strike):
            self.strikes[event.seat] = event.strikes
        elif isinstance(event, transcript.Refusal):
            self.refusals[event.seat] = self.refusals.get(event.seat, 0) + 1

    def footer(self, footer: transcript.Footer, state: games.State) -> None:
        self.end = footer
