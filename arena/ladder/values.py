"""What a read of the ladder gives back: a leaderboard place, a rating-history point, a head-to-head record.

Plain values, without Redis: the ladder in Redis (``arena.ladder.store``) and the gateway's client
(``arena.ladder.client``, what a bot author's install reads the ladder with) return the same ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from arena.ladder.elo import BotKey, Row
from arena.ladder.fit import Fitted

DEFAULT_QUEUE_DEPTH: Final = 64
DEFAULT_MAX_RATE: Final = 100.0
"""The scheduler's defaults (``SchedulerConfig``), here so that the CLI reads them without importing the
scheduler (and Redis). Enough to keep a large ladder busy (issue 34: 10,000 bots online want 11-56 matches
a second; 8 waiting and 2 a second delivered 0.08). A small one is held back by each bot's
``max_concurrent`` and ``games_per_hour``, not by these."""


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
