"""The events' pure parts on known data: the whole-event fit (maximum likelihood on the Elo scale, its
error bars and LOS), the formats (seat rotation on one seed, Swiss rounds) and the standings built on them."""

from __future__ import annotations

import math

import pytest

from arena.events.formats import rotated, swiss_round, table_orders, tables
from arena.events.model import Entrant, Event, EventError, Slot, SlotState, check_definition, plan_round
from arena.events.rating import PairGame, fit, pair_games
from arena.events.standings import remaining, standings, to_csv
from arena.ladder.elo import ELO_SCALE
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus

NO_PRIOR = 1e6  # a prior this wide leaves the maximum-likelihood estimate (to well under 0.01 Elo)


def games(a: int, b: int, wins: int, draws: int, losses: int) -> list[PairGame]:
    return [PairGame(a, b, 1.0, 1.0)] * wins + [PairGame(a, b, 0.5, 1.0)] * draws + [PairGame(a, b, 0.0, 1.0)] * losses


def test_two_bots_fit_the_closed_form_mle_and_its_information() -> None:
    f = fit(2, games(0, 1, 30, 0, 10), prior_sd=NO_PRIOR)  # 75 %: the MLE difference is 400 log10(3)
    assert f.ratings[0] - f.ratings[1] == pytest.approx(400 * math.log10(3), abs=0.01)
    assert sum(f.ratings) == pytest.approx(0.0, abs=1e-3)
    sd_diff = ELO_SCALE / math.sqrt(40 * 0.75 * 0.25)  # the difference's standard error: 1/sqrt(Fisher info)
    assert f.errors[0] == pytest.approx(1.96 * sd_diff / 2, rel=1e-4)  # each rating's deviation from the mean
    assert f.los(0, 1) == pytest.approx(0.5 * (1 + math.erf(400 * math.log10(3) / sd_diff / math.sqrt(2))), rel=1e-4)
    assert f.los(0, 1) + f.los(1, 0) == pytest.approx(1.0)


def test_three_bots_in_a_chain_fit_the_mle_that_solves_the_score_equations() -> None:
    """A beats B 2:1, B beats C 2:1, A beats C 4:1 (a transitive set with a unique MLE): at the MLE each
    bot's expected score equals its actual score, which the fit must satisfy."""
    pairs = games(0, 1, 2, 0, 1) + games(1, 2, 2, 0, 1) + games(0, 2, 4, 0, 1)
    f = fit(3, pairs, prior_sd=NO_PRIOR)
    x = [r / ELO_SCALE for r in f.ratings]
    for i in range(3):
        actual = sum(g.score if g.a == i else 1 - g.score for g in pairs if i in (g.a, g.b))
        expected = sum(1 / (1 + math.exp(x[g.b] - x[g.a])) if g.a == i else 1 / (1 + math.exp(x[g.a] - x[g.b]))
                       for g in pairs if i in (g.a, g.b))  # fmt: skip
        assert expected == pytest.approx(actual, abs=1e-6)
    assert f.ratings[0] > f.ratings[1] > f.ratings[2]


def test_symmetric_results_give_equal_ratings_and_even_los() -> None:
    cycle = games(0, 1, 3, 1, 1) + games(1, 2, 3, 1, 1) + games(2, 0, 3, 1, 1)  # rock, paper, scissors
    f = fit(3, cycle)
    assert f.ratings == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert f.errors[0] == pytest.approx(f.errors[1]) == pytest.approx(f.errors[2])
    assert f.los(0, 1) == pytest.approx(0.5) and f.los(2, 0) == pytest.approx(0.5)
    mirrored = fit(2, games(0, 1, 5, 2, 9))
    swapped = fit(2, games(1, 0, 5, 2, 9))
    assert mirrored.ratings == pytest.approx(list(reversed(swapped.ratings)))


def test_a_clean_sweep_stays_finite_with_the_prior() -> None:
    f = fit(3, games(0, 1, 5, 0, 0) + games(0, 2, 5, 0, 0))
    assert f.ratings[0] > 0 > f.ratings[1] and all(math.isfinite(v) for v in f.ratings + f.errors)
    assert f.ratings[1] == pytest.approx(f.ratings[2]) and f.los(0, 1) > 0.95


def result(match_id: str, bots: list[str], ranks: list[int], forfeited: tuple[int, ...] = ()) -> MatchResult:
    seats = tuple(SeatResult(seat=i, bot_name=b, bot_version="1", score=0, rank=ranks[i], strikes=0, refusals=0,
                             status=SeatStatus.FORFEITED if i in forfeited else SeatStatus.ACTIVE)
                  for i, b in enumerate(bots))  # fmt: skip
    return MatchResult(match_id=match_id, game_id="g", end_reason=EndReason.COMPLETED, seats=seats, seed="s",
                       seed_sha256="", plies=1, detail="")  # fmt: skip


def test_a_four_player_result_is_decomposed_into_weighted_pairs_of_ranks() -> None:
    pairs = pair_games(
        result("m", ["a", "b", "c", "d"], [2, 1, 2, 4], forfeited=(2,)), {"a": 0, "b": 1, "c": 2, "d": 3}
    )
    assert len(pairs) == 6 and all(g.weight == pytest.approx(1 / 3) for g in pairs)
    score = {(g.a, g.b): g.score for g in pairs}
    assert score[0, 1] == 0.0 and score[0, 2] == 1.0 and score[0, 3] == 1.0  # c forfeited: behind every active seat
    assert score[1, 3] == 1.0 and score[2, 3] == 0.0


def test_a_tables_seeds_are_played_in_every_rotation_of_its_seats() -> None:
    assert rotated(("a", "b", "c"), 1) == ("b", "c", "a")
    orders = table_orders((4, 7, 9), 4)  # rounded up to 6: two seeds, three rotations each
    assert [(j, r) for j, r, _ in orders] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    for j in (0, 1):
        seats = [order for jj, _, order in orders if jj == j]
        assert all(sorted(o[s] for o in seats) == [4, 7, 9] for s in range(3))  # each bot once in each seat
    assert len(tables(8, 2, "round-robin")) == 28 and tables(4, 3, "gauntlet") == [(0, 1, 2), (0, 1, 3), (0, 2, 3)]


def test_swiss_pairs_by_points_and_avoids_rematches() -> None:
    first = swiss_round([0.0] * 6, 2, {})
    assert first == [(0, 1), (2, 3), (4, 5)]
    met = {frozenset(t): 2 for t in first}
    second = swiss_round([2.0, 0.0, 2.0, 0.0, 1.0, 1.0], 2, met)
    assert sorted(map(sorted, second)) == [[0, 2], [1, 4], [3, 5]]  # leaders meet; 4 and 5 met: 4 takes 1
    assert swiss_round([0.0] * 7, 3, {}) == [(0, 1, 2), (3, 4, 5)]  # bot 6: a bye


def event(fmt: str = "round-robin", n: int = 3, rounds: int = 0) -> Event:
    return Event("cup", "shanghaien", fmt, tuple(Entrant(f"b{i}", "1") for i in range(n)), 2, rounds=rounds)  # type: ignore[arg-type]


def test_standings_count_points_fit_played_games_only_and_show_what_is_left() -> None:
    ev = event()
    slots = plan_round(ev, 0, tables(3, 2, "round-robin"))  # 3 tables x 2 games
    assert len(slots) == 6 and {s.bots for s in slots if s.table == 0} == {("b0", "b1"), ("b1", "b0")}
    done = {}
    out = []
    for s in slots:
        if s.table == 0:  # b0 beats b1 twice
            winner = s.bots.index("b0")
            done[s.key] = result(s.key, list(s.bots), [1 if i == winner else 2 for i in range(2)])
            out.append(s.but(state=SlotState.DONE))
        elif s.table == 1 and s.rot == 0:  # b2 absent: forfeited to b0
            out.append(s.but(state=SlotState.FORFEITED, absent=("b2",)))
        else:
            out.append(s)
    table = standings(ev, out, done)
    rows = {r["name"]: r for r in table["rows"]}
    assert rows["b0"]["points"] == 3.0 and rows["b0"]["pair_games"] == 3 and rows["b0"]["matches"] == 2
    assert rows["b2"]["forfeits"] == 1 and rows["b2"]["points"] == 0.0 and rows["b2"]["matches"] == 0
    assert rows["b2"]["elo"] == pytest.approx(0.0, abs=1e-9)  # its forfeit is not in the fit
    assert table["rows"][0]["name"] == "b0" and table["rows"][-1]["los_next"] is None
    assert 0.5 < table["rows"][0]["los_next"] < 1.0
    assert table["remaining"] == 3 and table["matches_played"] == 2 and table["matches_forfeited"] == 1
    cross = {(c["player"], c["opponent"]): (c["points"], c["games"]) for c in table["cross_table"]}
    assert cross["b0", "b1"] == (2.0, 2) and cross["b1", "b0"] == (0.0, 2) and cross["b0", "b2"] == (1.0, 1)
    assert cross["b1", "b2"] == (0.0, 0)
    csv = to_csv(table).splitlines()
    assert csv[0].startswith("rank,name,version,points") and len(csv) == 4 and csv[1].startswith("1,b0,1,3.0")


def test_a_swiss_event_counts_its_unplanned_rounds_as_left() -> None:
    ev = event("swiss", 4, rounds=3)
    slots = plan_round(ev, 0, swiss_round([0.0] * 4, 2, {}))
    assert remaining(ev, slots) == 3 * 4  # 2 tables x 2 games a round


def test_a_definition_that_cannot_run_is_refused() -> None:
    with pytest.raises(EventError, match="event id"):
        check_definition(Event("Bad Id", "shanghaien", "round-robin", (), 2))
    with pytest.raises(EventError, match="rounds"):
        check_definition(event("swiss", 4, rounds=0))
    with pytest.raises(EventError, match="named twice"):
        check_definition(Event("x", "shanghaien", "round-robin", (Entrant("a", "1"), Entrant("a", "2")), 2))
    assert Slot(0, 1, 2, 1, ("a", "b"), attempt=2).match_id_for("cup") == "event-cup-r00-t001-002-1-a2"
