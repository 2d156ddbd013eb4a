"""The reference bots return legal actions everywhere, and beat weaker ones (a small sample)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from referee import chance, games
from sdk.bots import REFERENCE_BOTS, make_bot
from sdk.players import turn_for


def positions(game_id: str, count: int, seed: int) -> list[object]:
    """Player-node states from a random playout."""
    game = games.get(game_id)
    rng = random.Random(seed)
    state: Any = game.new_state()
    out: list[object] = []
    ply = 0
    while not state.is_terminal():
        if state.current_player() == games.CHANCE:
            state = state.apply(chance.sample(state, f"bots:{seed}", ply))
        else:
            out.append(state)
            state = state.apply(rng.choice(state.legal_actions()))
        ply += 1
    step = max(1, len(out) // count)
    return out[::step][:count]


@pytest.mark.parametrize("game_id", games.GAME_IDS)
@pytest.mark.parametrize("name", sorted(REFERENCE_BOTS))
def test_every_reference_bot_answers_legally(game_id: str, name: str) -> None:
    kwargs = {"iterations": 4} if name == "strong" else {}
    bot = make_bot(name, seed=1, **kwargs)
    for state in positions(game_id, 12, 3):
        action = bot.act(turn_for(state))
        assert str(action) in {str(a) for a in state.legal_actions()}  # type: ignore[attr-defined]


def test_unknown_reference_bot_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown reference bot"):
        make_bot("grandmaster")


def test_strong_rollout_policy_answers_legally() -> None:
    from sdk.bots.strong import rollout_action

    rng = random.Random(5)
    for state in positions("shanghaien", 40, 7):
        action = rollout_action(state, rng)  # type: ignore[arg-type]
        assert action in state.legal_actions()  # type: ignore[attr-defined]


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_strong_with_iterations_is_reproducible(game_id: str) -> None:
    for state in positions(game_id, 4, 11):
        answers = {str(make_bot("strong", seed=3, iterations=30).act(turn_for(state))) for _ in range(2)}
        assert len(answers) == 1
