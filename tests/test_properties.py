"""Property tests over seeded random playouts of every game id, checked at every ply.

Hypothesis draws the seed; a playout takes chance outcomes from ``referee.chance.sample(state, str(seed),
ply)`` and player actions from ``random.Random(seed)``. Runs are derandomized (and keep no example
database), so CI sees the same games every time.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee import games
from referee.games import ActionError, ActionSyntaxError, IllegalActionError, State
from referee.games.shanghaien import ShanghaienState
from referee.games.shangrila import ShangriLaState
from tests.playout import (
    PLY_BOUND,
    check_conservation,
    check_results,
    check_shanghaien_conservation,
    check_step,
    check_valid,
    play,
    random_chooser,
    random_playout,
    replay,
    snapshot,
    sorted_text_chooser,
    tally,
)

GAME_IDS = ["shangrila-3p", "shangrila-4p", "shanghaien"]

PROPERTY = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
HEAVY = settings(PROPERTY, max_examples=25)  # tests that apply every legal action at every ply

seeds = st.integers(min_value=0, max_value=2**64 - 1)

# Text that is no action of either game, in any state.
GARBAGE_BOTH = [
    "",
    " ",
    "pass ",
    " pass",
    "PASS",
    "Pass",
    "hello",
    "place",
    "place 13 priest",
    "place 3  priest",
    "place 3 Priest",
    "place 3 monk",
    "place -1 priest",
    "place 03 priest",
    "recruit 4 healer + 0 rainmaker",
    "recruit 0 healer + 0 priest",
    "recruit 0 healer + 0 healer",
    "recruit 0 healer +0 priest",
    "journey 4>4",
    "journey 4>13",
    "journey 4 > 7",
    "journey 4-7",
    "dice 5 3",
    "dice 0 3",
    "dice 3 7",
    "dice 3",
    "adjust 3>5",
    "adjust 1>0",
    "adjust 6>7",
    "adjust 3 > 4",
    "place 0",
    "place 7",
    "place 3 up",
    "place 3 FWD",
    "both sideways",
    "wild adjust martian",
    "wild joker german",
    "wild adjust",
    "deal german-5",
    "deal german",
    "deal trick-steal",
    "ROLL",
    "roll roll",
    "shanghai!",
    "reroll 3",
]
# Valid notation of the other game is bad syntax here.
GARBAGE: dict[str, list[str]] = {
    "shangrila-3p": [*GARBAGE_BOTH, "roll", "shanghai", "place 3", "dice 2 5", "deal german-3", "both"],
    "shangrila-4p": [*GARBAGE_BOTH, "roll", "shanghai", "place 3 fwd", "adjust 3>4", "wild both chinese"],
    "shanghaien": [*GARBAGE_BOTH, "pass", "place 3 priest", "journey 4>7", "recruit 0 rainmaker"],
}


def mutations(text: str) -> list[str]:
    """Variants of a canonical action text that cannot be canonical text of any action."""
    out = [text.upper(), f" {text}", f"{text} ", f"{text} extra", f"x{text}", text.replace(" ", "\t")]
    if " " in text:
        out.append(text.replace(" ", "  ", 1))
    words = text.split(" ")
    if words[0] == "recruit" and "+" in words:
        out.append(" ".join([words[0], *words[4:6], "+", *words[1:3]]))  # pair in the wrong order
    if words[0] == "journey":
        v, w = words[1].split(">")
        out += [f"journey {v}>{v}", f"journey {v}>13", f"journey {w}>{v}>{w}"]
    if words[0] == "place" and len(words) >= 2:
        out += [" ".join(["place", "13", *words[2:]]), f"{text} sideways"]
    if words[0] == "dice" and words[1] != words[2]:
        out.append(f"dice {words[2]} {words[1]}")
    if words[0] == "adjust":
        a, b = (int(x) for x in words[1].split(">"))
        out.append(f"adjust {a}>{a + 2 * (b - a)}")
    if words[0] == "wild":
        out.append(f"wild {words[1]} martian")
    return [m for m in out if m != text]


def assert_refused(state: State, text: str, error: type[ActionError]) -> None:
    """``state.parse_action(text)`` raises exactly ``error`` (pytest.raises is slow in a hot loop)."""
    try:
        action = state.parse_action(text)
    except ActionError as e:
        assert type(e) is error, f"{text!r} raised {type(e).__name__} ({e}), expected {error.__name__}"
        assert str(e), f"{text!r}: an empty reason"
        return
    raise AssertionError(f"{text!r} parsed as {action!r} in {state!r}, expected {error.__name__}")


# ------------------------------------------------------------------------------------------ properties


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_material_is_conserved(game_id: str, seed: int) -> None:
    """Shangri-La: 6 tiles per colour and discipline; Shanghaien: 48 cards, per card type too."""
    for state in random_playout(game_id, seed).states:
        check_conservation(state)


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_every_game_ends_with_consistent_results(game_id: str, seed: int) -> None:
    game = games.get(game_id)
    playout = random_playout(game_id, seed)  # asserts the ply bound
    assert len(playout.actions) < PLY_BOUND[game_id]
    for state in playout.states[:-1]:
        assert state.current_player() != games.TERMINAL and state.legal_actions()
    check_results(playout.final, game.num_players)


@pytest.mark.parametrize("game_id", GAME_IDS)
@HEAVY
@given(seed=seeds)
def test_no_legal_action_leads_to_an_invalid_state(game_id: str, seed: int) -> None:
    for state in random_playout(game_id, seed).states:
        check_valid(state)
        for action in state.legal_actions():
            after = state.apply(action)
            check_valid(after)
            check_conservation(after)
            check_step(state, action, after)


@pytest.mark.parametrize("game_id", GAME_IDS)
@HEAVY
@given(seed=seeds)
def test_apply_leaves_the_state_unchanged(game_id: str, seed: int) -> None:
    for state in random_playout(game_id, seed).states:
        before = snapshot(state)
        legal = state.legal_actions()
        for action in legal:
            state.apply(action)
        legal.clear()  # the list handed out is the caller's: the state must not share it
        assert snapshot(state) == before


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_chance_nodes_list_exact_distributions(game_id: str, seed: int) -> None:
    game = games.get(game_id)
    chance_nodes = 0
    for state in random_playout(game_id, seed).states:
        player = state.current_player()
        exact = state.chance_outcomes_exact()
        floats = state.chance_outcomes()
        if player == games.CHANCE:
            chance_nodes += 1
            assert sum((p for _, p in exact), Fraction(0)) == 1
            assert all(isinstance(p, Fraction) and p > 0 for _, p in exact)
            assert [a for a, _ in exact] == state.legal_actions()
            assert len({str(a) for a, _ in exact}) == len(exact), "an outcome listed twice"
            assert [a for a, _ in floats] == [a for a, _ in exact]
            assert all(f == pytest.approx(float(p)) for (_, f), (_, p) in zip(floats, exact, strict=True))
        else:
            assert floats == [] and exact == []
            assert player == games.TERMINAL or 0 <= player < game.num_players
    assert (chance_nodes > 0) == game.has_chance


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_notation_round_trips(game_id: str, seed: int) -> None:
    game = games.get(game_id)
    for state in random_playout(game_id, seed).states:
        for action in state.legal_actions():
            text = str(action)
            assert state.parse_action(text) is action
            assert game.action_from_text(text) is action
            assert str(game.action_from_text(text)) == text
            assert text == " ".join(text.split()) and text == text.lower()


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_parse_action_tells_bad_syntax_from_an_illegal_action(game_id: str, seed: int) -> None:
    playout = random_playout(game_id, seed)
    seen: dict[str, Any] = {}
    for state in playout.states:
        seen.update((str(a), a) for a in state.legal_actions())
    pool = sorted(seen)
    rng = random.Random(f"parse:{seed}")
    for state in playout.states:
        legal = {str(a) for a in state.legal_actions()}
        illegal = [t for t in pool if t not in legal]
        for text in rng.sample(illegal, min(8, len(illegal))):
            assert_refused(state, text, IllegalActionError)
        for text in GARBAGE[game_id]:
            assert_refused(state, text, ActionSyntaxError)
        for text in rng.sample(sorted(legal), min(3, len(legal))):
            for bad in mutations(text):
                assert_refused(state, bad, ActionSyntaxError)
    # at the end every well-formed action is illegal
    for text in pool:
        assert_refused(playout.final, text, IllegalActionError)


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY
@given(seed=seeds)
def test_identical_seeds_replay_identically(game_id: str, seed: int) -> None:
    first = random_playout(game_id, seed)
    again = play(game_id, str(seed), random_chooser(random.Random(seed)))
    assert again.texts == first.texts
    assert again.final.scores() == first.final.scores() and again.final.ranks() == first.final.ranks()
    replayed = replay(game_id, first.texts)
    assert replayed.scores() == first.final.scores() and replayed.ranks() == first.final.ranks()
    assert replayed.render() == first.final.render()
    # a chooser that ignores list order replays the same way too
    a = play(game_id, str(seed), sorted_text_chooser(random.Random(seed)))
    b = play(game_id, str(seed), sorted_text_chooser(random.Random(seed)))
    assert a.texts == b.texts and a.final.scores() == b.final.scores()


def test_random_playouts_reach_every_kind_of_action() -> None:
    """The properties above are only as strong as the playouts: random play must use every action kind."""
    expected = {
        "shangrila-3p": {"place", "recruit", "journey"},
        "shangrila-4p": {"place", "recruit", "journey"},
        "shanghaien": {"deal", "dice", "roll", "shanghai", "place", "wild", "adjust", "both", "reroll"},
    }
    for game_id, kinds in expected.items():
        seen: Counter[str] = Counter()
        for seed in range(12):
            seen.update(tally(random_playout(game_id, seed).texts))
        assert kinds <= set(seen), f"{game_id}: never played {kinds - set(seen)}"


def test_final_tavern_is_not_counted_twice() -> None:
    """Regression: round 8's Shanghai once left its 6 distributed cards in ``tavern`` (54 cards at the end)."""
    final = random_playout("shanghaien", 0).final
    assert isinstance(final, ShanghaienState) and final.is_terminal()
    assert final.tavern == ()
    check_shanghaien_conservation(final)


def test_the_invariant_checks_catch_corrupted_states() -> None:
    """The oracles above are only as good as their power to fail: corrupt real states and expect a failure."""
    playout = random_playout("shangrila-4p", 7)
    mid = playout.states[len(playout.states) // 2]
    assert isinstance(mid, ShangriLaState)
    occupied = next(s for s, x in enumerate(mid.board) if x)
    g = mid.game

    def shangrila(board: list[int], supply: list[int], stones: int) -> ShangriLaState:
        return ShangriLaState(
            g, board, supply, mid.bridges, stones, player=mid.player, ply=mid.ply, passes=0, over=False
        )

    lost_tile = shangrila([0 if s == occupied else x for s, x in enumerate(mid.board)], mid.supply, mid.stones)
    extra_supply = shangrila(mid.board, [x + (i == 3) for i, x in enumerate(mid.supply)], mid.stones)
    for broken in (lost_tile, extra_supply):
        with pytest.raises(AssertionError):
            check_conservation(broken)
    bad_code = shangrila([9 if s == occupied else x for s, x in enumerate(mid.board)], mid.supply, mid.stones)
    open_village = next(v for v in g.live_villages if not mid.stones >> v & 1)
    false_stone = shangrila(mid.board, mid.supply, mid.stones | 1 << open_village)
    for broken in (bad_code, false_stone):
        with pytest.raises(AssertionError):
            check_valid(broken)

    state = random_playout("shanghaien", 7).states[60]
    assert isinstance(state, ShanghaienState)
    lost_card = copy.copy(state)
    lost_card.deck = (state.deck[0] - 1, *state.deck[1:])
    lost_card.deck_left -= 1
    with pytest.raises(AssertionError):
        check_conservation(lost_card)
    too_many_dice = copy.copy(state)
    too_many_dice.placed = (state.placed[0] + 1, state.placed[1])
    with pytest.raises(AssertionError):
        check_valid(too_many_dice)
