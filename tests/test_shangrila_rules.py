"""Shangri-La rules: the rulebook's worked examples (rulebook 000) and hand-built positions for
each ruling without one. Seats: 0 red (R), 1 blue (B), 2 yellow (Y), 3 violet (V)."""

from __future__ import annotations

from typing import cast

import pytest

from referee import games
from referee.games.shangrila import ShangriLaGame, ShangriLaState
from referee.games.shangrila.board import DISCIPLINES

G4 = cast(ShangriLaGame, games.get("shangrila-4p"))  # the registry hands out the Game protocol
G3 = cast(ShangriLaGame, games.get("shangrila-3p"))
RED, BLUE, YELLOW, VIOLET = range(4)


def texts(state: ShangriLaState) -> set[str]:
    return {str(a) for a in state.legal_actions()}


def play(state: ShangriLaState, text: str) -> ShangriLaState:
    return state.apply(state.parse_action(text))


def tile(state: ShangriLaState, village: int, discipline: str) -> tuple[int, bool] | None:
    return state.space(village, DISCIPLINES.index(discipline))


def supply(state: ShangriLaState, colour: int, discipline: str) -> int:
    return state.supply_of(colour)[DISCIPLINES.index(discipline)]


def tiles_in(state: ShangriLaState, village: int) -> int:
    return sum(0 if x is None else 1 + x[1] for d in DISCIPLINES if (x := tile(state, village, d)) is not None)


# ------------------------------------------------------------------------- rulebook 000 examples


class TestPlaceExample:
    """Rulebook 000, action 1: Yellow places a Dragonbreeder; Red cannot place on the occupied
    Rainmaker space but can place a Yeti-whisperer, and only one tile a turn; Violet, with no master
    in the village, cannot place there at all."""

    VILLAGE = {(4, "rainmaker"): "Y", (4, "priest"): "R", (4, "astrologer"): "B", (4, "firekeeper"): "Y"}

    def test_yellow_places_a_dragonbreeder_where_it_has_a_master(self) -> None:
        s = G4.position(self.VILLAGE, player=YELLOW)
        after = play(s, "place 4 dragonbreeder")
        assert tile(after, 4, "dragonbreeder") == (YELLOW, False)
        assert supply(after, YELLOW, "dragonbreeder") == 5
        assert after.current_player() == VIOLET

    def test_red_may_not_place_on_an_occupied_space(self) -> None:
        s = G4.position(self.VILLAGE, player=RED)
        with pytest.raises(games.IllegalActionError, match="occupied"):
            s.parse_action("place 4 rainmaker")
        after = play(s, "place 4 yeti-whisperer")
        assert tile(after, 4, "yeti-whisperer") == (RED, False)
        # one tile a turn: the turn has passed, and no action places two masters
        assert after.current_player() == BLUE
        assert not any(str(a).startswith("place") and "+" in str(a) for a in s.legal_actions())
        with pytest.raises(games.ActionSyntaxError):
            s.parse_action("place 4 yeti-whisperer + 4 healer")

    def test_violet_without_a_master_there_may_not_place(self) -> None:
        s = G4.position(self.VILLAGE, player=VIOLET)
        assert not any(str(a).startswith("place 4 ") for a in s.legal_actions())
        with pytest.raises(games.IllegalActionError, match="no master"):
            s.parse_action("place 4 healer")


class TestRecruitExample:
    """Rulebook 000, action 2: Yellow recruits two students in village A; Blue recruits one in
    village A and one in village B; a master never has two students."""

    POSITION = {
        (0, "rainmaker"): "Y",
        (0, "yeti-whisperer"): "Y",
        (0, "healer"): "B",
        (0, "priest"): "R",
        (3, "firekeeper"): "B",
    }

    def test_yellow_recruits_two_in_one_village(self) -> None:
        s = G4.position(self.POSITION, player=YELLOW)
        after = play(s, "recruit 0 rainmaker + 0 yeti-whisperer")
        assert tile(after, 0, "rainmaker") == (YELLOW, True)
        assert tile(after, 0, "yeti-whisperer") == (YELLOW, True)
        assert supply(after, YELLOW, "rainmaker") == 4 and supply(after, YELLOW, "yeti-whisperer") == 4

    def test_blue_recruits_in_two_villages(self) -> None:
        s = G4.position(self.POSITION, player=BLUE)
        assert texts(s) >= {"recruit 0 healer", "recruit 3 firekeeper", "recruit 0 healer + 3 firekeeper"}
        after = play(s, "recruit 0 healer + 3 firekeeper")
        assert tile(after, 0, "healer") == (BLUE, True) and tile(after, 3, "firekeeper") == (BLUE, True)

    def test_only_one_eligible_master_allows_a_single_recruit(self) -> None:
        s = G4.position(self.POSITION, player=RED)
        assert {t for t in texts(s) if t.startswith("recruit")} == {"recruit 0 priest"}

    def test_a_master_never_takes_a_second_student(self) -> None:
        s = G4.position({**self.POSITION, (0, "rainmaker"): "Y+"}, player=YELLOW)
        assert "recruit 0 rainmaker" not in texts(s)
        with pytest.raises(games.IllegalActionError, match="without a student"):
            s.parse_action("recruit 0 rainmaker")
        with pytest.raises(games.IllegalActionError):
            s.parse_action("recruit 0 rainmaker + 0 yeti-whisperer")

    def test_two_students_of_one_discipline_need_two_tiles_in_supply(self) -> None:
        # Yellow has two priest masters without students but only one priest left in supply.
        tiles = {(0, "priest"): "Y", (1, "priest"): "Y", (3, "priest"): "Y+", (4, "priest"): "Y+"}
        s = G4.position(tiles, player=YELLOW)
        assert supply(s, YELLOW, "priest") == 0
        assert not any(t.startswith("recruit") for t in texts(s))
        tiles.pop((4, "priest"))
        s = G4.position({**tiles, (4, "priest"): "Y"}, player=YELLOW)
        assert supply(s, YELLOW, "priest") == 1
        recruits = {t for t in texts(s) if t.startswith("recruit")}
        assert recruits == {"recruit 0 priest", "recruit 1 priest", "recruit 4 priest"}


class TestJourneySituation1:
    """Rulebook 000, situation 1: village A (8 tiles) is stronger than village B (5 tiles). Red
    (2 masters, 2 students in A) sends A's students to B: the red Dragonbreeder takes B's empty
    space; the red Rainmaker sends B's yellow master and student home and becomes master; Violet's
    student Healer sends Blue's master Healer home and becomes master; Yellow and Blue have only
    masters in A and nothing of theirs travels. The bridge breaks."""

    A, B = 7, 8
    POSITION = {
        (7, "dragonbreeder"): "R+",
        (7, "rainmaker"): "R+",
        (7, "healer"): "V+",
        (7, "priest"): "Y",
        (7, "astrologer"): "B",
        (8, "rainmaker"): "Y+",
        (8, "healer"): "B",
        (8, "priest"): "B",
        (8, "astrologer"): "Y",
    }

    def test_strengths_are_as_in_the_example(self) -> None:
        s = G4.position(self.POSITION, player=RED)
        assert tiles_in(s, self.A) == 8 and tiles_in(s, self.B) == 5

    def test_journey(self) -> None:
        s = G4.position(self.POSITION, player=RED)
        assert "journey 7>8" in texts(s)
        after = play(s, "journey 7>8")
        assert tile(after, 8, "dragonbreeder") == (RED, False)
        assert tile(after, 8, "rainmaker") == (RED, False)
        assert tile(after, 8, "healer") == (VIOLET, False)
        assert tile(after, 8, "priest") == (BLUE, False) and tile(after, 8, "astrologer") == (YELLOW, False)
        # the masters stay in A, without their students
        assert tile(after, 7, "dragonbreeder") == (RED, False) and tile(after, 7, "rainmaker") == (RED, False)
        assert tile(after, 7, "healer") == (VIOLET, False)
        assert tile(after, 7, "priest") == (YELLOW, False) and tile(after, 7, "astrologer") == (BLUE, False)
        # displaced tiles go back to their owners' supplies
        assert supply(after, YELLOW, "rainmaker") == supply(s, YELLOW, "rainmaker") + 2
        assert supply(after, BLUE, "healer") == supply(s, BLUE, "healer") + 1
        # the bridge is broken
        assert (7, 8) in s.standing_bridges() and (7, 8) not in after.standing_bridges()
        assert "journey 8>7" not in texts(after.apply(after.legal_actions()[0]))


class TestJourneySituation2:
    """Rulebook 000, situation 2: Violet sends the students of the weaker village A (7 tiles) into
    B (9 tiles). Violet's only student there, a Healer, reaches B's empty Healer space and becomes a
    master; Red's student Rainmaker meets an occupied Rainmaker space and goes back to supply."""

    POSITION = {
        (10, "healer"): "V+",
        (10, "rainmaker"): "R+",
        (10, "priest"): "B",
        (10, "astrologer"): "Y",
        (10, "firekeeper"): "Y",
        (11, "rainmaker"): "B+",
        (11, "priest"): "Y+",
        (11, "yeti-whisperer"): "R",
        (11, "astrologer"): "V",
        (11, "dragonbreeder"): "B",
        (11, "firekeeper"): "Y+",
    }

    def test_journey_into_a_stronger_village(self) -> None:
        s = G4.position(self.POSITION, player=VIOLET)
        assert tiles_in(s, 10) == 7 and tiles_in(s, 11) == 9
        after = play(s, "journey 10>11")
        assert tile(after, 11, "healer") == (VIOLET, False)
        assert tile(after, 11, "rainmaker") == (BLUE, True)
        assert tile(after, 10, "rainmaker") == (RED, False) and tile(after, 10, "healer") == (VIOLET, False)
        assert supply(after, RED, "rainmaker") == supply(s, RED, "rainmaker") + 1
        assert supply(after, BLUE, "rainmaker") == supply(s, BLUE, "rainmaker")


def seventeen_masters(blue_villages: int) -> dict[tuple[int, str], str]:
    """Red: 17 masters over 7 villages; Blue: 17 masters over ``blue_villages`` villages."""
    tiles: dict[tuple[int, str], str] = {}
    for i in range(17):  # row by row over villages 0..6, shifting the discipline each row
        tiles[(i % 7, DISCIPLINES[(i % 7 + i // 7) % 7])] = "R"
    for i in range(17):
        n = blue_villages
        tiles[(13 - n + i % n, DISCIPLINES[(i % n + i // n + 3) % 7])] = "B"
    tiles[(0, "firekeeper")] = "Y"
    return tiles


ALL_BUT_ONE_BRIDGE = [b for b in ((0, 1), (0, 3), (0, 4), (0, 6), (1, 2), (1, 5), (2, 5), (2, 9), (3, 4), (3, 6),
                                  (3, 10), (4, 5), (4, 7), (5, 8), (6, 10), (7, 8), (7, 10), (7, 11), (8, 9),
                                  (8, 12), (9, 12), (10, 11))]  # fmt: skip


class TestScoring:
    def test_seventeen_masters_tie_broken_by_villages(self) -> None:
        """Rulebook 000: Red and Blue both have 17 masters; Red's spread over 7 villages, Blue's
        over 6: Red wins."""
        s = G4.position(seventeen_masters(blue_villages=6), broken=ALL_BUT_ONE_BRIDGE)
        assert s.is_terminal()
        assert s.scores() == [17, 17, 1, 0]
        assert s.villages_held(RED) == 7 and s.villages_held(BLUE) == 6
        assert s.ranks() == [1, 2, 3, 4]

    def test_still_tied_players_share_the_place(self) -> None:
        s = G4.position(seventeen_masters(blue_villages=7), broken=ALL_BUT_ONE_BRIDGE)
        assert s.scores() == [17, 17, 1, 0]
        assert s.ranks() == [1, 1, 3, 4]

    def test_students_do_not_score_and_stone_villages_do(self) -> None:
        tiles = {(6, "priest"): "R+", (6, "healer"): "R", (0, "priest"): "B"}
        s = G4.position(tiles, broken=ALL_BUT_ONE_BRIDGE)
        assert s.stones >> 6 & 1
        assert s.scores() == [2, 1, 0, 0]


# ------------------------------------------------------------------------ hand-built rulings


class TestStrengthTieBreaks:
    """S12: equal tiles -> more masters is stronger; still equal -> the destination is stronger."""

    def test_equal_tiles_more_masters_in_source_wins(self) -> None:
        # village 0: R+ priest, B rainmaker, Y healer  -> 4 tiles, 3 masters
        # village 1: B+ priest, V+ healer              -> 4 tiles, 2 masters
        tiles = {
            (0, "priest"): "R+",
            (0, "rainmaker"): "B",
            (0, "healer"): "Y",
            (1, "priest"): "B+",
            (1, "healer"): "V+",
        }
        after = play(G4.position(tiles, player=RED), "journey 0>1")
        assert tile(after, 1, "priest") == (RED, False)  # source stronger: blue's tiles go home
        assert supply(after, BLUE, "priest") == 6

    def test_equal_tiles_fewer_masters_in_source_loses(self) -> None:
        tiles = {
            (0, "priest"): "R+",
            (0, "healer"): "Y+",
            (1, "priest"): "B",
            (1, "healer"): "V",
            (1, "rainmaker"): "B",
            (1, "firekeeper"): "Y",
        }
        s = G4.position(tiles, player=RED)
        after = play(s, "journey 0>1")
        assert tile(after, 1, "priest") == (BLUE, False) and tile(after, 1, "healer") == (VIOLET, False)
        assert supply(after, RED, "priest") == supply(s, RED, "priest") + 1
        assert supply(after, YELLOW, "healer") == supply(s, YELLOW, "healer") + 1

    def test_equal_tiles_and_masters_destination_is_stronger(self) -> None:
        tiles = {(0, "priest"): "R+", (0, "healer"): "Y", (1, "priest"): "B+", (1, "healer"): "V"}
        s = G4.position(tiles, player=RED)
        after = play(s, "journey 0>1")
        assert tile(after, 1, "priest") == (BLUE, True)
        assert supply(after, RED, "priest") == supply(s, RED, "priest") + 1

    def test_strength_is_counted_before_tiles_move(self) -> None:
        # Source: 4 tiles (2 masters, 2 students); destination: 2 masters. Counted before the
        # students move, the source is stronger and Red's priest displaces Blue's. Counted after,
        # the destination (4 tiles) would win and Red's student would go home.
        tiles = {(0, "priest"): "R+", (0, "healer"): "Y+", (1, "priest"): "B", (1, "rainmaker"): "V"}
        after = play(G4.position(tiles, player=RED), "journey 0>1")
        assert tile(after, 1, "priest") == (RED, False)
        assert tile(after, 1, "healer") == (YELLOW, False)
        assert supply(after, BLUE, "priest") == 6


class TestStudentMeetsOwnColour:
    def test_own_master_without_student_takes_it_as_student(self) -> None:
        tiles = {(0, "priest"): "R+", (0, "healer"): "B", (0, "firekeeper"): "Y", (1, "priest"): "R"}
        after = play(G4.position(tiles, player=RED), "journey 0>1")
        assert tile(after, 1, "priest") == (RED, True)
        assert tile(after, 0, "priest") == (RED, False)

    def test_own_master_with_student_sends_it_home(self) -> None:
        tiles = {(0, "priest"): "R+", (0, "healer"): "B", (0, "firekeeper"): "Y", (1, "priest"): "R+"}
        s = G4.position(tiles, player=RED)
        after = play(s, "journey 0>1")
        assert tile(after, 1, "priest") == (RED, True)
        assert supply(after, RED, "priest") == supply(s, RED, "priest") + 1

    def test_other_players_students_travel_too(self) -> None:
        tiles = {(0, "priest"): "R+", (0, "healer"): "B+", (0, "firekeeper"): "Y"}
        after = play(G4.position(tiles, player=RED), "journey 0>1")
        assert tile(after, 1, "healer") == (BLUE, False) and tile(after, 0, "healer") == (BLUE, False)

    def test_journey_needs_an_own_student(self) -> None:
        tiles = {(0, "priest"): "R", (0, "healer"): "B+"}
        s = G4.position(tiles, player=RED)
        assert not any(t.startswith("journey") for t in texts(s))
        with pytest.raises(games.IllegalActionError, match="no student"):
            s.parse_action("journey 0>1")


class TestStonesAndBridges:
    def test_stones_appear_on_both_ends(self) -> None:
        # 6 keeps only its bridge to 10; 10 keeps only its bridge to 6.
        broken = [(0, 6), (3, 6), (3, 10), (7, 10), (10, 11)]
        tiles = {(6, "priest"): "R+", (10, "priest"): "B", (10, "healer"): "R"}
        s = G4.position(tiles, player=RED, broken=broken)
        assert not s.stones >> 6 & 1 and not s.stones >> 10 & 1
        after = play(s, "journey 6>10")
        assert after.stones >> 6 & 1 and after.stones >> 10 & 1
        assert after.stone_villages() == [6, 10]
        # nothing may start in, or put a tile into, a Stone village; its tiles still score
        red = G4.position(
            {(6, "priest"): "R", (10, "priest"): "R", (10, "healer"): "R", (10, "firekeeper"): "R+"},
            player=RED,
            broken=[*broken, (6, 10)],
        )
        assert texts(red) == {"pass"}
        with pytest.raises(games.IllegalActionError, match="Stone"):
            red.parse_action("place 10 rainmaker")
        with pytest.raises(games.IllegalActionError, match="Stone"):
            red.parse_action("recruit 10 priest")
        assert red.scores()[RED] == 4

    def test_a_broken_bridge_cannot_be_crossed(self) -> None:
        s = G4.position({(0, "priest"): "R+"}, player=RED, broken=[(0, 1)])
        assert "journey 0>1" not in texts(s)
        with pytest.raises(games.IllegalActionError, match="broken"):
            s.parse_action("journey 0>1")
        with pytest.raises(games.IllegalActionError, match="no bridge"):
            s.parse_action("journey 0>5")

    def test_game_ends_when_one_bridge_is_left(self) -> None:
        broken = ALL_BUT_ONE_BRIDGE[:-1]  # 10-11 and 11-12 stand
        s = G4.position({(10, "priest"): "R+", (10, "healer"): "B"}, player=RED, broken=broken)
        assert not s.is_terminal()
        after = play(s, "journey 10>11")
        assert after.is_terminal() and after.current_player() == games.TERMINAL
        assert after.legal_actions() == []
        assert len(after.stone_villages()) == 11
        assert after.standing_bridges() == [(11, 12)]

    def test_three_players_end_with_ten_stones_plus_village_2(self) -> None:
        broken = [b for b in ALL_BUT_ONE_BRIDGE if 2 not in b]
        s = G3.position({(10, "priest"): "R+", (11, "healer"): "B"}, broken=broken[:-1])
        after = play(s, "journey 10>11")
        assert after.is_terminal()
        assert len(after.stone_villages()) == 11 and 2 in after.stone_villages()


class TestPassing:
    def test_pass_only_when_nothing_else_is_legal_and_all_pass_ends(self) -> None:
        # Every master stands in village 6, whose bridges are all broken: nobody can act.
        broken = [(0, 6), (3, 6), (6, 10)]
        tiles = {(6, "priest"): "R", (6, "healer"): "B", (6, "rainmaker"): "Y", (6, "firekeeper"): "V"}
        s = G4.position(tiles, player=RED, broken=broken)
        for seat in range(4):
            assert s.current_player() == seat
            assert texts(s) == {"pass"}
            s = play(s, "pass")
        assert s.is_terminal()

    def test_an_action_between_passes_resets_the_count(self) -> None:
        broken = [(0, 6), (3, 6), (6, 10)]
        tiles = {(0, "priest"): "R", (6, "healer"): "B", (6, "rainmaker"): "Y", (6, "firekeeper"): "V"}
        s = G4.position(tiles, player=BLUE, broken=broken)
        s = play(play(play(s, "pass"), "pass"), "pass")
        assert s.current_player() == RED and "pass" not in texts(s)
        with pytest.raises(games.IllegalActionError, match="only legal when"):
            s.parse_action("pass")
        s = play(s, "place 0 healer")
        for _ in range(3):
            s = play(s, "pass")
        assert not s.is_terminal() and s.current_player() == RED


class TestSetup:
    def test_first_placement_may_go_anywhere(self) -> None:
        s = G4.new_state()
        assert len(s.legal_actions()) == 13 * 7
        s3 = G3.new_state()
        assert len(s3.legal_actions()) == 12 * 7
        assert not any(str(a).startswith("place 2 ") for a in s3.legal_actions())

    def test_one_master_of_each_discipline(self) -> None:
        s = G4.new_state()
        s = play(s, "place 0 priest")
        for seat_action in ("place 1 priest", "place 3 priest", "place 4 priest"):
            s = play(s, seat_action)
        assert s.current_player() == RED
        assert not any(str(a).endswith(" priest") for a in s.legal_actions())
        with pytest.raises(games.IllegalActionError, match="already placed"):
            s.parse_action("place 5 priest")

    def test_four_player_limits(self) -> None:
        # village 0 holds R, R, B: full (3 tiles). Village 1 holds R, R: Red may add no third.
        tiles = {
            (0, "priest"): "R",
            (0, "healer"): "R",
            (0, "rainmaker"): "B",
            (1, "astrologer"): "R",
            (1, "firekeeper"): "R",
        }
        s = G4.position(tiles, player=RED, ply=4 * 4)
        assert not any(str(a).startswith(("place 0 ", "place 1 ")) for a in s.legal_actions())
        s_blue = G4.position(tiles, player=BLUE, ply=4 * 4 + 1)
        blue = texts(s_blue)
        assert not any(t.startswith("place 0 ") for t in blue)
        assert {"place 1 priest", "place 1 yeti-whisperer"} <= blue

    def test_three_player_limits(self) -> None:
        tiles = {(0, "priest"): "R", (1, "priest"): "B", (1, "healer"): "Y"}
        s = G3.position(tiles, player=BLUE, ply=3 + 1)
        blue = texts(s)
        assert not any(t.startswith("place 1 ") for t in blue)  # 2 tiles: full
        assert "place 0 healer" in blue
        s_red = G3.position(tiles, player=RED, ply=3)
        assert not any(t.startswith("place 0 ") for t in texts(s_red))  # one red tile already

    def test_s7_limits_lifted_when_no_placement_fits(self) -> None:
        # 3 players, round 7: Red has placed six disciplines, one in each of villages 0,1,3,4,5,6;
        # Blue and Yellow fill villages 7..12 to the 2-tile limit. Red's firekeeper fits nowhere.
        tiles: dict[tuple[int, str], str] = {}
        for i, v in enumerate((0, 1, 3, 4, 5, 6)):
            tiles[(v, DISCIPLINES[i])] = "R"
        for i, v in enumerate((7, 8, 9, 10, 11, 12)):
            tiles[(v, DISCIPLINES[i])] = "B"
            tiles[(v, DISCIPLINES[(i + 1) % 6])] = "Y"
        s = G3.position(tiles, player=RED, ply=18)
        assert s.in_setup()
        legal = texts(s)
        assert legal == {f"place {v} firekeeper" for v in G3.live_villages}
        assert "place 2 firekeeper" not in legal  # village 2 stays closed
        after = play(s, "place 7 firekeeper")
        assert tiles_in(after, 7) == 3

    def test_setup_then_play_starts_with_seat_0(self) -> None:
        s = G4.new_state()
        for _ in range(28):
            assert s.in_setup()
            s = s.apply(s.legal_actions()[0])
        assert not s.in_setup() and s.current_player() == 0
        assert all(n == 5 for c in range(4) for n in s.supply_of(c))


def test_view_and_render_show_the_position() -> None:
    s = G4.position(TestJourneySituation1.POSITION, player=RED)
    v = s.view(BLUE)
    assert v.seat == BLUE and v.to_move == RED and v.phase == "play"
    assert v.villages[7][DISCIPLINES.index("dragonbreeder")] is not None
    assert v.to_dict()["masters"] == s.scores()
    picture = s.render()
    assert "R+r" in picture and "blue" in picture
    with pytest.raises(ValueError):
        s.view(4)
