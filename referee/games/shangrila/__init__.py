"""The Bridges of Shangri-La (game ids ``shangrila-3p`` and ``shangrila-4p``)."""

from referee.games.shangrila.actions import Kind, ShangriLaAction
from referee.games.shangrila.state import ShangriLaGame, ShangriLaState
from referee.games.shangrila.view import ShangriLaView, Space

__all__ = ["Kind", "ShangriLaAction", "ShangriLaGame", "ShangriLaState", "ShangriLaView", "Space"]
