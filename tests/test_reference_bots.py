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


def table_game(names: list[str], seed: int, until: int | None = None) -> tuple[Any, list[Any]]:
    """A Shangri-La game of the reference bots ``names`` (one per seat): the final state and the history."""
    game = games.get(f"shangrila-{len(names)}p")
    bots = [make_bot(name, seed=seed + seat, **({"iterations": 6} if name == "strong" else {}))
            for seat, name in enumerate(names)]  # fmt: skip
    state: Any = game.new_state()
    history: list[Any] = []
    while not state.is_terminal() and (until is None or len(history) < until):
        action = bots[state.current_player()].act(turn_for(state))
        history.append(action)
        state = state.apply(action)
    return state, history


def test_opponent_model_tells_greedy_and_strong_from_random() -> None:
    from sdk.bots.opponents import OpponentModel

    _, history = table_game(["greedy", "greedy", "random"], seed=21)
    model = OpponentModel(games.get("shangrila-3p").new_state(), seat=0)
    model.update(history)
    erratic = model.erratic()
    assert erratic[0] == 0.0  # its own seat is never modelled
    assert erratic[1] == 0.0  # greedy's every decision is among greedy's best
    assert erratic[2] > 0.6  # random's fall short of greedy's best about as far as a random player's would
    assert model.decisions[2] > 20 and model.ply == len(history)
    # A searching bot leaves greedy's best for actions greedy rates well too: mostly greedy, not random.
    _, searched = table_game(["greedy", "strong", "random"], seed=4)
    mixed = OpponentModel(games.get("shangrila-3p").new_state(), seat=0)
    mixed.update(searched)
    strong, rand = mixed.erratic()[1:]
    assert 0.0 < strong < 0.3 and rand > 0.6
    # Incremental updates, turn by turn, count the same as one update with the whole history.
    step = OpponentModel(games.get("shangrila-3p").new_state(), seat=0)
    for k in range(0, len(history) + 1, 3):
        step.update(history[:k])
    step.update(history)
    assert (step.decisions, step.shortfall, step.room) == (model.decisions, model.shortfall, model.room)


def test_strong_learns_its_opponents_only_from_a_turns_history() -> None:
    from sdk.bot import Turn
    from sdk.bots.strong import StrongBot

    state, history = table_game(["greedy", "random", "greedy"], seed=5, until=42)
    seat = state.current_player()
    assert seat == 0
    bare = turn_for(state)
    full = Turn("m1", bare.game_id, seat, len(history), state, bare.view, bare.legal_actions, 60_000, 0,
                history=tuple(history))  # fmt: skip
    bot = StrongBot(seed=1, iterations=18)
    erratic = bot.erratic(full)
    assert erratic[0] == 0.0 and erratic[1] > 0.5 and erratic[2] == 0.0  # itself, random, greedy
    # A turn whose history does not cover its ply (a bare Turn) teaches nothing: rollouts stay greedy.
    assert bot.erratic(Turn("m2", bare.game_id, seat, len(history), state, bare.view, bare.legal_actions,
                            60_000, 0)) == []  # fmt: skip
    assert bot.act(full) in state.legal_actions()
