"""Shanghaien rules: the rulebook's worked examples (rulebook 002) and hand-built sequences for the
rulings without one. Seat 0 plays Anna's part, seat 1 Bernd's."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import cast

import pytest

from referee import games
from referee.games.shanghaien import Phase, ShanghaienGame, ShanghaienState
from referee.games.shanghaien.deck import CARD_BY_TEXT, CARD_TYPES, NATIONS, TRICKS

GAME = cast(ShanghaienGame, games.get("shanghaien"))  # the registry hands out the Game protocol


def play(state: ShanghaienState, *texts: str) -> ShanghaienState:
    for text in texts:
        state = state.apply(state.parse_action(text))
    return state


def legal(state: ShanghaienState) -> set[str]:
    return {str(a) for a in state.legal_actions()}


def deal(*cards: str) -> list[str]:
    return [f"deal {c}" for c in cards]


def crew(state: ShanghaienState, seat: int) -> list[str]:
    return sorted(state.view(seat).crews[seat].sailors)


# The rulebook's distribution example: Anna adds 2, 2, 3, 6, 6 and Bernd 3, 4, 5, 6, 6.
EXAMPLE_TAVERN = ("american-1", "french-2", "german-3", "chinese-4", "dutch-1", "trick-both")


def example_round(orientation: str) -> list[str]:
    return [
        *deal(*EXAMPLE_TAVERN),
        "roll", "dice 2 4", f"place 2 {orientation}",  # Anna sets the orientation with her first die
        "roll", "dice 1 5", "place 5",  # Bernd rolls 1 and 5 and takes the 5
        "roll", "dice 2 3", "place 2",
        "roll", "dice 3 3", "place 3",
        "roll", "dice 3 6", "place 3",
        "roll", "dice 4 4", "place 4",
        "roll", "dice 6 6", "place 6",
        "roll", "dice 6 6", "place 6",
        "roll", "dice 1 6", "place 6",
        "roll", "dice 5 6", "place 6",
    ]  # fmt: skip


class TestDistributionExample:
    """Rulebook 002: card 1 has no dice and leaves the game; Anna alone is on card 2; card 3 has one
    die each and equal neighbour pips (4 and 4), so it leaves the game; Bernd alone is on cards 4
    and 5; on card 6 both have two dice and Bernd's neighbouring pips (5) beat Anna's (0)."""

    def test_forward_orientation(self) -> None:
        s = play(GAME.new_state(), *example_round("fwd"))
        assert s.current_player() == 0
        assert legal(s) == {"shanghai"}  # Anna has one die left: she must call Shanghai
        assert [s.taker(i) for i in range(6)] == [-1, 0, -1, 1, 1, 1]
        after = play(s, "shanghai")
        assert crew(after, 0) == ["french-2"]
        assert crew(after, 1) == ["chinese-4", "dutch-1"]
        assert after.view(0).crews[1].tricks == {"adjust": 0, "both": 1, "reroll": 0}
        assert sorted(after.view(0).out_of_game) == ["american-1", "german-3"]

    def test_reverse_orientation_mirrors_the_row(self) -> None:
        s = play(GAME.new_state(), *example_round("rev"))
        assert [s.taker(i) for i in range(6)] == [1, 1, 1, -1, 0, -1]
        after = play(s, "shanghai")
        assert crew(after, 0) == ["dutch-1"]
        assert crew(after, 1) == ["american-1", "french-2", "german-3"]
        assert sorted(after.view(0).out_of_game) == ["chinese-4", "trick-both"]

    def test_the_caller_deals_and_the_other_starts_the_next_round(self) -> None:
        after = play(GAME.new_state(), *example_round("fwd"), "shanghai")
        assert after.current_player() == games.CHANCE and after.round == 2
        assert after.phase == Phase.DEAL and len(after.tavern) == 0
        dealt = play(after, *deal("german-1", "german-2", "german-3", "german-4", "french-1", "french-3"))
        assert dealt.current_player() == 1 and dealt.starter == 1
        assert legal(dealt) == {"roll"}
        assert dealt.orient == 0 and dealt.placed == (0, 0)


def finished(
    sailors: dict[int, Iterable[str]], wilds: dict[int, Iterable[str]], tricks: dict[int, Iterable[str]]
) -> ShanghaienState:
    """A game-over state holding the given cards (sailor texts, wild nations, unplayed trick kinds)."""
    s = GAME.new_state()._copy()
    totals = [0] * 16
    crews: list[tuple[int, ...]] = [(), ()]
    wild_list: list[tuple[tuple[int, int], ...]] = [(), ()]
    held = [0] * 6
    for seat in (0, 1):
        for text in sailors.get(seat, ()):
            card = CARD_BY_TEXT[text]
            totals[seat * 8 + card.nation] += card.value
            crews[seat] += (card.index,)
        for nation in wilds.get(seat, ()):
            totals[seat * 8 + NATIONS.index(nation)] += 2
            wild_list[seat] += ((0, NATIONS.index(nation)),)
        for kind in tricks.get(seat, ()):
            held[seat * 3 + TRICKS.index(kind)] += 1
    s.nation_total, s.crews, s.wilds, s.tricks = (
        tuple(totals),
        (crews[0], crews[1]),
        (wild_list[0], wild_list[1]),
        tuple(held),
    )
    s.phase = Phase.OVER
    return s


class TestScoring:
    def test_rulebook_scoring_example(self) -> None:
        """Rulebook 002: Anna keeps her Spaniards (3 + two wild sailors = 7); the French crews tie
        (5 and 5) and score nothing; Bernd's stronger Americans (7 vs 6) score Anna's 6 and his
        Chinese (10 vs 1) score her 1; his unplayed trick scores 1. Anna 7, Bernd 8."""
        s = finished(
            sailors={
                0: ["spanish-3", "french-1", "french-4", "american-1", "american-2", "american-3", "chinese-1"],
                1: ["french-2", "french-3", "american-3", "american-4", "chinese-3", "chinese-3", "chinese-4"],
            },
            wilds={0: ["spanish", "spanish"]},
            tricks={1: ["both"]},
        )
        assert s.is_terminal() and s.legal_actions() == []
        assert s.scores() == [7, 8]
        assert s.ranks() == [2, 1]
        sheet = {x.nation: (x.totals, x.seat, x.points) for x in s.score_sheet().nations if x.totals != (0, 0)}
        assert sheet == {"spanish": ((7, 0), 0, 7), "french": ((5, 5), -1, 0), "american": ((6, 7), 1, 6),
                         "chinese": ((1, 10), 1, 1)}  # fmt: skip
        assert (s.score_sheet().tricks, s.score_sheet().points) == ((0, 1), (7, 8))

    def test_equal_scores_are_a_draw(self) -> None:
        s = finished(sailors={0: ["german-4"], 1: ["french-3", "french-1"]}, wilds={}, tricks={})
        assert s.scores() == [4, 4]
        assert s.ranks() == [1, 1]

    def test_unplayed_tricks_score_one_each(self) -> None:
        s = finished(sailors={}, wilds={}, tricks={0: ["adjust", "reroll"], 1: []})
        assert s.scores() == [2, 0]


class TestChance:
    def test_deals_with_exact_multiplicities(self) -> None:
        s = GAME.new_state()
        assert s.current_player() == games.CHANCE
        exact = dict((str(a), p) for a, p in s.chance_outcomes_exact())
        assert len(exact) == 8 * 4 + 3
        assert exact["deal german-3"] == Fraction(2, 48)
        assert exact["deal german-4"] == Fraction(1, 48)
        assert exact["deal trick-adjust"] == Fraction(3, 48)
        assert exact["deal trick-reroll"] == Fraction(2, 48)
        assert sum(exact.values()) == 1
        after = play(s, "deal german-3")
        assert dict((str(a), p) for a, p in after.chance_outcomes_exact())["deal german-3"] == Fraction(1, 47)
        gone = play(after, "deal german-3")
        assert "deal german-3" not in legal(gone)
        with pytest.raises(games.IllegalActionError):
            gone.parse_action("deal german-3")

    def test_dice(self) -> None:
        s = play(GAME.new_state(), *deal(*EXAMPLE_TAVERN), "roll")
        exact = dict((str(a), p) for a, p in s.chance_outcomes_exact())
        assert len(exact) == 21 and sum(exact.values()) == 1
        assert exact["dice 3 3"] == Fraction(1, 36) and exact["dice 2 5"] == Fraction(2, 36)
        floats = dict((str(a), p) for a, p in s.chance_outcomes())
        assert floats["dice 2 5"] == pytest.approx(1 / 18)
        assert legal(s) == set(exact)

    def test_player_nodes_have_no_chance_outcomes(self) -> None:
        s = play(GAME.new_state(), *deal(*EXAMPLE_TAVERN))
        assert s.current_player() == 0 and s.chance_outcomes() == []


class TestTurn:
    def test_roll_and_shanghai_legality(self) -> None:
        s = play(GAME.new_state(), *deal(*EXAMPLE_TAVERN))
        assert legal(s) == {"roll"}  # no die placed yet: Shanghai is not allowed
        with pytest.raises(games.IllegalActionError, match="at least 2 dice"):
            s.parse_action("shanghai")
        s = play(s, "roll", "dice 1 2", "place 1 fwd", "roll", "dice 1 2", "place 1")
        assert legal(s) == {"roll"}  # one die placed
        s = play(s, "roll", "dice 1 2", "place 1", "roll", "dice 1 2", "place 1")
        assert legal(s) == {"roll", "shanghai"}

    def test_orientation_is_chosen_with_the_first_die(self) -> None:
        s = play(GAME.new_state(), *deal(*EXAMPLE_TAVERN), "roll", "dice 2 5")
        assert legal(s) == {"place 2 fwd", "place 2 rev", "place 5 fwd", "place 5 rev"}
        with pytest.raises(games.IllegalActionError, match="orientation"):
            s.parse_action("place 2")
        s = play(s, "place 2 rev")
        assert s.dice_on[(7 - 2 - 1) * 2] == 1  # value 2 sits on position 5
        s = play(s, "roll", "dice 1 1")
        assert legal(s) == {"place 1"}
        with pytest.raises(games.IllegalActionError, match="already set"):
            s.parse_action("place 1 rev")
        with pytest.raises(games.IllegalActionError, match="no die shows 4"):
            s.parse_action("place 4")

    def test_a_double_offers_one_placement(self) -> None:
        s = play(GAME.new_state(), *deal(*EXAMPLE_TAVERN), "roll", "dice 4 4")
        assert legal(s) == {"place 4 fwd", "place 4 rev"}


# A round 1 after which seat 0 holds trick-adjust, trick-reroll and a german-1; seat 1 holds trick-both,
# french-2 and italian-3. Seat 0 calls Shanghai, so seat 1 starts round 2.
TRICKS_ROUND = [
    *deal("trick-adjust", "trick-reroll", "german-1", "trick-both", "french-2", "italian-3"),
    "roll", "dice 1 2", "place 1 fwd",
    "roll", "dice 4 5", "place 4",
    "roll", "dice 2 2", "place 2",
    "roll", "dice 5 5", "place 5",
    "roll", "dice 3 3", "place 3",
    "roll", "dice 6 6", "place 6",
    "shanghai",
    *deal("german-2", "german-3", "german-4", "french-1", "french-3", "chinese-1"),
]  # fmt: skip


def tricks_round() -> ShanghaienState:
    s = play(GAME.new_state(), *TRICKS_ROUND)
    assert s.round == 2 and s.current_player() == 1
    assert s.view(0).crews[0].tricks == {"adjust": 1, "both": 0, "reroll": 1}
    assert s.view(0).crews[1].tricks == {"adjust": 0, "both": 1, "reroll": 0}
    return s


class TestDirtyTricks:
    def test_tricks_offered_after_a_roll(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5")
        assert legal(s) == {
            "place 2 fwd", "place 2 rev", "place 5 fwd", "place 5 rev",
            "wild both french", "wild both italian", "both fwd", "both rev",
        }  # fmt: skip

    def test_wild_only_for_a_held_nationality(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5", "place 2 fwd", "roll", "dice 3 4")
        assert {"wild adjust german", "wild reroll german"} <= legal(s)
        assert not any(t.startswith("wild") and not t.endswith("german") for t in legal(s))
        with pytest.raises(games.IllegalActionError, match="already hold"):
            s.parse_action("wild adjust french")
        with pytest.raises(games.IllegalActionError, match="no unplayed trick-both"):
            s.parse_action("wild both german")

    def test_wild_joins_the_crew_and_the_dice_stay(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5", "place 2 fwd", "roll", "dice 3 4")
        before = s.points()
        s = play(s, "wild reroll german")
        assert s.rolled == (3, 4) and legal(s) == {"place 3", "place 4"}
        assert s.view(0).crews[0].wild == (("reroll", "german"),)
        assert s.view(0).crews[0].strength["german"] == 1 + 2
        assert s.view(0).crews[0].tricks["reroll"] == 0
        # the card no longer scores 1 as an unplayed trick; it scores as a sailor of value 2
        assert s.points()[0] == before[0] - 1 + 2

    def test_adjust_changes_one_die_within_1_to_6(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5", "place 2 fwd", "roll", "dice 1 6")
        assert {"adjust 1>2", "adjust 6>5"} <= legal(s)
        assert not {"adjust 1>0", "adjust 6>7"} & legal(s)
        with pytest.raises(games.ActionSyntaxError):
            s.parse_action("adjust 6>7")
        s = play(s, "adjust 6>5")
        assert s.rolled == (1, 5) and legal(s) == {"place 1", "place 5"}
        assert "trick-adjust" in s.view(0).out_of_game

    def test_both_places_both_dice_and_a_double_on_one_card(self) -> None:
        s = play(tricks_round(), "roll", "dice 3 3", "both fwd")
        assert s.dice_on[(3 - 1) * 2 + 1] == 2 and s.placed == (0, 2)
        assert s.orient == 1 and s.current_player() == 0
        assert "trick-both" in s.view(0).out_of_game

    def test_reroll_then_a_new_result_must_be_placed(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5", "place 2 fwd", "roll", "dice 1 1", "reroll")
        assert s.current_player() == games.CHANCE
        s = play(s, "dice 4 6")
        assert legal(s) == {"place 4", "place 6"}  # no second trick, no going back to the 1s

    def test_one_trick_per_round_then_again_next_round(self) -> None:
        s = play(tricks_round(), "roll", "dice 2 5", "place 2 fwd", "roll", "dice 3 4", "adjust 3>2")
        s = play(s, "place 2", "roll", "dice 1 1", "place 1", "roll", "dice 3 4")
        assert legal(s) == {"place 3", "place 4"}  # seat 0 still holds trick-reroll, but used a trick
        with pytest.raises(games.IllegalActionError, match="already played a dirty trick this round"):
            s.parse_action("reroll")
        s = play(s, "place 3", "shanghai")  # seat 1 has placed 2 dice and ends round 2
        s = play(s, *deal("dutch-1", "dutch-2", "dutch-3", "dutch-4", "spanish-1", "spanish-2"))
        assert s.current_player() == 0 and s.round == 3
        s = play(s, "roll", "dice 3 4")
        assert "reroll" in legal(s)

    def test_tricks_won_in_round_8_are_never_played(self) -> None:
        s = GAME.new_state()
        keep = ["trick-reroll", "trick-reroll"]
        for round_no in range(1, 9):
            left = [CARD_TYPES[t].text for t, copies in enumerate(s.deck) for _ in range(copies)]
            pool = [c for c in left if c not in keep] if round_no < 8 else left
            cards = (keep + [c for c in left if c not in keep])[:6] if round_no == 8 else pool[:6]
            s = play(s, *deal(*cards))
            starter = s.current_player()
            # starter takes positions 1 and 2 (values 1, 2 fwd), the other positions 5 and 6
            s = play(s, "roll", "dice 1 3", "place 1 fwd", "roll", "dice 5 5", "place 5")
            s = play(s, "roll", "dice 2 4", "place 2", "roll", "dice 6 6", "place 6", "shanghai")
            if round_no < 8:
                assert s.round == round_no + 1 and s.starter == 1 - starter
        assert s.is_terminal() and s.legal_actions() == []
        assert s.deck_left == 0
        winner = starter  # the round-8 starter took positions 1 and 2: both reroll cards
        assert s.view(winner).crews[winner].tricks["reroll"] == 2
        assert s.points()[winner] >= 2


def test_view_and_render() -> None:
    s = play(tricks_round(), "roll", "dice 2 5")
    v = s.view(0)
    assert v.phase == "place" and v.to_move == 1 and v.rolled == (2, 5)
    assert v.tavern[0].card == "german-2" and v.tavern[0].die_value is None
    assert sum(v.deck_left.values()) == 48 - 12
    assert v.to_dict()["round"] == 2
    picture = s.render()
    assert "rolled: 2 5" in picture and "german-2" in picture
