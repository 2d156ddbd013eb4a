"""A complete bot: it prefers journeys in Shangri-La and calls Shanghai as soon as it may.

    arena play docs/examples/mybot.py:MyBot --game shanghaien --vs reference --games 10
    arena bot run docs/examples/mybot.py:MyBot --token YOUR_TOKEN --server HOST:PORT
"""

from __future__ import annotations

import random
from typing import Any

from sdk import Bot, Turn


class MyBot(Bot):
    name = "mybot"
    version = "1.0"

    def __init__(self) -> None:
        self.rng = random.Random()

    def act(self, turn: Turn) -> Any:
        texts = {str(a): a for a in turn.legal_actions}
        if "shanghai" in texts:
            return texts["shanghai"]
        journeys = [a for t, a in texts.items() if t.startswith("journey")]
        if journeys:
            # turn.state is the engine's state: look one step ahead with apply()
            me = turn.seat
            return max(journeys, key=lambda a: turn.state.apply(a).scores()[me])
        return self.rng.choice(turn.legal_actions)
