"""Sequential probability ratio tests on match results: pure functions over counts, no clock, no I/O.

The test is the generalized SPRT (GSPRT) of Michel Van den Bergh, as fishtest, fastchess and OpenBench
run it. Results come in *units*, each with a score in [0, 1] on a grid of ``K + 1`` values
``0, 1/K, ..., 1``; ``counts[i]`` is how many units scored ``i / K``. The units are taken to be
independent draws from an unknown distribution on that grid, and the log-likelihood ratio of
"expected score s1" against "expected score s0" is the ratio of the two constrained maximum likelihood
estimates of that distribution (Van den Bergh, "Comments on normalized Elo", and "Support of the MLE
for a multinomial", fishtest's ``stats/LLRcalc.py``):

- ``K = 2``: one game, loss/draw/win (the *trinomial* model);
- ``K = 4``: a pair of games with the same seed and the seats swapped, scored 0, 1/2, 1, 3/2 or 2
  points (the *pentanomial* model: LL, LD, LW+DD, DW, WW);
- any other ``K``: what ``arena play`` makes of 3-4 player tables (see ``docs/bots.md``): a unit is a
  table, or a rotation of tables on one seed, scored by the hero's mean pairwise result.

Zero counts are replaced by ``1e-3`` before the estimate (fishtest's and fastchess's regularization), so
that every expected score strictly between 0 and 1 is reachable.

Two Elo scales for the hypotheses:

- ``logistic`` (the arena's Elo, as ``arena play`` reports it and the ladder rates): the expected score
  per game is ``1 / (1 + 10^(-elo/400))``;
- ``normalized`` (fastchess's default, fishtest's): ``nelo = 800 / ln 10 * (mu - 1/2) / sigma`` with
  ``sigma`` the standard deviation of one game's score; a unit of ``m`` games has the t-value
  ``nelo / (800 / ln 10) * sqrt(m)``.

The test stops at the first unit after which the LLR is at or beyond a bound:
``log(beta / (1 - alpha))`` accepts H0 (elo = elo0), ``log((1 - beta) / alpha)`` accepts H1 (elo1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

EloModel = Literal["logistic", "normalized"]
ELO_MODELS: Final[tuple[EloModel, ...]] = ("logistic", "normalized")
Decision = Literal["h0", "h1", "inconclusive"]
NELO_PER_T: Final = 800.0 / math.log(10)  # normalized Elo per unit of t-value (fishtest's nelo_divided_by_nt)
REGULARIZE: Final = 1e-3


def logistic_score(elo: float) -> float:
    """The expected score per game of a player ``elo`` points stronger than its opponents."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """The LLR bounds (lower: accept H0, upper: accept H1) for error rates ``alpha`` and ``beta``."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def decide(llr_value: float, lower: float, upper: float) -> Decision | None:
    """``h0`` or ``h1`` once the LLR is at or beyond a bound, else None (play on)."""
    if llr_value >= upper:
        return "h1"
    if llr_value <= lower:
        return "h0"
    return None


def empirical(counts: Sequence[float]) -> tuple[float, list[float], list[float]]:
    """The regularized total and the grid and probabilities of the empirical distribution of ``counts``."""
    if len(counts) < 3:
        raise ValueError("a unit needs at least three possible scores (loss, draw, win)")
    if any(c < 0 for c in counts):
        raise ValueError("counts cannot be negative")
    regular = [float(c) if c > 0 else REGULARIZE for c in counts]
    total = sum(regular)
    k = len(counts) - 1
    return total, [i / k for i in range(k + 1)], [c / total for c in regular]


def mean_and_variance(values: Sequence[float], probs: Sequence[float]) -> tuple[float, float]:
    mu = sum(p * a for a, p in zip(values, probs, strict=True))
    return mu, sum(p * (a - mu) ** 2 for a, p in zip(values, probs, strict=True))


def _secular_root(phi: Sequence[float], probs: Sequence[float]) -> float:
    """The root ``x`` of ``sum_i p_i phi_i / (1 + x phi_i) = 0`` where every ``1 + x phi_i`` is positive.

    Needs some ``phi_i`` below zero and some above; the left side falls from +inf to -inf on that
    interval, so bisection finds the root to the last bit."""
    lo, hi = -1.0 / max(phi), -1.0 / min(phi)
    if not lo < hi:
        raise ValueError("the secular equation has no root: the scores do not straddle the target")

    def f(x: float) -> float:
        return sum(p * a / (1.0 + x * a) for a, p in zip(phi, probs, strict=True))

    for _ in range(2000):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def mle_with_mean(values: Sequence[float], probs: Sequence[float], s: float) -> list[float]:
    """The distribution on ``values`` with expectation ``s`` that is most likely to have produced the
    empirical ``probs`` (Van den Bergh's Proposition 1.1: ``q_i = p_i / (1 + x (a_i - s))``)."""
    phi = [a - s for a in values]
    x = _secular_root(phi, probs)
    return [p / (1.0 + x * a) for a, p in zip(phi, probs, strict=True)]


def mle_with_t_value(values: Sequence[float], probs: Sequence[float], ref: float, t: float) -> list[float]:
    """The distribution on ``values`` with t-value ``(mu - ref) / sigma = t`` most likely to have produced
    ``probs`` (Van den Bergh, "Comments on normalized Elo", section 4.1): a fixed point, starting from the
    uniform distribution, of solving the secular equation with the moments of the previous estimate."""
    q = [1.0 / len(values)] * len(values)
    for _ in range(1000):
        mu, var = mean_and_variance(values, q)
        sigma = math.sqrt(var)
        phi = [a - ref - t * sigma * (1.0 + ((a - mu) / sigma) ** 2) / 2.0 for a in values]
        x = _secular_root(phi, probs)
        new = [p / (1.0 + x * f) for f, p in zip(phi, probs, strict=True)]
        change = max(abs(a - b) for a, b in zip(new, q, strict=True))
        q = new
        if change < 1e-13:
            break
    return q


def _llr_per_unit(probs: Sequence[float], q0: Sequence[float], q1: Sequence[float]) -> float:
    return sum(p * (math.log(b) - math.log(a)) for p, a, b in zip(probs, q0, q1, strict=True))


def llr(
    counts: Sequence[float], elo0: float, elo1: float, *, elo: EloModel = "logistic", games_per_unit: int = 1
) -> float:
    """The log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) after ``counts`` (see the module
    doc): 0.0 before the first unit. ``games_per_unit`` matters to the normalized scale only (a pair of
    games: 2)."""
    if not sum(counts):
        return 0.0
    total, values, probs = empirical(counts)
    q0: Sequence[float]
    q1: Sequence[float]
    if elo == "logistic":
        q0, q1 = (mle_with_mean(values, probs, logistic_score(e)) for e in (elo0, elo1))
    elif elo == "normalized":
        root = math.sqrt(games_per_unit)
        q0, q1 = (mle_with_t_value(values, probs, 0.5, e / NELO_PER_T * root) for e in (elo0, elo1))
    else:
        raise ValueError(f"unknown Elo model {elo!r}; known: {', '.join(ELO_MODELS)}")
    return total * _llr_per_unit(probs, q0, q1)


@dataclass(frozen=True)
class SprtConfig:
    """What ``--sprt`` asks for: the two hypotheses, the error rates and the Elo scale."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05
    elo: EloModel = "logistic"

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.elo0, self.elo1, self.alpha, self.beta)):
            raise ValueError("elo0, elo1, alpha and beta must be finite numbers")
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 must be below elo1 (got elo0={self.elo0:g}, elo1={self.elo1:g})")
        if not (0.0 < self.alpha < 1.0 and 0.0 < self.beta < 1.0 and self.alpha + self.beta < 1.0):
            raise ValueError("alpha and beta must lie between 0 and 1, and add up to less than 1")
        if self.elo not in ELO_MODELS:
            raise ValueError(f"unknown Elo model {self.elo!r}; known: {', '.join(ELO_MODELS)}")

    @property
    def bounds(self) -> tuple[float, float]:
        return bounds(self.alpha, self.beta)

    @classmethod
    def parse(cls, items: Sequence[str]) -> SprtConfig:
        """From ``KEY=VALUE`` words (``elo0 elo1 alpha beta`` numbers, ``elo`` logistic|normalized);
        a key not given keeps its default. ValueError says what is wrong."""
        numbers: dict[str, float] = {}
        scale: EloModel = "logistic"
        for item in items:
            key, sep, value = item.partition("=")
            key = key.strip().lower()
            if not sep or not value.strip():
                raise ValueError(f"{item!r} is not KEY=VALUE (keys: elo0, elo1, alpha, beta, elo)")
            if key == "elo":
                if value.strip() not in ELO_MODELS:
                    raise ValueError(f"elo={value} is not one of {', '.join(ELO_MODELS)}")
                scale = "normalized" if value.strip() == "normalized" else "logistic"
            elif key in ("elo0", "elo1", "alpha", "beta"):
                try:
                    numbers[key] = float(value)
                except ValueError:
                    raise ValueError(f"{key}={value} is not a number") from None
            else:
                raise ValueError(f"unknown key {key!r} (keys: elo0, elo1, alpha, beta, elo)")
        return cls(elo=scale, **numbers)


@dataclass
class SprtTally:
    """A running test: units go in (``add``), the LLR and the decision come out. ``grid`` is ``K``, the
    number of steps of a unit's score; ``games_per_unit`` scales the normalized Elo hypotheses.

    The decision is taken once, at the first unit whose LLR reaches a bound, and kept."""

    config: SprtConfig
    grid: int
    games_per_unit: int = 1
    counts: list[int] = field(default_factory=list)
    llr: float = 0.0
    decision: Decision | None = None

    def __post_init__(self) -> None:
        if self.grid < 2:
            raise ValueError("grid must be at least 2")
        if not self.counts:
            self.counts = [0] * (self.grid + 1)

    @property
    def units(self) -> int:
        return sum(self.counts)

    def add(self, score: float) -> Decision | None:
        """Count one unit with ``score`` in [0, 1] (rounded to the grid); the decision so far."""
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"a unit's score lies in [0, 1], not {score}")
        self.counts[round(score * self.grid)] += 1
        c = self.config
        self.llr = llr(self.counts, c.elo0, c.elo1, elo=c.elo, games_per_unit=self.games_per_unit)
        if self.decision is None:
            self.decision = decide(self.llr, *c.bounds)
        return self.decision
