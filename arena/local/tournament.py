"""Local tournaments: every pairing (or table) of a set of bots through one loopback referee, the cross
table of their pairwise results, and Elo ratings fitted to them. Planning and scoring are pure
functions; ``tournament`` plays the plan with ``arena.local.play.run_matches``.

Tables. A game of ``n`` seats puts ``n`` bots at a table:

- ``round-robin``: every combination of ``n`` of the bots (two players: every pairing);
- ``gauntlet``: the first bot at every table, with every combination of ``n - 1`` of the others (two
  players: the first bot against each other one).

Seeds and seats. Every table plays the same seeds ``SEED:0``, ``SEED:1``, ...; each seed once in every
rotation of the seats (``n`` matches a seed), so ``games`` per table is rounded up to a multiple of ``n``.
Match ``SEED-tTT-JJJJ-R`` is table ``TT``, seed ``J``, rotation ``R``.

Scores. As the ladder scores a match (``arena.ladder.elo``): every two seats of a match are one pairwise
game (1 ahead, 0.5 level, 0 behind; a forfeited seat behind every active one), weighted ``1 / (n - 1)``
so that a table is worth one game to each seat. The cross table counts the pairwise games unweighted.

Elo. The ratings maximise the Bradley-Terry (logistic Elo) likelihood of the weighted pairwise results,
with a normal prior of ``PRIOR_SD`` points around the field's mean (the ladder's prior), which keeps a
bot that won or lost everything finite; they average 0. The covariance of the ratings is the inverse
Hessian (the curvature of the log posterior); the 95% error bar of a rating is 1.96 standard deviations
of its difference from the field's mean (two bots alone: half the error bar of their difference).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from arena.ladder.elo import ELO_SCALE, PRIOR_SD, Z95, pair_score, places
from arena.local.launch import file_labels
from arena.local.play import MatchPlan, Player, PlayReport, run_matches
from referee import games as engines
from referee.games import TimeControl
from referee.wire.values import EndReason, MatchResult

Format = Literal["round-robin", "gauntlet"]
FORMATS: Final[tuple[Format, ...]] = ("round-robin", "gauntlet")


def tables(bots: int, seats: int, fmt: Format) -> list[tuple[int, ...]]:
    """The tables of a tournament of ``bots`` bots (indices) for a game of ``seats`` seats.
    ValueError when there are too few bots to fill one table."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if bots < seats or bots < 2:
        raise ValueError(f"a {seats}-seat game needs at least {max(seats, 2)} bots, got {bots}")
    if fmt == "round-robin":
        return list(itertools.combinations(range(bots), seats))
    return [(0, *rest) for rest in itertools.combinations(range(1, bots), seats - 1)]


def games_per_table(games: int, seats: int) -> int:
    """``games`` rounded up to whole rotations of the seats."""
    return -(-games // seats) * seats


def plan(table_list: Sequence[tuple[int, ...]], games: int, seed: str) -> list[MatchPlan]:
    """Every table's matches, seed by seed (so a run cut short has played every table about as much):
    seed ``SEED:j`` in every rotation of the table's seats."""
    seats = len(table_list[0]) if table_list else 2
    out = []
    for j in range(games_per_table(games, seats) // seats):
        for t, table in enumerate(table_list):
            for r in range(seats):
                order = tuple(table[(r + i) % seats] for i in range(seats))
                out.append(MatchPlan(f"{seed}-t{t:02d}-{j:04d}-{r}", order, f"{seed}:{j}"))
    return out


@dataclass(frozen=True)
class PairGame:
    """One pairwise comparison of a match: bot ``a``'s score against bot ``b`` (1, 0.5, 0) and its
    weight (``1 / (seats - 1)``)."""

    a: int
    b: int
    score: float
    weight: float


def pair_games(result: MatchResult, index: dict[str, int]) -> list[PairGame]:
    """The pairwise games of a match (none if it was aborted); ``index`` maps a seat's bot name to its bot."""
    if result.end_reason is EndReason.ABORTED:
        return []
    place = places([{"rank": s.rank, "status": s.status} for s in result.seats])
    bots = [index[s.bot_name] for s in result.seats]
    weight = 1.0 / (len(bots) - 1)
    return [PairGame(bots[i], bots[j], pair_score(place[i], place[j]), weight)
            for i, j in itertools.combinations(range(len(bots)), 2)]  # fmt: skip


def fit_elo(bots: int, pairs: Sequence[PairGame], prior_sd: float = PRIOR_SD) -> tuple[list[float], list[float]]:
    """Ratings (mean 0) and their 95% error bars, in Elo, from weighted pairwise games (see the module
    doc). Newton's method on the log posterior, which is strictly concave."""
    x = [0.0] * bots  # in natural log-odds units: Elo / ELO_SCALE
    prior = (ELO_SCALE / prior_sd) ** 2  # prior precision in those units
    hessian: list[list[float]] = []
    for _ in range(100):
        grad = [-prior * xi for xi in x]
        hessian = [[prior if i == j else 0.0 for j in range(bots)] for i in range(bots)]  # negated
        for g in pairs:
            e = 1.0 / (1.0 + math.exp(x[g.b] - x[g.a]))
            grad[g.a] += g.weight * (g.score - e)
            grad[g.b] -= g.weight * (g.score - e)
            c = g.weight * e * (1.0 - e)
            hessian[g.a][g.a] += c
            hessian[g.b][g.b] += c
            hessian[g.a][g.b] -= c
            hessian[g.b][g.a] -= c
        step = solve(hessian, grad)
        x = [xi + s for xi, s in zip(x, step, strict=True)]
        if max((abs(s) for s in step), default=0.0) < 1e-12:
            break
    cov = invert(hessian)  # the posterior covariance; the ratings' common level is pinned by the prior alone,
    row = [sum(r) / bots for r in cov]  # so what is reported is the variance of x_i - mean(x)
    everything = sum(row) / bots
    ratings = [xi * ELO_SCALE for xi in x]
    errors = [Z95 * ELO_SCALE * math.sqrt(max(cov[i][i] - 2 * row[i] + everything, 0.0)) for i in range(bots)]
    return ratings, errors


def solve(matrix: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float]:
    """``matrix^-1 vector`` by Gaussian elimination with partial pivoting (a small symmetric positive
    definite matrix)."""
    n = len(vector)
    rows = [[*matrix[i], vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(col + 1, n):
            f = rows[r][col] / rows[col][col]
            for c in range(col, n + 1):
                rows[r][c] -= f * rows[col][c]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (rows[r][n] - sum(rows[r][c] * out[c] for c in range(r + 1, n))) / rows[r][r]
    return out


def invert(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    n = len(matrix)
    columns = [solve(matrix, [1.0 if i == j else 0.0 for i in range(n)]) for j in range(n)]
    return [[columns[j][i] for j in range(n)] for i in range(n)]


@dataclass
class TournamentReport:
    """What a tournament played: the bots, its tables and the run (results, transcripts, troubles)."""

    players: list[Player]
    format: Format
    tables: list[tuple[int, ...]]
    games_per_table: int
    seed: str
    run: PlayReport
    pairs: list[PairGame] = field(default_factory=list)

    def __post_init__(self) -> None:
        index = {p.label: i for i, p in enumerate(self.players)}
        self.pairs = [g for r in self.run.results for g in pair_games(r, index)]

    def problems(self) -> list[str]:
        return self.run.problems()

    def standings(self) -> list[dict[str, Any]]:
        """One row per bot, best Elo first: matches, wins/draws/losses (sole first place, shared first,
        other), pairwise points and games, score (points / games, None before any), Elo and its 95% bar."""
        ratings, errors = fit_elo(len(self.players), self.pairs)
        rows: list[dict[str, Any]] = []
        for i, p in enumerate(self.players):
            points = sum(g.score if g.a == i else 1.0 - g.score for g in self.pairs if i in (g.a, g.b))
            count = sum(1 for g in self.pairs if i in (g.a, g.b))
            wins = draws = losses = matches = 0
            for r in self.run.results:
                seat = next((k for k, s in enumerate(r.seats) if s.bot_name == p.label), None)
                if seat is None or r.end_reason is EndReason.ABORTED:
                    continue
                matches += 1
                place = places([{"rank": s.rank, "status": s.status} for s in r.seats])
                first = place[seat] == min(place)
                shared = place.count(place[seat]) > 1
                wins += first and not shared
                draws += first and shared
                losses += not first
            rows.append({
                "player": p.label, "bot": p.spec, "games": matches, "wins": wins, "draws": draws, "losses": losses,
                "points": points, "pair_games": count, "score": points / count if count else None,
                "elo": ratings[i], "elo_error": errors[i],
            })  # fmt: skip
        rows.sort(key=lambda row: (-row["elo"], row["player"]))
        return [{"rank": rank, **row} for rank, row in enumerate(rows, 1)]

    def cross_table(self) -> list[dict[str, Any]]:
        """For every ordered pair of bots (``player``, ``opponent``): the player's pairwise points, the
        pairwise games and the score (None when they never met)."""
        out: list[dict[str, Any]] = []
        for i, p in enumerate(self.players):
            for j, q in enumerate(self.players):
                if i == j:
                    continue
                mine = [g.score if g.a == i else 1.0 - g.score for g in self.pairs if {g.a, g.b} == {i, j}]
                out.append({"player": p.label, "opponent": q.label, "points": sum(mine), "games": len(mine),
                            "score": sum(mine) / len(mine) if mine else None})  # fmt: skip
        return out


def labels(specs: Sequence[str]) -> list[str]:
    """A label per bot: the class or reference name (a command's file name, an external bot's NAME:
    ``arena.local.launch.spec_label``; with its file when two files have a class of one name:
    ``file_labels``), with ``#k`` (its position) when two would clash."""
    bases = file_labels(specs)
    return [b if bases.count(b) == 1 else f"{b}#{k}" for k, b in enumerate(bases)]


async def tournament(
    game_id: str,
    players: list[Player],
    *,
    fmt: Format,
    games: int,
    seed: str,
    concurrency: int,
    out_dir: Path,
    time_control: TimeControl | None = None,
    on_result: Callable[[MatchResult], None] | None = None,
    check: bool = True,
    listen: str = "127.0.0.1:0",
    wait_s: float = 600.0,
    say: Callable[[str], None] | None = None,
) -> TournamentReport:
    """Play a tournament (module doc); ``games`` per table, rounded up to whole rotations of the seats.
    ``listen``, ``wait_s``, ``say``: as ``run_matches``'s (bots in other languages)."""
    seats = engines.get(game_id).num_players
    table_list = tables(len(players), seats, fmt)
    matches = plan(table_list, games, seed)
    run = await run_matches(game_id, players, matches, concurrency=concurrency, out_dir=out_dir,
                            time_control=time_control, on_result=on_result, check=check, listen=listen,
                            wait_s=wait_s, say=say)  # fmt: skip
    return TournamentReport(players, fmt, table_list, games_per_table(games, seats), seed, run)
