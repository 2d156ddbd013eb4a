"""The reference bots' per-game dispatch (``sdk.strategies``): every game family has its strategy, and a new
game is played by random, greedy and strong once its engine exists and its strategy has one entry."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any, Final, Self

import pytest

from referee import chance, games
from referee.games import CHANCE, TERMINAL, Game, IllegalActionError, State, TimeControl
from referee.games.core import shared_ranks
from sdk import heuristics
from sdk.bots import make_bot
from sdk.players import turn_for
from sdk.strategies import STRATEGIES, GameStrategy, strategy_for, strategy_of


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_every_game_has_a_strategy(game_id: str) -> None:
    game = games.get(game_id)
    strategy = strategy_for(game)
    assert strategy.family == game.family
    assert strategy_of(game.new_state()) is strategy is STRATEGIES[game.family]


# -------------------------------------------------------------------------- a third game


class DiceRaceGame:
    """A toy game: each of two players adds 1 or 2 to its total, then a coin adds 0 or 1 to it; six turns."""

    game_id: Final = "dicerace"
    family: Final = "dicerace"
    num_players: Final = 2
    has_chance: Final = True
    perfect_information: Final = True
    time_control: Final = TimeControl(first_move_ms=1_000, move_ms=1_000, bank_ms=0)

    def new_state(self) -> DiceRaceState:
        return DiceRaceState(self, (0, 0), 0, False)

    def action_from_text(self, text: str) -> str:
        return text


class DiceRaceState:
    def __init__(self, game: DiceRaceGame, totals: tuple[int, int], ply: int, coin: bool) -> None:
        self.game = game
        self.totals = totals
        self.ply = ply  # player turns so far
        self.coin = coin  # a coin is due for the player who just moved

    def current_player(self) -> int:
        if self.ply >= 6 and not self.coin:
            return TERMINAL
        return CHANCE if self.coin else self.ply % 2

    def legal_actions(self) -> list[str]:
        player = self.current_player()
        return [] if player == TERMINAL else ["coin 0", "coin 1"] if player == CHANCE else ["add 1", "add 2"]

    def chance_weights(self) -> list[tuple[str, int]]:
        return [("coin 0", 1), ("coin 1", 1)] if self.coin else []

    def chance_outcomes_exact(self) -> list[tuple[str, Fraction]]:
        return [(a, Fraction(w, 2)) for a, w in self.chance_weights()]

    def chance_outcomes(self) -> list[tuple[str, float]]:
        return [(a, float(p)) for a, p in self.chance_outcomes_exact()]

    def apply(self, action: str) -> Self:
        if action not in self.legal_actions():
            raise IllegalActionError(action)
        mover = (self.ply - 1) % 2 if self.coin else self.ply % 2
        totals = list(self.totals)
        totals[mover] += int(action[-1])
        return type(self)(self.game, (totals[0], totals[1]), self.ply + (not self.coin), not self.coin)

    def parse_action(self, text: str) -> str:
        if text not in self.legal_actions():
            raise IllegalActionError(text)
        return text

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def scores(self) -> list[int]:
        return list(self.totals)

    def ranks(self) -> list[int]:
        return shared_ranks(self.scores())

    def view(self, seat: int) -> tuple[int, int]:
        return self.totals

    def render(self) -> str:
        return f"{self.totals}"

    def is_milestone(self, before: Self) -> bool:
        return False


class DiceRaceStrategy(GameStrategy[DiceRaceState]):
    family = "dicerace"

    def seat_values(self, state: DiceRaceState) -> list[float]:
        return [float(t) for t in state.totals]

    def action_values(self, state: DiceRaceState, seat: int) -> list[tuple[Any, float]]:
        return [(a, self.value(state.apply(a), seat)) for a in state.legal_actions()]


def dicerace_protocols(game: DiceRaceGame) -> tuple[Game, State]:
    """mypy: the toy engine satisfies the engine protocols (so it could join ``referee.games.GAMES``)."""
    return game, game.new_state()


def play(bots: list[Any], seed: str) -> DiceRaceState:
    state = DiceRaceGame().new_state()
    ply = 0
    while not state.is_terminal():
        if state.current_player() == CHANCE:
            action = chance.sample(state, seed, ply)
        else:
            action = bots[state.current_player()].act(turn_for(state))
            assert action in state.legal_actions()
        state = state.apply(action)
        ply += 1
    return state


def test_an_unknown_family_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="know no game family 'dicerace'"):
        strategy_of(DiceRaceGame().new_state())


def test_a_new_game_needs_its_engine_and_one_strategy_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STRATEGIES, "dicerace", DiceRaceStrategy())
    game, state = dicerace_protocols(DiceRaceGame())
    assert heuristics.value(state, 0) == 0.0
    for seed in range(5):
        greedy = play([make_bot("greedy", seed=seed), make_bot("greedy", seed=seed + 1)], f"race:{seed}")
        assert all(6 <= t <= 9 for t in greedy.totals)  # greedy adds 2 every turn, then 0-3 from the coins
        strong = play([make_bot("strong", seed=seed, iterations=40), make_bot("random", seed=seed)], f"race:{seed}")
        assert strong.is_terminal()
    rng = random.Random(3)
    bot = make_bot("strong", seed=1, iterations=20)
    assert bot.act(turn_for(game.new_state())) == "add 2"
    assert DiceRaceStrategy().greedy_action(DiceRaceGame().new_state(), rng) == "add 2"


def test_the_sdk_still_exports_the_engines_as_games_after_the_bots_are_imported() -> None:
    """``from sdk import games`` is the engines, whatever SDK subpackages were imported before."""
    import referee.games
    import sdk.bots.strong  # noqa: F401 - imports the strategies
    from sdk import games

    assert games is referee.games
