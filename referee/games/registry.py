"""The game registry: one entry per game family names everything the project knows of it.

An entry (``GameEntry``) holds the family's engines (one ``Game`` per game id) and names, as
entry-point strings (``"package.module:attribute"``), the per-game code that lives in layers the
engines may not import: the reference bots' strategy (``sdk``) and the replay page's drawing
(``arena.replay``). Naming them by string keeps the dependency arrows pointing one way (the engines
import nothing of the project) while a game is still registered in exactly one place, as OpenSpiel's
``register_game`` does; ``load`` imports what a name points to, when the layer that needs it asks.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from referee.games.core import Game


@dataclass(frozen=True)
class GameEntry:
    """One game family's registration (see the module's docstring).

    ``strategy`` names the ``sdk.strategies.GameStrategy`` the reference bots play it with; ``replay``
    the ``arena.replay.drawing.Drawing`` its replay page draws it with (None: the page shows the
    engine's text picture, ``State.render()``).
    """

    games: tuple[Game, ...]
    strategy: str
    replay: str | None = None

    def __post_init__(self) -> None:
        if not self.games or len({g.family for g in self.games}) != 1:
            raise ValueError("a registration holds one or more games of one family")
        for ref in (self.strategy, self.replay):
            if ref is not None and ref.count(":") != 1:
                raise ValueError(f"{ref!r}: name it as 'package.module:attribute'")

    @property
    def family(self) -> str:
        return self.games[0].family


def load(ref: str) -> Any:
    """What an entry-point string ``"package.module:attribute"`` names (the module is imported once)."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
