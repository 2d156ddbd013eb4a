"""What a read of the ladder gives back: a leaderboard place, a rating-history point, a head-to-head record.

Plain values, without Redis: the ladder in Redis (``arena.ladder.store``) and the gateway's client
(``arena.ladder.client``, what a bot author's install reads the ladder with) return the same ones."""

from __future__ import annotations

from dataclasses import dataclass

from arena.ladder.elo import BotKey, Row
from arena.ladder.fit import Fitted


@dataclass(frozen=True)
class Standing:
    """A place on a leaderboard; ``owner``: the bot's owner in the registry (empty for a bot not in it), so
    a reader knows whose bot holds the place; ``fit``: the version's whole-history fit, None until the ladder
    has made one that includes it."""

    rank: int
    row: Row
    owner: str = ""
    fit: Fitted | None = None


@dataclass(frozen=True)
class HistoryPoint:
    finished_at: float
    rating: float
    match_id: str


@dataclass(frozen=True)
class HeadToHead:
    """Pairwise record of two bot versions on one ladder (every pair of seats of every match)."""

    a: BotKey
    b: BotKey
    a_wins: int
    draws: int
    b_wins: int
