"""Elo rules of the ladder against hand-computed values (no Redis)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.ladder import elo
from arena.ladder.elo import Row, Table


def seat(i: int, name: str, rank: int, status: str = "active", version: str = "1") -> dict[str, Any]:
    return {"seat": i, "bot_name": name, "bot_version": version, "score": 10 - rank, "rank": rank,
            "status": status, "strikes": 0, "refusals": 0}  # fmt: skip


def result(match_id: str, game_id: str, seats: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    out = {"match_id": match_id, "game_id": game_id, "end_reason": "completed", "rated": True,
           "finished_at": 1_700_000_000.0, "seats": seats, "plies": 100, "seed": "s", "seed_sha256": "h",
           "detail": ""}  # fmt: skip
    out.update(over)
    return out


def established(name: str, rating: float) -> Row:
    return Row(name, "1", rating=rating, games=20)


def test_two_players_new_bots_use_the_provisional_k() -> None:
    before = {("a", "1"): elo.new_row("a", "1"), ("b", "1"): elo.new_row("b", "1")}
    up = elo.rate(result("m", "shanghaien", [seat(0, "a", 1), seat(1, "b", 2)]), before)
    assert up.rows[("a", "1")].rating == pytest.approx(1524.0)  # 1500 + 48 * (1 - 0.5)
    assert up.rows[("b", "1")].rating == pytest.approx(1476.0)
    assert (up.rows[("a", "1")].wins, up.rows[("b", "1")].losses) == (1, 1)


def test_two_players_established_upset() -> None:
    # E(1600 vs 1400) = 1 / (1 + 10^-0.5) = 0.7597469; the 1400 bot wins; K = 24
    before = {("a", "1"): established("a", 1600), ("b", "1"): established("b", 1400)}
    up = elo.rate(result("m", "shanghaien", [seat(0, "a", 2), seat(1, "b", 1)]), before)
    assert up.rows[("a", "1")].rating == pytest.approx(1581.766073760, abs=1e-6)  # 1600 - 24 * 0.7597469
    assert up.rows[("b", "1")].rating == pytest.approx(1418.233926240, abs=1e-6)


def test_two_players_draw_moves_toward_each_other() -> None:
    before = {("a", "1"): established("a", 1600), ("b", "1"): established("b", 1400)}
    up = elo.rate(result("m", "shanghaien", [seat(0, "a", 1), seat(1, "b", 1)]), before)
    assert up.rows[("a", "1")].rating == pytest.approx(1600 + 24 * (0.5 - 0.7597469268), abs=1e-6)
    assert up.rows[("a", "1")].draws == 1 and up.rows[("b", "1")].draws == 1


def test_four_players_with_a_shared_place() -> None:
    """A 1600 first, B and C 1500 share second, D 1400 last; K/(n-1) = 8 per pair.

    A: 8 * [2 * (1 - E(100)) + (1 - E(200))] = 8 * [2 * 0.3599350 + 0.2402531] = +7.6809846
    B: 8 * [(0 - 0.3599350) + (0.5 - 0.5) + (1 - 0.6400650)] = 0
    D: 8 * [(0 - 0.2402531) + 2 * (0 - 0.3599350)] = -7.6809846
    """
    before = {(n, "1"): established(n, r) for n, r in [("a", 1600), ("b", 1500), ("c", 1500), ("d", 1400)]}
    seats = [seat(0, "b", 2), seat(1, "a", 1), seat(2, "d", 4), seat(3, "c", 2)]
    up = elo.rate(result("m", "shangrila-4p", seats), before)
    r = {k[0]: v for k, v in up.rows.items()}
    assert r["a"].rating == pytest.approx(1607.680984590, abs=1e-6)
    assert r["b"].rating == pytest.approx(1500.0, abs=1e-9)
    assert r["c"].rating == pytest.approx(1500.0, abs=1e-9)
    assert r["d"].rating == pytest.approx(1392.319015410, abs=1e-6)
    assert [(r[n].wins, r[n].draws, r[n].losses) for n in "abcd"] == [(1, 0, 0), (0, 0, 1), (0, 0, 1), (0, 0, 1)]
    shared = [p for p in up.pairs if {p.a[0], p.b[0]} == {"b", "c"}]
    assert len(up.pairs) == 6 and shared[0].score == 0.5


def test_a_forfeited_seat_is_last_whatever_its_rank_says() -> None:
    before = {(n, "1"): established(n, 1500) for n in "abc"}
    seats = [seat(0, "a", 1, status="forfeited"), seat(1, "b", 2), seat(2, "c", 3)]
    up = elo.rate(result("m", "shangrila-3p", seats), before)
    r = {k[0]: v.rating for k, v in up.rows.items()}
    assert r["a"] == pytest.approx(1500 - 12 * 2 * 0.5)  # lost both pairs, K/(n-1) = 12
    assert r["b"] == pytest.approx(1500 + 12 * (0.5 + 0.5))  # beat a and c
    assert r["c"] == pytest.approx(1500.0)  # beat a, lost to b


def test_aborted_and_unrated_matches_change_nothing() -> None:
    t = Table()
    seats = [seat(0, "a", 1), seat(1, "b", 2)]
    assert t.apply(result("m1", "shanghaien", seats, end_reason="aborted")) is None
    assert t.apply(result("m2", "shanghaien", seats, rated=False)) is None
    assert t.rows == {}


def test_a_match_counts_once_in_a_table() -> None:
    t = Table()
    r = result("m1", "shanghaien", [seat(0, "a", 1), seat(1, "b", 2)])
    assert t.apply(r) is not None and t.apply(r) is None
    assert t.rows["shanghaien"][("a", "1")].games == 1


def test_a_new_version_starts_provisional_from_its_predecessor() -> None:
    t = Table()
    for i in range(20):
        t.apply(result(f"m{i}", "shanghaien", [seat(0, "a", 1), seat(1, "b", 2)]))
    v1 = t.rows["shanghaien"][("a", "1")]
    assert not v1.provisional and v1.rating > 1600
    b = t.rows["shanghaien"][("b", "1")].rating
    t.apply(result("n", "shanghaien", [seat(0, "a", 2, version="2"), seat(1, "b", 1)]))
    v2 = t.rows["shanghaien"][("a", "2")]
    assert v2.provisional and v2.games == 1
    assert v2.rating == pytest.approx(v1.rating - 48 * elo.expected(v1.rating, b))
    assert t.rows["shanghaien"][("a", "1")] == v1  # the old version's row stays as it was
    assert t.latest["shanghaien"]["a"] == "2"


def test_the_error_bar_starts_at_the_prior_and_shrinks_to_the_noise_floor() -> None:
    fresh = elo.new_row("a", "1")
    assert fresh.error == pytest.approx(1.96 * 350)
    after_40 = Row("a", "1", games=40, info=40 * 0.25)  # 40 even games: the information bound still rules
    assert after_40.error == pytest.approx(1.96 * elo.ELO_SCALE / math.sqrt(elo.PRIOR_INFO + 10))
    settled = Row("a", "1", games=5000, info=5000 * 0.25)
    assert settled.error == pytest.approx(1.96 * math.sqrt(24 * elo.ELO_SCALE / 2))  # about ±89


@given(
    ratings=st.lists(st.floats(1000, 2000), min_size=2, max_size=4),
    ranks=st.lists(st.integers(1, 4), min_size=4, max_size=4),
)
def test_equal_k_conserves_rating_points(ratings: list[float], ranks: list[int]) -> None:
    """With every seat established (same K), what one seat gains the others lose."""
    seats = [seat(i, f"b{i}", ranks[i]) for i in range(len(ratings))]
    before = {(f"b{i}", "1"): established(f"b{i}", r) for i, r in enumerate(ratings)}
    up = elo.rate(result("m", "g", seats), before)
    assert sum(r.rating for r in up.rows.values()) == pytest.approx(sum(ratings), abs=1e-6)
