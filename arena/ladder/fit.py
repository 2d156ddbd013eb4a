"""A whole-history rating fit on the Elo scale: the ratings that make every stored result most likely.

Why beside the running Elo: an Elo rating is a running average of its recent results (it wanders by
about 46 points at K=24 and forgets), while a bot version does not change; the fit weighs every game
it ever played equally, so with enough games it settles closer to the truth and its error bar keeps
shrinking. It is a pure function of the set of results (their order does not matter), so a live
ladder and ``arena ladder rebuild`` that hold the same results agree on it.

The model is Bradley-Terry on the Elo scale, as BayesElo and Ordo use: ``P(a beats b) = 1 / (1 +
10^((R_b - R_a) / 400))``. A result of 3 or 4 seats is decomposed into its pairs of seats, each scored
from the places (better 1, shared 0.5, worse 0) and weighted ``1 / (players - 1)``, the same
decomposition as the running Elo (``arena.ladder.elo``), so one match weighs about one two-player game.
A weak Gaussian prior (mean ``INITIAL_RATING``, ``PRIOR_SD``) keeps a bot with only wins finite and pins
the scale's origin. The maximum is found by Newton steps per rating (Gauss-Seidel) on the pair counts,
which the prior makes converge; each error bar is ``1.96 / sqrt(curvature)`` of the log-likelihood at
the maximum in that rating, the others held at theirs (the conditional bar, as BayesElo's default). Steps
are capped at ``MAX_STEP``: far from the maximum the curvature is nearly flat and a full step overshoots.
Events fit the same model with full Newton steps and the covariance (``arena.events.rating``): tens of
bots, where the likelihood that one place is above the next needs the covariance and a matrix is cheap.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from arena.ladder.elo import ELO_SCALE, INITIAL_RATING, PRIOR_SD, Z95, BotKey, pair_score
from arena.results import HEAD, SEAT, Record, counts

P = TypeVar("P", bound=Hashable)

TOLERANCE: Final = 1e-6  # rating points: the largest step of the last sweep
MAX_STEP: Final = 100.0  # rating points: a Newton step far from the maximum (flat curvature) could overshoot
MAX_SWEEPS: Final = 10_000


@dataclass(frozen=True, slots=True)
class Fitted:
    """One player's fitted rating, its standard deviation and how many results it took part in."""

    rating: float
    sd: float
    games: int

    @property
    def error(self) -> float:
        """Half-width of the 95% interval around ``rating``."""
        return Z95 * self.sd


Placing = Sequence[tuple[P, Any]]
"""One result: (player, place) per seat; places compare, lower is better, equal places are shared."""


def fit(
    results: Iterable[Placing[P]],
    *,
    prior_sd: float = PRIOR_SD,
    center: float = INITIAL_RATING,
    players: Iterable[P] = (),
    start: Mapping[P, float] | None = None,
) -> dict[P, Fitted]:
    """The maximum a posteriori ratings of every player in ``results`` (and in ``players``, who get the
    prior alone if they played nothing). A player in two seats of one result is not compared with itself.
    ``start``: ratings to begin the search from (a previous fit: fewer sweeps; the answer is the same within
    ``TOLERANCE``, not to the bit, so the ladder does not use it)."""
    # exact sums whatever the order of the results: per pair, integer counts by the weight's denominator
    counted: dict[P, dict[P, dict[int, list[int]]]] = {}  # a -> b -> players - 1 -> [pair games, a's halves]
    games: dict[P, int] = dict.fromkeys(players, 0)
    for result in results:
        seats = list(result)
        n = len(seats)
        if n < 2:
            continue
        for p in {p for p, _ in seats}:
            games[p] = games.get(p, 0) + 1
        for i in range(n):
            a, pa = seats[i]
            for j in range(i + 1, n):
                b, pb = seats[j]
                if a == b:
                    continue
                halves = int(2 * pair_score(pa, pb))
                ca = counted.setdefault(a, {}).setdefault(b, {}).setdefault(n - 1, [0, 0])
                cb = counted.setdefault(b, {}).setdefault(a, {}).setdefault(n - 1, [0, 0])
                ca[0] += 1
                cb[0] += 1
                ca[1] += halves
                cb[1] += 2 - halves
    order = sorted(games, key=repr)  # a fixed order of the sweeps and sums: the same results, the same bits
    opponents: dict[P, list[tuple[P, float, float]]] = {}  # a -> (b, games' worth, a's score) in order
    for a in order:
        by_b = counted.get(a, {})
        opponents[a] = [
            (
                b,
                sum(c[0] / d for d, c in sorted(by_b[b].items())),
                sum(c[1] / (2 * d) for d, c in sorted(by_b[b].items())),
            )
            for b in sorted(by_b, key=repr)
        ]
    rating = {a: center if start is None else start.get(a, center) for a in order}
    inv_prior = 1.0 / (prior_sd * prior_sd)
    for _ in range(MAX_SWEEPS):
        largest = 0.0
        for a in order:
            step = max(-MAX_STEP, min(MAX_STEP, _newton(rating[a], rating, opponents[a], center, inv_prior)[0]))
            rating[a] += step
            largest = max(largest, abs(step))
        # at the maximum the ratings average ``center`` (every rating has the same prior and the results'
        # gradients cancel in pairs): moving them there at once spares the sweeps' slowest direction
        shift = center - math.fsum(rating.values()) / len(rating) if rating else 0.0
        for a in order:
            rating[a] += shift
        if largest < TOLERANCE:
            break
    out = {}
    for a in order:
        curvature = _newton(rating[a], rating, opponents[a], center, inv_prior)[1]
        out[a] = Fitted(rating[a], 1.0 / math.sqrt(curvature), games[a])
    return out


def _newton(
    ra: float, rating: Mapping[P, float], opponents: Sequence[tuple[P, float, float]], center: float,
    inv_prior: float,
) -> tuple[float, float]:  # fmt: skip
    """Newton's step for a rating ``ra`` (the others fixed) and the log-posterior's curvature there."""
    grad = (center - ra) * inv_prior
    curv = inv_prior
    for b, w, s in opponents:
        e = 1.0 / (1.0 + math.pow(10.0, (rating[b] - ra) / 400.0))
        grad += (s - w * e) / ELO_SCALE
        curv += w * e * (1.0 - e) / (ELO_SCALE * ELO_SCALE)
    return grad / curv, curv


def placings(records: Iterable[Record]) -> Iterable[list[tuple[BotKey, tuple[int, int]]]]:
    """The ladder's stored result records (``arena.results.record``) as placings for ``fit``: only those that
    count on the ladder, a forfeited seat after every active one (``elo.places``)."""
    for rec in records:
        if counts(rec):
            yield [((rec[i], rec[i + 1]), (int(rec[i + 3]), int(rec[i + 2]))) for i in range(HEAD, len(rec), SEAT)]


def fit_records(records: Iterable[Record], start: Mapping[BotKey, float] | None = None) -> dict[BotKey, Fitted]:
    """``fit`` over the counting records of one game's ladder."""
    return fit(placings(records), start=start)
