"""The whole-competition rating fit, shared by events and local tournaments: maximum likelihood on the
Elo scale (Bradley-Terry, as BayesElo and Ordo fit), with error bars and the likelihood of superiority.

Pairwise decomposition: as the ladder scores a match (``arena.ladder.elo``), every two seats of a match are
one pairwise game (1 ahead, 0.5 level, 0 behind; a forfeited seat behind every active one), weighted
``1 / (n - 1)`` so that a table of ``n`` is worth one game to each seat.

The ratings maximise the likelihood of those games times a normal prior of ``prior_sd`` points around the
field's mean (the ladder's prior by default), which keeps a bot that won or lost everything finite; they
average 0. Their covariance is the inverse of the log posterior's curvature; the 95% error bar of a rating
is 1.96 standard deviations of its difference from the field's mean (two bots alone: half the bar of their
difference). The likelihood that bot ``i`` is stronger than ``j`` (LOS) is the normal probability of a
positive difference, from the two ratings' variances and their covariance.

The ladder's whole-history fit (``arena.ladder.fit``) is the same model and decomposition solved another
way: sweeps per rating that scale to 100,000 versions but give no covariance. An event has tens of bots
and needs the covariance (LOS, the error of a difference), so it takes the full Newton step and inverts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.ladder.elo import ELO_SCALE, PRIOR_SD, Z95, pair_score, places
from referee.wire.values import EndReason, MatchResult


@dataclass(frozen=True)
class PairGame:
    """One pairwise comparison of a match: bot ``a``'s score against bot ``b`` (1, 0.5, 0) and its
    weight (``1 / (seats - 1)``)."""

    a: int
    b: int
    score: float
    weight: float


def pair_games(result: MatchResult, index: Mapping[str, int]) -> list[PairGame]:
    """The pairwise games of a match (none if it was aborted); ``index`` maps a seat's bot name to its bot."""
    if result.end_reason is EndReason.ABORTED:
        return []
    return seat_pairs([index[s.bot_name] for s in result.seats],
                      places([{"rank": s.rank, "status": s.status} for s in result.seats]))  # fmt: skip


def seat_pairs(bots: Sequence[int], place: Sequence[Any]) -> list[PairGame]:
    """The pairwise games of one table: ``bots`` by seat and their comparable places (lower is better)."""
    weight = 1.0 / (len(bots) - 1)
    return [PairGame(bots[i], bots[j], pair_score(place[i], place[j]), weight)
            for i, j in itertools.combinations(range(len(bots)), 2)]  # fmt: skip


@dataclass(frozen=True)
class Fit:
    """Ratings (Elo, mean 0), their 95% error bars, and the covariance of the ratings' deviations from the
    field's mean (Elo squared)."""

    ratings: list[float]
    errors: list[float]
    cov: list[list[float]]

    def los(self, i: int, j: int) -> float:
        """The likelihood that bot ``i`` is stronger than bot ``j`` (0.5 for a bot against itself)."""
        var = self.cov[i][i] + self.cov[j][j] - 2 * self.cov[i][j]
        diff = self.ratings[i] - self.ratings[j]
        if var <= 0:
            return 0.5 if diff == 0 else float(diff > 0)
        return 0.5 * (1.0 + math.erf(diff / math.sqrt(2 * var)))


def fit(bots: int, pairs: Sequence[PairGame], prior_sd: float = PRIOR_SD) -> Fit:
    """The fit of the module doc: Newton's method on the log posterior, which is strictly concave."""
    if bots == 0:
        return Fit([], [], [])
    x = [0.0] * bots  # in natural log-odds units: Elo / ELO_SCALE
    prior = (ELO_SCALE / prior_sd) ** 2  # prior precision in those units
    hessian: list[list[float]] = []
    for _ in range(200):
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
    full = invert(hessian)  # the posterior covariance; the ratings' common level is pinned by the prior alone,
    row = [sum(r) / bots for r in full]  # so what is reported is the covariance of x_i - mean(x)
    everything = sum(row) / bots
    scale = ELO_SCALE**2
    cov = [[scale * (full[i][j] - row[i] - row[j] + everything) for j in range(bots)] for i in range(bots)]
    return Fit(
        ratings=[xi * ELO_SCALE for xi in x],
        errors=[Z95 * math.sqrt(max(cov[i][i], 0.0)) for i in range(bots)],
        cov=cov,
    )


def fit_elo(bots: int, pairs: Sequence[PairGame], prior_sd: float = PRIOR_SD) -> tuple[list[float], list[float]]:
    """``fit``'s ratings and 95% error bars."""
    f = fit(bots, pairs, prior_sd)
    return f.ratings, f.errors


def solve(matrix: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float]:
    """``matrix^-1 vector`` by Gaussian elimination with partial pivoting (a small symmetric positive
    definite matrix)."""
    n = len(vector)
    rows = [[*matrix[i], vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        top = rows[col]
        for r in range(col + 1, n):
            if (f := rows[r][col] / top[col]) != 0.0:
                rows[r] = [a - f * b for a, b in zip(rows[r], top, strict=True)]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (rows[r][n] - sum(rows[r][c] * out[c] for c in range(r + 1, n))) / rows[r][r]
    return out


def invert(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    """The inverse by one Gauss-Jordan elimination with partial pivoting: n^3 steps, where a ``solve`` per
    column took n^4 (1.6 s for a 64-bot event's covariance, ``benchmarks/event_standings.py``)."""
    n = len(matrix)
    rows = [[*matrix[i], *(1.0 if i == j else 0.0 for j in range(n))] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        top = rows[col]
        scale = 1.0 / top[col]
        top[:] = [v * scale for v in top]
        for r in range(n):
            if r != col and (f := rows[r][col]) != 0.0:
                row = rows[r]
                rows[r] = [a - f * b for a, b in zip(row, top, strict=True)]
    return [row[n:] for row in rows]
