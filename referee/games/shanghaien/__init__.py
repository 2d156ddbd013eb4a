"""Shanghaien (game id ``shanghaien``)."""

from referee.games.shanghaien.actions import Kind, ShanghaienAction
from referee.games.shanghaien.state import Phase, ShanghaienGame, ShanghaienState
from referee.games.shanghaien.view import Crew, ShanghaienView, TavernCard

__all__ = [
    "Crew",
    "Kind",
    "Phase",
    "ShanghaienAction",
    "ShanghaienGame",
    "ShanghaienState",
    "ShanghaienView",
    "TavernCard",
]
