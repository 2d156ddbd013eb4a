"""How the replay page draws one game: what the frames carry (Python), the page's script and style parts.

A game's registration (``referee.games.GameEntry.replay``) names its ``Drawing``; ``drawing_for`` finds
it there, so nothing else in ``arena.replay`` knows a game by name. A game registered without one is
drawn by the base class: each frame carries the engine's text picture (``State.render()``), shown as is.

The page's script part (``script``) runs before the page's own script and hands it the game's drawing:
``window.__replayDrawing = function (R) { ...; return {...}; }``, ``R`` being the page's helpers and data
and the returned object its hooks (``assets/replay.js`` lists them, and their defaults).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from referee import games


class Drawing:
    """A game's replay drawing; this base draws any game as the engine's text picture."""

    script: str = ""
    """The page's script part for this game (empty: the page's text drawing)."""
    style: str = ""
    """CSS the script part's drawing needs, after the page's own."""

    def frame(self, state: games.State) -> dict[str, Any]:
        """What the page shows of one position, all of it from the engine."""
        return {"scores": list(state.scores()), "view": {"to_move": state.current_player()}, "text": state.render()}

    def effect(self, before: dict[str, Any], after: dict[str, Any], action: Any) -> dict[str, Any]:
        """What a ply changed that its frames alone do not say, read from the views before and after it
        (added to the move's entry in the page data)."""
        return {}

    def colours(self, first_view: dict[str, Any]) -> list[str] | None:
        """The colour names the game gives its seats (``arena.colours.seat_colours`` draws them), if any."""
        return None

    def extra(self, first: dict[str, Any], last: games.State | None) -> dict[str, Any]:
        """Page data the game's script needs beyond the frames (a board's layout, a deck), given the first
        frame and the position the replay ends on."""
        return {}


class ViewDrawing(Drawing):
    """A drawing whose frames carry the engine's view of the position (every seat is shown all of it)."""

    def frame(self, state: games.State) -> dict[str, Any]:
        view = state.view(0).to_dict()
        view.pop("seat", None)
        return {"scores": list(state.scores()), "view": view}


TEXT = Drawing()


def drawing_for(game: games.Game) -> Drawing:
    """The drawing ``game``'s registration names (the text drawing if it names none)."""
    ref = games.entry_of(game).replay
    if ref is None:
        return TEXT
    drawing = games.load(ref)
    if not isinstance(drawing, Drawing):
        raise TypeError(f"{ref} is no arena.replay.drawing.Drawing")
    return drawing


def script_beside(package: str, name: str) -> str:
    """The text of a file shipped in ``package``: a drawing's script or style, kept beside its module as a
    file of its own language (the wheel carries it as package data)."""
    return (resources.files(package) / name).read_text(encoding="utf-8")
