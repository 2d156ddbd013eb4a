"""The SPRT statistics (``arena.local.sprt``), cross-checked against published implementations.

Where the reference numbers come from:

- ``FASTCHESS``: fastchess's own unit tests, ``app/tests/sprt_test.cpp`` of github.com/Disservin/fastchess
  (as stored at commit 0cbac4988fbac5bbe90716a4c36737c00c238bc5), each LLR given there to two decimals
  and checked with doctest's ``Approx(...).epsilon(0.01)``. Its ``Stats(w, l, d)`` is wins, losses,
  draws; ``Stats(ll, ld, wl, dd, wd, ww)`` the pentanomial, whose middle bucket is WL + DD. Two of its
  cases are left out: all draws (``Stats(0, 0, 16700)``) and all double wins (``Stats(0, 0, 0, 0, 0,
  104)``) under the normalized model, where its 2.97 and 2.94 disagree with fishtest's own formula
  (-3.45 and 2.09): degenerate inputs where the two iterative solvers stop at different points.
- ``FISHTEST``: the output of fishtest's published formula, run as it is: ``LLR_logistic(elo0, elo1,
  results)`` and ``LLR_normalized(nelo0, nelo1, results)`` of ``server/fishtest/stats/LLRcalc.py`` of
  github.com/official-stockfish/fishtest (commit b8eecff220b562a0dc2c4e68d1fa02521e06d72c; Michel Van
  den Bergh's GSPRT), with Python 3 and SciPy 1.17, on the counts below (``results`` in fishtest's
  order: L, D, W or LL, LD, LW+DD, DW, WW), printed with ``repr``. Its solver (SciPy's brentq, at most
  10 fixed-point steps for the normalized model) and ours (bisection, iterated to convergence) agree to
  about 1e-11.
"""

from __future__ import annotations

import math

import pytest

from arena.local.sprt import (
    SprtConfig,
    SprtTally,
    bounds,
    decide,
    empirical,
    llr,
    logistic_score,
    mean_and_variance,
    mle_with_mean,
    mle_with_t_value,
)

# (wins, losses, draws), elo0, elo1, Elo model, LLR: fastchess app/tests/sprt_test.cpp
FASTCHESS_TRINOMIAL = [
    ((36433, 36027, 68692), 0.0, 2.0, "normalized", 0.92),
    ((10871, 10650, 20431), -1.75, 0.25, "normalized", 2.30),
    ((21404, 21184, 40708), 0.5, 2.5, "logistic", -1.57),
    ((57433, 57030, 106593), 0.0, 2.0, "logistic", -2.59),
]
# (LL, LD, WL, DD, WD, WW), elo0, elo1, Elo model, LLR: the same file
FASTCHESS_PENTANOMIAL = [
    ((365, 16618, 36029, 200, 16974, 390), 0.0, 2.0, "normalized", 2.25),
    ((127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),
    ((223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),
    ((871, 26175, 55003, 980, 26678, 821), 0.0, 2.0, "logistic", -4.98),
]
# counts (fishtest's order, low score first), elo0, elo1, LLR_logistic, LLR_normalized: fishtest LLRcalc.py, run
FISHTEST = [
    ([36027, 68692, 36433], 0.0, 2.0, None, 0.9232934509457336),
    ([10650, 20431, 10871], -1.75, 0.25, None, 2.297500407106383),
    ([21184, 40708, 21404], 0.5, 2.5, -1.5718887926943381, None),
    ([57030, 106593, 57433], 0.0, 2.0, -2.593024163515815, None),
    ([0, 16700, 0], 0.0, 5.0, None, -3.450539774139151),
    ([40, 12, 48], 0.0, 10.0, 0.21462905622150422, 0.20403000607681926),
    ([13, 3, 34], 0.0, 50.0, 2.671376030953501, 2.5957212033612143),
    ([55, 0, 45], 0.0, 10.0, -0.3292421994724046, -0.3291891952176573),
    ([365, 16618, 36229, 16974, 390], 0.0, 2.0, None, 2.250367703548933),
    ([127, 4883, 10712, 5150, 104], -1.75, 0.25, None, 3.010154196606051),
    ([223, 9863, 21279, 10037, 246], 0.5, 2.5, -3.0741264395890813, None),
    ([871, 26175, 55983, 26678, 821], 0.0, 2.0, -4.978672863444156, None),
    ([0, 0, 0, 0, 104], 0.0, 5.0, None, 2.094954527648188),
    ([3, 10, 30, 12, 5], 0.0, 10.0, 0.27516087707553805, 0.20837380905995165),
    ([3, 10, 30, 12, 5], -5.0, 15.0, 0.5489138463038944, 0.4167196149845895),
    ([3, 10, 30, 12, 5], 0.0, 50.0, -0.8016163250594383, 0.05056182037940837),
    ([0, 2, 9, 14, 25], 0.0, 10.0, 1.4183396337982543, 1.5641111379331913),
    ([0, 2, 9, 14, 25], -5.0, 15.0, 2.8366877113954625, 3.127962745745967),
    ([0, 2, 9, 14, 25], 0.0, 50.0, 6.679194451866902, 7.0474238090442896),
    ([7, 11, 20, 4, 1], 0.0, 10.0, -1.0054210823550023, -0.7602445967005174),
    ([7, 11, 20, 4, 1], -5.0, 15.0, -2.0084216828633474, -1.520571565685879),
    ([7, 11, 20, 4, 1], 0.0, 50.0, -5.6432299453628625, -4.45342759561006),
]


@pytest.mark.parametrize(("wld", "elo0", "elo1", "model", "expected"), FASTCHESS_TRINOMIAL)
def test_trinomial_llr_matches_fastchess(
    wld: tuple[int, int, int], elo0: float, elo1: float, model: str, expected: float
) -> None:
    w, l, d = wld  # noqa: E741
    got = llr([l, d, w], elo0, elo1, elo="normalized" if model == "normalized" else "logistic")
    assert got == pytest.approx(expected, rel=0.01, abs=0.01)


@pytest.mark.parametrize(("penta", "elo0", "elo1", "model", "expected"), FASTCHESS_PENTANOMIAL)
def test_pentanomial_llr_matches_fastchess(
    penta: tuple[int, ...], elo0: float, elo1: float, model: str, expected: float
) -> None:
    ll, ld, wl, dd, wd, ww = penta
    counts = [ll, ld, wl + dd, wd, ww]
    got = llr(counts, elo0, elo1, elo="normalized" if model == "normalized" else "logistic", games_per_unit=2)
    assert got == pytest.approx(expected, rel=0.01, abs=0.01)


@pytest.mark.parametrize(("counts", "elo0", "elo1", "logistic", "normalized"), FISHTEST)
def test_llr_matches_fishtest_formula(
    counts: list[int], elo0: float, elo1: float, logistic: float | None, normalized: float | None
) -> None:
    per_unit = 2 if len(counts) == 5 else 1
    if logistic is not None:
        assert llr(counts, elo0, elo1) == pytest.approx(logistic, abs=1e-9)
    if normalized is not None:
        got = llr(counts, elo0, elo1, elo="normalized", games_per_unit=per_unit)
        assert got == pytest.approx(normalized, abs=1e-9)


def test_bounds_and_decisions() -> None:
    lower, upper = bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944438979166440) and upper == pytest.approx(2.944438979166440)
    assert bounds(0.05, 0.1) == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    assert decide(3.0, lower, upper) == "h1" and decide(-3.0, lower, upper) == "h0"
    assert decide(0.0, lower, upper) is None


def test_the_constrained_estimates_hit_their_constraint() -> None:
    _, values, probs = empirical([3, 10, 30, 12, 5])
    for s in (0.3, logistic_score(10), 0.9):
        q = mle_with_mean(values, probs, s)
        assert sum(q) == pytest.approx(1.0) and mean_and_variance(values, q)[0] == pytest.approx(s)
    for t in (-0.2, 0.0, 0.35):
        q = mle_with_t_value(values, probs, 0.5, t)
        mu, var = mean_and_variance(values, q)
        assert sum(q) == pytest.approx(1.0) and (mu - 0.5) / math.sqrt(var) == pytest.approx(t, abs=1e-9)


@pytest.mark.parametrize("counts", [[3, 10, 30, 12, 5], [7, 2, 9], [1, 0, 4, 2, 0, 6, 3, 0, 1, 0, 2, 0, 0]])
def test_swapping_the_players_negates_the_llr(counts: list[int]) -> None:
    """The other side's view: scores mirrored, hypotheses negated and swapped."""
    assert llr(counts[::-1], -10.0, 5.0) == pytest.approx(-llr(counts, -5.0, 10.0), abs=1e-9)
    assert llr(counts[::-1], -10.0, 5.0, elo="normalized") == pytest.approx(
        -llr(counts, -5.0, 10.0, elo="normalized"), abs=1e-9
    )


def test_a_finer_grid_with_the_same_outcomes_gives_about_the_same_llr() -> None:
    """A 3-4 player table is scored on a finer grid; outcomes that only fall on the trinomial's points give
    the trinomial's LLR but for the tiny regularized mass on the empty points in between."""
    assert llr([40, 0, 12, 0, 48], 0.0, 10.0) == pytest.approx(llr([40, 12, 48], 0.0, 10.0), abs=1e-3)
    assert llr([0, 0, 0], 0.0, 10.0) == 0.0  # before the first unit


def test_config_parsing_and_validation() -> None:
    c = SprtConfig.parse(["elo0=0", "elo1=10", "alpha=0.05", "beta=0.1", "elo=normalized"])
    assert (c.elo0, c.elo1, c.alpha, c.beta, c.elo) == (0.0, 10.0, 0.05, 0.1, "normalized")
    assert SprtConfig.parse([]) == SprtConfig(0.0, 10.0, 0.05, 0.05, "logistic")
    for words, message in [
        (["elo0=5", "elo1=1"], "elo0 must be below elo1"),
        (["alpha=0"], "alpha and beta"),
        (["alpha=0.6", "beta=0.5"], "alpha and beta"),
        (["elo1=nan"], "finite"),
        (["elo1=ten"], "not a number"),
        (["elo1"], "not KEY=VALUE"),
        (["gamma=1"], "unknown key"),
        (["elo=bayesian"], "not one of"),
    ]:
        with pytest.raises(ValueError, match=message):
            SprtConfig.parse(words)


def test_a_tally_decides_once_and_keeps_its_decision() -> None:
    tally = SprtTally(SprtConfig(elo0=0, elo1=100), grid=4, games_per_unit=2)
    decisions = [tally.add(1.0) for _ in range(40)]
    first = decisions.index("h1")
    assert all(d is None for d in decisions[:first]) and set(decisions[first:]) == {"h1"}
    assert tally.llr >= bounds(0.05, 0.05)[1] and tally.units == 40 and tally.counts == [0, 0, 0, 0, 40]
    tally.add(0.0)
    assert tally.decision == "h1"
    even = SprtTally(SprtConfig(elo0=0, elo1=50), grid=2)
    for _ in range(200):
        if even.add(0.5) is not None:
            break
    assert even.decision == "h0"
    with pytest.raises(ValueError):
        even.add(1.5)
