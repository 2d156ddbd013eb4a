"""The values that cross the wire, as Python code passes them: enums whose values are the proto enum
names in lower case (``EndReason.COMPLETED`` is ``END_REASON_COMPLETED``), a match's result, and the
hash that stands for a token or a seed. Pure data: no gRPC here (``referee.wire.contract`` converts)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


class EndReason(StrEnum):
    """How a match ended (proto ``EndReason``)."""

    COMPLETED = "completed"
    FORFEIT = "forfeit"
    ABORTED = "aborted"


class SeatStatus(StrEnum):
    """What became of a seat (proto ``SeatStatus``)."""

    ACTIVE = "active"
    FORFEITED = "forfeited"


class MatchStatus(StrEnum):
    """Where a match is in the arena (proto ``MatchState``); stored as these strings in Redis."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"


class RefusalCode(StrEnum):
    """Why the referee did not take an action (proto ``RefusalCode``); transcripts write these values."""

    SYNTAX = "syntax"
    ILLEGAL = "illegal"
    STALE_TURN = "stale_turn"
    PERMISSION_DENIED = "permission_denied"
    UNKNOWN_MATCH = "unknown_match"
    MALFORMED = "malformed"


@dataclass(frozen=True, slots=True)
class SeatResult:
    seat: int
    bot_name: str
    bot_version: str
    score: int
    rank: int
    status: SeatStatus
    strikes: int
    refusals: int


@dataclass(frozen=True, slots=True)
class MatchResult:
    """A match's outcome, as the referee reports it and the arena stores it."""

    match_id: str
    game_id: str
    end_reason: EndReason
    seats: tuple[SeatResult, ...]
    seed: str
    seed_sha256: str
    plies: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The stored form: plain JSON types, enums as their values."""
        return {
            "match_id": self.match_id, "game_id": self.game_id, "end_reason": self.end_reason.value,
            "seats": [
                {"seat": s.seat, "bot_name": s.bot_name, "bot_version": s.bot_version, "score": s.score,
                 "rank": s.rank, "status": s.status.value, "strikes": s.strikes, "refusals": s.refusals}
                for s in self.seats
            ],
            "seed": self.seed, "seed_sha256": self.seed_sha256, "plies": self.plies, "detail": self.detail,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MatchResult:
        """From its stored form (``to_dict``; extra keys such as ``rated`` are ignored)."""
        seats = tuple(
            SeatResult(
                seat=s["seat"], bot_name=s["bot_name"], bot_version=s["bot_version"], score=s["score"],
                rank=s["rank"], status=SeatStatus(s["status"]), strikes=s["strikes"], refusals=s["refusals"],
            )
            for s in d["seats"]
        )  # fmt: skip
        return cls(
            match_id=d["match_id"], game_id=d["game_id"], end_reason=EndReason(d["end_reason"]), seats=seats,
            seed=d["seed"], seed_sha256=d["seed_sha256"], plies=d["plies"], detail=d.get("detail", ""),
        )  # fmt: skip


BOT_TEXT_MAX_CHARS: Final = 64
"""The longest name or version a bot may report (``Hello``, ``OpenSessionRequest``)."""


def bot_text_error(**fields: str) -> str | None:
    """Why a bot's self-reported text is refused, or None when every field is acceptable.

    The fields are what a bot says about itself on the wire (``bot_name``, ``bot_version``,
    ``sdk_version``); they end up in transcripts, results, the registry and the ladder, and are printed
    by every client. Each is empty (not reported) or at most ``BOT_TEXT_MAX_CHARS`` printable characters
    (``str.isprintable``: no control, format or separator characters but the plain space), neither
    starting nor ending with a space. The one check of this text: the gateway, the referee and the SDK
    all call it."""
    for name, value in fields.items():
        if not isinstance(value, str):
            return f"{name} must be text, not {type(value).__name__}"
        if len(value) > BOT_TEXT_MAX_CHARS:
            return f"{name} is {len(value):,} characters long; at most {BOT_TEXT_MAX_CHARS} are allowed"
        if not value.isprintable():
            bad = next(c for c in value if not c.isprintable())
            return f"{name} contains the non-printable character U+{ord(bad):04X} (only printable characters)"
        if value != value.strip():
            return f"{name} {value!r} starts or ends with a space"
    return None


NOTE_MAX_BYTES: Final = 256
"""The longest note a bot may send with one action (UTF-8 bytes); a longer one is cut to it."""
NOTES_MAX_BYTES: Final = 16 * 1024
"""A seat's notes in one match, at most (UTF-8 bytes): a transcript stays small whatever a bot sends."""


def fit_note(note: str, used: int = 0) -> tuple[str, str]:
    """(the note as it is recorded, why that differs from ``note``: empty when it is recorded as sent).

    ``used`` is what the seat's notes already hold in this match. A note is bot text like a name
    (``bot_text_error``): one with a non-printable character (a control, a line break, a bidi override)
    is left out whole; one longer than ``NOTE_MAX_BYTES`` or than what is left of ``NOTES_MAX_BYTES`` is
    cut there, at a character boundary. Spaces at either end are dropped. The referee records what this
    gives and the SDK warns its author with the same reason; neither costs the move anything."""
    note = note.strip(" ")
    if not note:
        return "", ""
    if not note.isprintable():
        bad = next(c for c in note if not c.isprintable())
        return "", f"note left out: it contains the non-printable character U+{ord(bad):04X} (printable text only)"
    data = note.encode()
    room = min(NOTE_MAX_BYTES, max(0, NOTES_MAX_BYTES - used))
    if len(data) <= room:
        return note, ""
    kept = data[:room].decode("utf-8", "ignore").rstrip(" ")
    if len(data) > NOTE_MAX_BYTES and room == NOTE_MAX_BYTES:
        why = f"note cut to {NOTE_MAX_BYTES} bytes (it had {len(data):,}; at most {NOTE_MAX_BYTES} a move)"
    elif kept:
        why = f"note cut to {len(kept.encode())} bytes: this seat's notes reach {NOTES_MAX_BYTES:,} bytes in this match"
    else:
        why = f"note left out: this seat's notes reached {NOTES_MAX_BYTES:,} bytes in this match"
    return kept, why


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of the UTF-8 text: how tokens are stored and seeds published."""
    return hashlib.sha256(text.encode()).hexdigest()


def token_sha256(token: str) -> str:
    """What a match spec and the registry hold instead of a bot's token."""
    return sha256_hex(token)
