"""Reference players as plain policies: (state, rng) -> legal action.

Each adapts a reference bot (``sdk.bots``): a fresh bot seeded from the caller's ``rng`` is handed a
``Turn`` built from the state, so a game played with these policies replays exactly from the caller's
seed. ``strong`` searches a fixed number of rollouts (``DEMO_ITERATIONS``) rather than a time budget,
for the same reason. They use only the engine surface; ``rng`` is the caller's, never a global.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sdk.bot import Bot, Turn
from sdk.bots import make_bot

Player = Callable[[Any, random.Random], Any]

DEMO_ITERATIONS = 24
"""Rollouts per move of the ``strong`` player (its time budget would make games irreproducible)."""

MOVE_MS = 60_000


def turn_for(state: Any, game_id: str = "", move_ms: int = MOVE_MS) -> Turn:
    """A ``Turn`` for the player to move in ``state``, as the referee would send it."""
    seat = state.current_player()
    return Turn(
        match_id="local",
        game_id=game_id or state.game.game_id,
        seat=seat,
        ply=0,
        state=state,
        view=state.view(seat),
        legal_actions=state.legal_actions(),
        move_ms=move_ms,
        time_bank_ms=0,
    )


def bot_player(name: str, **kw: Any) -> Player:
    """A policy that asks the reference bot ``name`` (built with ``kw``), seeded from the caller's rng."""

    def play(state: Any, rng: random.Random) -> Any:
        bot: Bot = make_bot(name, seed=rng.getrandbits(64), **kw)
        return bot.act(turn_for(state))

    play.__name__ = f"{name}_player"
    return play


PLAYERS: dict[str, Player] = {
    "random": bot_player("random"),
    "greedy": bot_player("greedy"),
    "strong": bot_player("strong", iterations=DEMO_ITERATIONS),
}
