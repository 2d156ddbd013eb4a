"""A complete first bot: one move of look-ahead, enough to beat a random player in every game.

    arena play docs/examples/mybot.py:MyBot --game shanghaien --vs random --games 40
    arena bot run docs/examples/mybot.py:MyBot --token YOUR_TOKEN --arena HOST:PORT

README.md ("Write a bot and play it locally") shows the class below as it stands here.
"""

from __future__ import annotations

import random
from typing import Any

from sdk import Bot, Turn


class MyBot(Bot):
    name, version = "mybot", "1.0"

    def act(self, turn: Turn) -> Any:
        def lead(action: Any) -> tuple[int, float]:
            # turn.state is the engine's state: apply() shows the position an action leads to
            scores = turn.state.apply(action).scores()
            best_other = max(s for seat, s in enumerate(scores) if seat != turn.seat)
            return scores[turn.seat] - best_other, random.random()  # ties: any of the best

        # Shangri-La: the journey that gains most on the leader; Shanghaien: Shanghai only when the
        # tavern's cards go more to us than to the opponent (rolling changes no score)
        return max(turn.legal_actions, key=lead)
