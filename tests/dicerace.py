"""A toy third game, registered the way a real one is: its engine, the reference bots' strategy, its replay
drawing (Python and the page's script part) and its one ``GameEntry`` all live in this module, so a game
outside ``referee.games``, ``sdk.strategies`` and ``arena.replay`` is played and replayed with no change there.

Each of two players adds 1 or 2 to its total, then a coin adds 0 or 1 to it; six turns. ``registered()``
adds it to the registry for a test's duration (``tests/test_game_strategies.py``, ``tests/test_replay.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Final, Self

from arena.replay.drawing import Drawing
from referee import chance, games
from referee import transcript as transcripts
from referee.games import CHANCE, TERMINAL, Game, GameEntry, IllegalActionError, State, TimeControl
from referee.games.core import shared_ranks
from sdk.players import turn_for
from sdk.strategies import GameStrategy

MOVES: Final = ("add 1", "add 2")
COINS: Final = ("coin 0", "coin 1")


class DiceRaceGame:
    """Static facts of the toy game."""

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
        return [] if player == TERMINAL else list(COINS) if player == CHANCE else list(MOVES)

    def chance_weights(self) -> list[tuple[str, int]]:
        return [(COINS[0], 1), (COINS[1], 1)] if self.coin else []

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
        """The legal action itself (actions are interned: the referee compares them by identity)."""
        for action in self.legal_actions():
            if action == text:
                return action
        raise IllegalActionError(text)

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


class DiceRaceDrawing(Drawing):
    """Two lanes, one per seat, each as long as the seat's total."""

    script = """window.__replayDrawing = function (R) {
  "use strict";
  return {
    title: "Dice race",
    unit: "pips",
    chance: "the coin",
    draw: function (k, board) {
      var v = R.FRAMES[k].view;
      board.appendChild(R.h("div", { id: "race" }, v.totals.map(function (t, seat) {
        return R.h("div", { "class": "lane", "data-seat": seat, "data-total": t }, R.chip(seat), " " + "#".repeat(t));
      })));
    }
  };
};"""

    def frame(self, state: games.State) -> dict[str, Any]:
        assert isinstance(state, DiceRaceState)
        return {"scores": state.scores(), "view": {"to_move": state.current_player(), "totals": list(state.totals)}}


STRATEGY: Final = DiceRaceStrategy()
DRAWING: Final = DiceRaceDrawing()
ENTRY: Final = GameEntry(games=(DiceRaceGame(),), strategy=f"{__name__}:STRATEGY", replay=f"{__name__}:DRAWING")
"""The toy game's one registration."""


@contextmanager
def registered() -> Iterator[GameEntry]:
    """The toy game in the registry for the duration of the ``with`` block."""
    games.register(ENTRY)
    try:
        yield ENTRY
    finally:
        games.unregister(ENTRY.family)


def protocols(game: DiceRaceGame) -> tuple[Game, State]:
    """mypy: the toy engine satisfies the engine protocols (so it can join ``referee.games.GAMES``)."""
    return game, game.new_state()


def transcript(bots: list[Any], seed: str) -> list[str]:
    """The lines of a toy match the ``bots`` play, as the referee writes them (header, plies, footer)."""
    game = ENTRY.games[0]
    state = game.new_state()
    stamp = "2026-01-01T00:00:00.000+00:00"
    seats = tuple(transcripts.SeatInfo(seat=s, bot_name=f"bot{s}", bot_version="1.0") for s in range(game.num_players))
    header = transcripts.Header(match_id=f"m-{seed}", game_id=game.game_id, sdk_version="0", rated=False, seats=seats,
                                time_control=game.time_control.to_dict(), started_at=stamp,
                                seed_sha256=hashlib.sha256(seed.encode()).hexdigest())  # fmt: skip
    lines = [header.to_line()]
    ply = 0
    while not state.is_terminal():
        actor = state.current_player()
        action = chance.sample(state, seed, ply) if actor == CHANCE else bots[actor].act(turn_for(state))
        lines.append(transcripts.ply_line(ply, actor, str(action), None if actor < 0 else 1.0))
        state = state.apply(action)
        ply += 1
    ranks = tuple(state.ranks())
    footer = transcripts.Footer(end_reason="completed", plies=ply, scores=tuple(state.scores()), game_ranks=ranks,
                                ranks=ranks, forfeited=(), seed=seed, ended_at=stamp, detail="")  # fmt: skip
    lines.append(footer.to_line())
    return lines
