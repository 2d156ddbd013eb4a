"""The arena's reference bots: ``random``, ``greedy`` and ``strong`` (see each module).

``make_bot(name, seed=None, **kw)`` builds one by name; ``kw`` goes to the constructor (for ``strong``:
``time_per_move``, ``iterations``, ``candidates``, ``depth``).
"""

from __future__ import annotations

from typing import Any

from sdk.bot import Bot
from sdk.bots.greedy import GreedyBot
from sdk.bots.random_bot import RandomBot
from sdk.bots.strong import StrongBot

REFERENCE_BOTS: dict[str, type[Bot]] = {"random": RandomBot, "greedy": GreedyBot, "strong": StrongBot}


def make_bot(name: str, seed: int | str | None = None, **kw: Any) -> Bot:
    """The reference bot ``name`` with its own generator seeded by ``seed``."""
    try:
        cls = REFERENCE_BOTS[name]
    except KeyError:
        raise ValueError(f"unknown reference bot {name!r}; known: {', '.join(REFERENCE_BOTS)}") from None
    bot: Bot = cls(seed=seed, **kw)  # type: ignore[call-arg]
    return bot


__all__ = ["REFERENCE_BOTS", "GreedyBot", "RandomBot", "StrongBot", "make_bot"]
