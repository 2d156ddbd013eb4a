"""Every engine satisfies the engine protocols (``referee.games.State`` and ``Game``): mypy checks it on the
typed functions below, which cover every game of the registry; the tests check at run time that the chance
API agrees with itself and with the documented derivation, that ``scores()`` holds before the end, and
that the static facts and milestones are what callers expect."""

from __future__ import annotations

from fractions import Fraction

import pytest

from referee import chance, games
from referee.games import CHANCE, Game, State, TimeControl
from tests.playout import random_playout


def registry() -> dict[str, Game]:
    """mypy: every game type of ``games.GAMES`` satisfies ``Game`` (and through ``new_state``, ``State``)."""
    return dict(games.GAMES)


def initial_states() -> list[State]:
    """mypy: every engine's state type satisfies ``State``."""
    return [game.new_state() for game in games.GAMES.values()]


def public(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_every_engine_has_every_protocol_member() -> None:
    assert {"chance_weights", "is_milestone", "game", "scores"} <= public(State)
    assert {"game_id", "family", "num_players", "has_chance", "perfect_information", "time_control"} <= public(Game)
    for state in initial_states():
        assert all(hasattr(state, name) for name in public(State)), type(state).__name__
        assert all(hasattr(state.game, name) for name in public(Game)), type(state.game).__name__


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_static_facts(game_id: str) -> None:
    game = registry()[game_id]
    assert game.game_id == game_id
    assert game.family and game_id.startswith(game.family)
    assert isinstance(game.time_control, TimeControl)
    assert isinstance(game.perfect_information, bool)
    state = game.new_state()
    assert state.game is game
    assert len(state.scores()) == game.num_players
    plays = [random_playout(game_id, seed) for seed in range(3)]
    assert game.has_chance == any(s.current_player() == CHANCE for p in plays for s in p.states)


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_chance_weights_agree_with_the_exact_outcomes(game_id: str) -> None:
    """At every state: ``chance_weights`` normalised are ``chance_outcomes_exact`` (same outcomes, same
    order), the floats are those fractions, all three are empty off chance nodes, and ``chance.sample``
    (which draws from the weights) picks what the documented derivation picks from the fractions."""
    for seed in range(4):
        playout = random_playout(game_id, seed)
        for ply, state in enumerate(playout.states):
            weights = state.chance_weights()
            exact = state.chance_outcomes_exact()
            floats = state.chance_outcomes()
            if state.current_player() != CHANCE:
                assert weights == [] and exact == [] and floats == []
                continue
            assert [a for a, _ in weights] == [a for a, _ in exact] == [a for a, _ in floats]
            assert all(isinstance(w, int) and w > 0 for _, w in weights)
            total = sum(w for _, w in weights)
            assert [Fraction(w, total) for _, w in weights] == [p for _, p in exact]
            assert sum(p for _, p in exact) == 1
            assert [p for _, p in floats] == pytest.approx([float(p) for _, p in exact])
            assert set(state.legal_actions()) == {a for a, _ in exact}
            for k in range(3):
                match_seed = f"protocol:{seed}:{k}"
                assert chance.sample(state, match_seed, ply) is chance.pick(exact, chance.draw(match_seed, ply))


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_scores_hold_before_the_end(game_id: str) -> None:
    """``scores()`` is what the referee reports for a match cut short: the score as the position stands."""
    playout = random_playout(game_id, 5)
    n = games.get(game_id).num_players
    for state in playout.states[:: max(1, len(playout.states) // 40)]:
        scores = state.scores()
        assert len(scores) == n and all(isinstance(x, int) and x >= 0 for x in scores)
    final = playout.final
    assert final.is_terminal() and len(final.scores()) == len(final.ranks()) == n


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_milestones(game_id: str) -> None:
    """Shangri-La: the end of setup and every journey; Shanghaien: every Shanghai that opens a new round."""
    playout = random_playout(game_id, 8)
    seen = 0
    for before, action, after in zip(playout.states[:-1], playout.actions, playout.states[1:], strict=True):
        text = str(action)
        if games.get(game_id).family == "shangrila":
            setup_ends = before.in_setup() and not after.in_setup()  # type: ignore[attr-defined]
            expected = text.startswith("journey") or setup_ends
        else:
            expected = text == "shanghai" and not after.is_terminal()
        assert after.is_milestone(before) == expected, (before, text)
        seen += expected
    assert seen >= 2


def test_chance_sample_needs_a_chance_node() -> None:
    state = games.get("shangrila-3p").new_state()
    with pytest.raises(ValueError, match="no chance outcomes"):
        chance.sample(state, "seed", 0)
    shanghaien = games.get("shanghaien").new_state()
    assert chance.sample(shanghaien, "seed", 0) in shanghaien.legal_actions()
