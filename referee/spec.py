"""The referee's own description of a match and of its outcome (converted to and from the wire at
the server's edge)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from referee.timecontrol import TimeControl, default_for


class EndReason(StrEnum):
    COMPLETED = "completed"
    FORFEIT = "forfeit"
    ABORTED = "aborted"


class SeatStatus(StrEnum):
    ACTIVE = "active"
    FORFEITED = "forfeited"


@dataclass(frozen=True, slots=True)
class SeatSpec:
    seat: int
    bot_name: str
    token_sha256: str


@dataclass(frozen=True, slots=True)
class MatchSpec:
    match_id: str
    game_id: str
    seats: tuple[SeatSpec, ...]
    seed: str = field(default_factory=lambda: secrets.token_hex(16))
    time_control: TimeControl | None = None
    rated: bool = False

    @property
    def control(self) -> TimeControl:
        return self.time_control or default_for(self.game_id)


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
    match_id: str
    game_id: str
    end_reason: EndReason
    seats: tuple[SeatResult, ...]
    seed: str
    seed_sha256: str
    plies: int
    detail: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MatchResult:
        """From its stored form (``dataclasses.asdict`` with the enums as their values; extra keys ignored)."""
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
