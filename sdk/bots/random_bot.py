"""``RandomBot``: a uniformly random legal action, from the bot's own seedable generator."""

from __future__ import annotations

import random
from typing import Any

from sdk.bot import Bot, Turn


def random_action(state: Any, rng: random.Random) -> Any:
    """A uniformly random legal action of ``state``."""
    return rng.choice(state.legal_actions())


class RandomBot(Bot):
    name = "random"
    version = "1.0.0"

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, turn: Turn) -> Any:
        return self.rng.choice(turn.legal_actions)
