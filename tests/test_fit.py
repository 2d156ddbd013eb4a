"""The whole-history rating fit (arena.ladder.fit) on data whose maximum-likelihood ratings are known."""

from __future__ import annotations

import math
import random

from arena import results
from arena.ladder import fit
from arena.ladder.elo import ELO_SCALE, INITIAL_RATING, PRIOR_SD
from tests.test_elo import result, seat

FLAT = 1e9  # a prior so weak the fit is the plain maximum likelihood


def games(a: str, b: str, a_wins: int, draws: int = 0, b_wins: int = 0) -> list[list[tuple[str, int]]]:
    return [[(a, 1), (b, 2)]] * a_wins + [[(a, 1), (b, 1)]] * draws + [[(a, 2), (b, 1)]] * b_wins


def test_even_results_give_equal_ratings_at_the_center_with_the_binomial_error_bar() -> None:
    out = fit.fit(games("a", "b", 10, 4, 10))
    assert math.isclose(out["a"].rating, INITIAL_RATING, abs_tol=1e-6)
    assert math.isclose(out["b"].rating, INITIAL_RATING, abs_tol=1e-6)
    assert out["a"].games == out["b"].games == 24
    # 24 even games: information 24 * 1/4 per (rating point / ELO_SCALE)^2, plus the prior's
    sd = 1.0 / math.sqrt(24 * 0.25 / ELO_SCALE**2 + 1.0 / PRIOR_SD**2)
    assert math.isclose(out["a"].sd, sd, rel_tol=1e-9)
    assert math.isclose(out["a"].error, 1.96 * sd, rel_tol=1e-9)


def test_a_three_to_one_record_is_the_elo_difference_of_a_three_to_one_expectation() -> None:
    out = fit.fit(games("a", "b", 300, 0, 100), prior_sd=FLAT)
    assert math.isclose(out["a"].rating - out["b"].rating, 400 * math.log10(3), abs_tol=1e-3)
    assert math.isclose(out["a"].rating + out["b"].rating, 2 * INITIAL_RATING, abs_tol=1e-3)


def test_a_consistent_chain_of_three_is_fitted_exactly() -> None:
    """A beats B 3:1, B beats C 3:1, A beats C 9:1: Bradley-Terry fits these exactly, 190.8 points apart."""
    data = games("a", "b", 30, 0, 10) + games("b", "c", 30, 0, 10) + games("a", "c", 90, 0, 10)
    out = fit.fit(data, prior_sd=FLAT)
    step = 400 * math.log10(3)
    assert math.isclose(out["a"].rating - out["b"].rating, step, abs_tol=1e-3)
    assert math.isclose(out["b"].rating - out["c"].rating, step, abs_tol=1e-3)


def test_the_order_of_results_does_not_matter_to_the_last_bit() -> None:
    rng = random.Random(5)
    names = "abcdef"
    data = [[(n, rng.randrange(3)) for n in rng.sample(names, rng.choice((2, 3, 4)))] for _ in range(300)]
    first = fit.fit(data)
    rng.shuffle(data)
    assert fit.fit(data) == first


def test_a_four_player_result_is_its_six_pairs_each_a_third_of_a_game() -> None:
    four = [("a", 1), ("b", 2), ("c", 2), ("d", 4)]
    pairs = [[four[i], four[j]] for i in range(4) for j in range(i + 1, 4)]
    whole, split = fit.fit([four] * 3 + games("a", "d", 2, 1, 1)), fit.fit(pairs + games("a", "d", 2, 1, 1))
    for p in "abcd":
        assert math.isclose(whole[p].rating, split[p].rating, abs_tol=1e-6)
        assert math.isclose(whole[p].sd, split[p].sd, rel_tol=1e-9)
    assert math.isclose(whole["b"].rating, whole["c"].rating, abs_tol=1e-5)  # a shared place


def test_only_wins_stay_finite_and_a_player_who_played_nothing_gets_the_prior() -> None:
    out = fit.fit(games("a", "b", 20), players=["idle"])
    assert INITIAL_RATING < out["a"].rating < INITIAL_RATING + 3 * PRIOR_SD
    idle = out["idle"]
    assert math.isclose(idle.rating, INITIAL_RATING, abs_tol=1e-6) and idle.sd == PRIOR_SD and idle.games == 0
    assert fit.fit([]) == {}


def test_a_bot_in_two_seats_is_not_compared_with_itself() -> None:
    out = fit.fit([[("a", 1), ("a", 2), ("b", 3)]] * 4, prior_sd=FLAT / 1e6)
    assert out["a"].rating > out["b"].rating
    assert out["a"].games == 4


def test_ladder_records_count_as_the_ladder_counts_them() -> None:
    """Forfeited seats come last whatever their rank; unrated and aborted results are left out."""
    stored = [
        result("m1", "shanghaien", [seat(0, "x", 1, status="forfeited"), seat(1, "y", 2)]),
        result("m2", "shanghaien", [seat(0, "x", 1), seat(1, "y", 2)], rated=False),
        result("m3", "shanghaien", [seat(0, "x", 1), seat(1, "y", 2)], end_reason="aborted"),
    ]
    out = fit.fit_records([results.record(r) for r in stored])
    assert out[("y", "1")].rating > out[("x", "1")].rating
    assert out[("x", "1")].games == out[("y", "1")].games == 1


def test_a_warm_start_finds_the_same_maximum() -> None:
    data = games("a", "b", 30, 5, 10) + games("b", "c", 12, 0, 20) + [[("a", 1), ("b", 2), ("c", 3), ("d", 4)]] * 5
    cold = fit.fit(data)
    warm = fit.fit(data, start={"a": 2400.0, "b": 600.0, "c": 1500.0})
    assert all(math.isclose(cold[p].rating, warm[p].rating, abs_tol=1e-3) for p in cold)
