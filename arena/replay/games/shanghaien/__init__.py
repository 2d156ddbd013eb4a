"""Shanghaien on the replay page: frames carry the engine's view; a Shanghai carries the cards each seat
took (read from the views before and after it); the page data carries the deck's facts and the engine's
score sheet of the last position (H9, nation by nation). The page's parts are ``drawing.js`` and ``drawing.css``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from arena.replay.drawing import ViewDrawing, script_beside
from referee import games
from referee.games.shanghaien.deck import NATIONS, ROUNDS, TRICKS
from referee.games.shanghaien.state import ShanghaienState


def shanghaien_effect(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a Shanghaien ply changed that a frame alone does not say: at a Shanghai (a round ended),
    the cards each seat took and those that left the game, read from the engine's views."""
    if after["round"] == before["round"] and after["phase"] != "over":
        return {}
    if not before["tavern"]:
        return {}
    taken: list[list[str]] = []
    for b, a in zip(before["crews"], after["crews"], strict=True):
        cards = list((Counter(a["sailors"]) - Counter(b["sailors"])).elements())
        for kind, held in a["tricks"].items():
            cards += [f"trick-{kind}"] * max(0, held - b["tricks"].get(kind, 0))
        taken.append(cards)
    gone = list((Counter(after["out_of_game"]) - Counter(before["out_of_game"])).elements())
    return {"shanghai": {"tavern": [t["card"] for t in before["tavern"]], "taken": taken, "gone": gone}}


class ShanghaienDrawing(ViewDrawing):
    """The tavern with its dice, both crews, the Shanghai's account and the final score sheet."""

    def __init__(self) -> None:
        self.script = script_beside(__name__, "drawing.js")
        self.style = script_beside(__name__, "drawing.css")

    def effect(self, before: dict[str, Any], after: dict[str, Any], action: Any) -> dict[str, Any]:
        return shanghaien_effect(before, after)

    def extra(self, first: dict[str, Any], last: games.State | None) -> dict[str, Any]:
        data: dict[str, Any] = {"deck": {"rounds": ROUNDS, "nations": list(NATIONS), "tricks": list(TRICKS)}}
        if isinstance(last, ShanghaienState):  # the engine's own H9 lines, drawn at the end
            data["scoring"] = last.score_sheet().to_dict()
        return data


DRAWING = ShanghaienDrawing()
