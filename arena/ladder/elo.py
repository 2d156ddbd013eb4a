"""Elo ratings for the ladder: pure functions over plain values, no Redis, no clock.

One ladder per game id. A row is one (bot name, bot version); a new version starts provisional from
the rating of its predecessor (the latest version seen before it).

- Two players: standard Elo, ``R' = R + K (S - E)`` with ``E = 1 / (1 + 10^((R_opp - R) / 400))``.
- Three or four players: every pair of seats is one Elo game scored from the final places (better
  place 1, shared place 0.5, worse place 0) and each seat's change is ``K / (players - 1)`` times the
  sum of its pair errors (the GGP Tiltyard rule): a match moves a rating about as much as one
  two-player game, whatever the number of players.
- Forfeits: a forfeited seat is last, whatever its rank says; forfeited seats share the last place.
- Aborted or unrated matches change nothing (``counts`` says so).

Constants (why these values):

- ``INITIAL_RATING = 1500``: the customary Elo origin; only differences mean anything.
- ``K = 24``: between FIDE's 20 and USCF's 32. Bots do not improve between games (a new version is a
  new row), so the K only trades noise for speed of convergence: at K=24 a settled rating wanders
  with a standard deviation of about 46 points (``sqrt(K * 200 / ln 10)``, see ``noise_floor``),
  small next to the 100-400 point gaps between bots of different strength.
- ``K_PROVISIONAL = 48`` for the first ``PROVISIONAL_GAMES = 15`` games: a new bot reaches its level
  in about a dozen games instead of fifty; after 15 games the 95% bar from the results alone is
  about 175 points, the point where a smaller K stops costing accuracy.

Uncertainty: each row keeps the Fisher information of its results, ``info = sum w E (1 - E)`` over
the pair games it played (``w = 1 / (players - 1)`` per pair, so one match adds at most one game's
worth), plus a prior worth ``PRIOR_SD = 350`` points (the spread of ratings of unknown bots). The
standard error of the rating estimated from those games is ``400 / ln 10 / sqrt(info)``, the usual
binomial error bar ``400/ln10/sqrt(n p (1-p))`` evaluated at the expected scores (not at the observed
score, which would make a bot with all wins infinitely uncertain). An Elo rating is a running
average and never gets better than its own noise floor, so the reported standard deviation is the
larger of the two; the error bar is 1.96 times that (a 95% interval).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from referee.wire.values import EndReason, SeatStatus

INITIAL_RATING: Final = 1500.0
K: Final = 24.0
K_PROVISIONAL: Final = 48.0
PROVISIONAL_GAMES: Final = 15
PRIOR_SD: Final = 350.0
Z95: Final = 1.96
ELO_SCALE: Final = 400.0 / math.log(10)  # rating points per unit of log-odds
PRIOR_INFO: Final = (ELO_SCALE / PRIOR_SD) ** 2


BotKey = tuple[str, str]
"""(bot name, bot version): one ladder row."""


def expected(rating: float, opponent: float) -> float:
    """The expected score of ``rating`` against ``opponent`` (0..1)."""
    return 1.0 / (1.0 + math.pow(10.0, (opponent - rating) / 400.0))


def k_factor(games: int) -> float:
    """The K of a row that has played ``games`` rated matches before this one."""
    return K_PROVISIONAL if games < PROVISIONAL_GAMES else K


def noise_floor(k: float) -> float:
    """Standard deviation of a settled Elo rating updated with ``k`` (linearised stationary variance)."""
    return math.sqrt(k * ELO_SCALE / 2.0)


@dataclass(frozen=True)
class Row:
    """One bot version's standing in one game's ladder."""

    name: str
    version: str
    rating: float = INITIAL_RATING
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    last_played: float = 0.0
    info: float = 0.0  # Fisher information of the results, in two-player-game units (see module doc)

    @property
    def key(self) -> BotKey:
        return (self.name, self.version)

    @property
    def provisional(self) -> bool:
        return self.games < PROVISIONAL_GAMES

    @property
    def sd(self) -> float:
        """Standard deviation of the rating: the information bound or the Elo noise floor, the larger."""
        return max(ELO_SCALE / math.sqrt(PRIOR_INFO + self.info), noise_floor(k_factor(self.games)))

    @property
    def error(self) -> float:
        """Half-width of the 95% interval around ``rating``."""
        return Z95 * self.sd

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "rating": self.rating, "games": self.games,
            "wins": self.wins, "draws": self.draws, "losses": self.losses, "last_played": self.last_played,
            "info": self.info,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Row:
        return cls(
            name=str(d["name"]), version=str(d["version"]), rating=float(d["rating"]), games=int(d["games"]),
            wins=int(d["wins"]), draws=int(d["draws"]), losses=int(d["losses"]),
            last_played=float(d["last_played"]), info=float(d["info"]),
        )  # fmt: skip


def new_row(name: str, version: str, predecessor: Row | None = None) -> Row:
    """A row for a bot version never rated before: provisional, from its predecessor's rating if any."""
    return Row(name, version, rating=predecessor.rating if predecessor else INITIAL_RATING)


def counts(result: Mapping[str, Any]) -> bool:
    """Whether a stored result changes the ladder: rated, not aborted, at least two seats."""
    rated = bool(result.get("rated"))
    return rated and result.get("end_reason") != EndReason.ABORTED and len(result.get("seats", ())) >= 2


def seat_key(seat: Mapping[str, Any]) -> BotKey:
    return (str(seat["bot_name"]), str(seat["bot_version"]))


def places(seats: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Comparable places per seat (lower is better): forfeited seats after every active one."""
    return [(1 if s.get("status") == SeatStatus.FORFEITED else 0, int(s["rank"])) for s in seats]


def pair_score(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Score of place ``a`` against place ``b``: 1 better, 0.5 shared, 0 worse."""
    return 1.0 if a < b else 0.5 if a == b else 0.0


@dataclass(frozen=True)
class Pair:
    """One pairwise comparison of a match, for the head-to-head counts: ``score`` is a's (1, 0.5, 0)."""

    a: BotKey
    b: BotKey
    score: float


@dataclass(frozen=True)
class Update:
    """What one match does to the ladder: the new rows, the pairwise outcomes, the history points."""

    match_id: str
    finished_at: float
    rows: dict[BotKey, Row] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)


def rate(result: Mapping[str, Any], before: Mapping[BotKey, Row]) -> Update:
    """Apply one counting result to the rows of its seats (``before`` must hold a row for every seat).

    All changes are computed from the ratings before the match. A bot version in two seats of one
    match (possible in requested matches) is not compared with itself; its seats' changes add up.
    """
    seats = list(result["seats"])
    n = len(seats)
    bots = [seat_key(s) for s in seats]
    place = places(seats)
    ratings = [before[b].rating for b in bots]
    weight = 1.0 / (n - 1)
    delta = dict.fromkeys(bots, 0.0)
    info = dict.fromkeys(bots, 0.0)
    pairs: list[Pair] = []
    for i in range(n):
        k = k_factor(before[bots[i]].games) * weight
        for j in range(n):
            if i == j or bots[i] == bots[j]:
                continue
            e = expected(ratings[i], ratings[j])
            s = pair_score(place[i], place[j])
            delta[bots[i]] += k * (s - e)
            info[bots[i]] += weight * e * (1.0 - e)
            if i < j:
                pairs.append(Pair(bots[i], bots[j], s))
    finished_at = float(result.get("finished_at", 0.0))
    rows: dict[BotKey, Row] = {}
    for b in dict.fromkeys(bots):
        best = min(p for p, key in zip(place, bots, strict=True) if key == b)
        shared = sum(1 for p in place if p == best) > 1
        first = best == min(place)
        old = before[b]
        rows[b] = replace(
            old,
            rating=old.rating + delta[b],
            games=old.games + 1,
            wins=old.wins + (first and not shared),
            draws=old.draws + (first and shared),
            losses=old.losses + (not first),
            last_played=max(old.last_played, finished_at),
            info=old.info + info[b],
        )
    return Update(str(result["match_id"]), finished_at, rows, pairs)


class Table:
    """A whole ladder in memory: rows per game, the latest version per bot name, pair counts, history.

    ``Ladder.rebuild`` replays stored results through one of these; tests and simulations use it
    directly. ``apply`` does exactly what the Redis ladder does for one result.
    """

    def __init__(self) -> None:
        self.rows: dict[str, dict[BotKey, Row]] = {}
        self.latest: dict[str, dict[str, str]] = {}
        self.h2h: dict[str, dict[tuple[BotKey, BotKey], list[int]]] = {}
        self.history: dict[str, dict[BotKey, list[tuple[float, float, str]]]] = {}
        self.applied: set[str] = set()

    def row(self, game_id: str, key: BotKey) -> Row:
        """The row of ``key``, or the one it would start with."""
        rows = self.rows.get(game_id, {})
        if key in rows:
            return rows[key]
        prev = self.latest.get(game_id, {}).get(key[0])
        return new_row(key[0], key[1], rows.get((key[0], prev)) if prev is not None else None)

    def apply(self, result: Mapping[str, Any]) -> Update | None:
        """Apply a result once; None if it does not count or was applied before."""
        match_id = str(result["match_id"])
        if not counts(result) or match_id in self.applied:
            return None
        game_id = str(result["game_id"])
        before = {seat_key(s): self.row(game_id, seat_key(s)) for s in result["seats"]}
        update = rate(result, before)
        self.applied.add(match_id)
        rows = self.rows.setdefault(game_id, {})
        latest = self.latest.setdefault(game_id, {})
        for key, row in update.rows.items():
            if key not in rows:
                latest[key[0]] = key[1]
            rows[key] = row
            self.history.setdefault(game_id, {}).setdefault(key, []).append(
                (update.finished_at, row.rating, update.match_id)
            )
        h2h = self.h2h.setdefault(game_id, {})
        for pair in update.pairs:
            a, b, s = (pair.a, pair.b, pair.score) if pair.a < pair.b else (pair.b, pair.a, 1.0 - pair.score)
            counts_ = h2h.setdefault((a, b), [0, 0, 0])
            counts_[0 if s == 1.0 else 1 if s == 0.5 else 2] += 1
        return update

    def apply_all(self, results: Iterable[Mapping[str, Any]]) -> int:
        return sum(1 for r in results if self.apply(r) is not None)

    def leaderboard(self, game_id: str) -> list[Row]:
        """Rows best first; ties by name and version so the order is deterministic."""
        return sorted(self.rows.get(game_id, {}).values(), key=lambda r: (-r.rating, r.name, r.version))
