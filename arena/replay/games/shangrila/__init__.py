"""The Bridges of Shangri-La on the replay page: frames carry the engine's view; a move carries the spaces
it changed and, for a journey, what moved where (read from the views before and after it); the page data
carries the board's layout (``layout``). The page's parts are ``drawing.js`` and ``drawing.css``."""

from __future__ import annotations

from typing import Any

from arena.replay.drawing import ViewDrawing, script_beside
from arena.replay.games.shangrila.layout import BOARD_SIZE, VILLAGE_RADIUS, VILLAGE_XY
from referee import games
from referee.games.shangrila.board import RED_WALLED_VILLAGE


def _cells(view: dict[str, Any]) -> dict[tuple[int, int], Any]:
    return {(v, d): sp for v, row in enumerate(view["villages"]) for d, sp in enumerate(row)}


def shangrila_effect(before: dict[str, Any], after: dict[str, Any], action: Any) -> dict[str, Any]:
    """What a Shangri-La ply changed, read from the engine's views before and after it: the spaces it
    changed (``changed``: [village, discipline]) and, for a journey, the students that moved, where
    they went, the tiles sent back to their supplies, the bridge broken and new Stones."""
    b, a = _cells(before), _cells(after)
    effect: dict[str, Any] = {"changed": [list(k) for k in sorted(b) if b[k] != a[k]]}
    source, dest = getattr(action, "source", -1), getattr(action, "dest", -1)
    if source < 0 or dest < 0:
        return effect
    moved: list[dict[str, Any]] = []
    home: list[dict[str, Any]] = []
    for d in range(len(before["disciplines"])):
        was = b[(source, d)]
        if was is None or not was[1] or a[(source, d)] == was:
            continue  # no student of this discipline left the source village
        colour = was[0]
        there, now = b[(dest, d)], a[(dest, d)]
        if now == there:
            result = "back"  # the student found no room: it went back to its supply
        elif there is None:
            result = "master"  # an empty space: it became a master
        elif there[0] == colour:
            result = "student"  # it joined its own colour's master as its student
        else:
            result = "won"  # it sent the defender home and became the master
            home.append({"colour": there[0], "d": d, "tiles": 2 if there[1] else 1})
        moved.append({"colour": colour, "d": d, "result": result})
    standing = {tuple(x) for x in after["standing_bridges"]}
    broken = [list(x) for x in before["standing_bridges"] if tuple(x) not in standing]
    stones = [v for v in after["stones"] if v not in before["stones"]]
    effect["journey"] = {"from": source, "to": dest, "moved": moved, "home": home, "broken": broken,
                         "stones": stones}  # fmt: skip
    return effect


class ShangriLaDrawing(ViewDrawing):
    """The board (villages, bridges, Stones, a journey's arrow), the supplies and the journey's account."""

    def __init__(self) -> None:
        self.script = script_beside(__name__, "drawing.js")
        self.style = script_beside(__name__, "drawing.css")

    def effect(self, before: dict[str, Any], after: dict[str, Any], action: Any) -> dict[str, Any]:
        return shangrila_effect(before, after, action)

    def colours(self, first_view: dict[str, Any]) -> list[str] | None:
        colours: list[str] | None = first_view.get("colours")
        return colours

    def extra(self, first: dict[str, Any], last: games.State | None) -> dict[str, Any]:
        start = {v for bridge in first["view"]["standing_bridges"] for v in bridge}
        return {"board": {
            "size": list(BOARD_SIZE), "radius": VILLAGE_RADIUS, "villages": [list(xy) for xy in VILLAGE_XY],
            "bridges": first["view"]["standing_bridges"],  # the bridges in play (none of village 2's with 3 players)
            "closed": [v for v in range(len(VILLAGE_XY)) if v not in start],  # villages out of play
            "red_walled": RED_WALLED_VILLAGE,
        }}  # fmt: skip


DRAWING = ShangriLaDrawing()
