"""The data of a replay page: a transcript replayed through the engines, one frame per position.

``replay_data(lines)`` walks the transcript with ``referee.transcript.walk`` and keeps, for every
position (the start, then after each ply), what the engine shows of it: ``state.view(0).to_dict()``
(both games show every seat the whole present position, S18 and H10; ``seat`` is dropped) and
``state.scores()``; a Shanghaien replay also carries the engine's score sheet of its last position
(``score_sheet()``: how H9 gives those points, nation by nation). Nothing here applies a rule: the page
only draws these frames. What a move did (the spaces a placement changed, the students a journey moved,
the tiles it sent home, the cards a Shanghai gave out) is read by comparing the engine's frames before
and after it.

Frames are stored compactly: the first one whole, each later one as a patch against the one before,
a list of operations ``[path, value]`` (set) or ``[path]`` (delete), ``path`` being the keys and list
indices down to the value (``[]``: replace everything). ``apply_patch`` undoes ``patch``; the page's
JavaScript has the same twelve lines.

A transcript whose replay stops at a bad line still gives a page up to there, with the error
(``replay_error``); only a first line that is not a usable header raises ``TranscriptError``.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from arena.colours import seat_colours
from arena.replay.layout import BOARD_SIZE, VILLAGE_RADIUS, VILLAGE_XY
from referee import games
from referee import transcript as transcripts
from referee.games.shanghaien.deck import NATIONS, ROUNDS, TRICKS
from referee.games.shanghaien.state import ShanghaienState
from referee.games.shangrila.board import RED_WALLED_VILLAGE

SCHEMA = 1
"""The version of the page data's layout (``data["schema"]``)."""
DRAWN_FAMILIES = ("shangrila", "shanghaien")
"""Families the page draws; any other game's frames carry the engine's text picture (``render()``)."""


# ------------------------------------------------------------------------------------ patches


def patch(before: Any, after: Any) -> list[list[Any]]:
    """The operations that turn ``before`` into ``after`` (plain JSON values), as ``apply_patch`` reads them."""
    ops: list[list[Any]] = []
    _diff(before, after, [], ops)
    return ops


def _diff(a: Any, b: Any, path: list[Any], ops: list[list[Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        ops.extend([[*path, k]] for k in a if k not in b)
        for k, v in b.items():
            if k in a:
                _diff(a[k], v, [*path, k], ops)
            else:
                ops.append([[*path, k], v])
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, [*path, i], ops)
    elif type(a) is not type(b) or a != b:
        ops.append([path, b])


def apply_patch(value: Any, ops: Sequence[Sequence[Any]]) -> Any:
    """``value`` (left unchanged) with ``ops`` applied: ``apply_patch(a, patch(a, b)) == b``."""
    out = copy.deepcopy(value)
    for op in ops:
        path = op[0]
        if not path:
            out = copy.deepcopy(op[1])
            continue
        target = out
        for key in path[:-1]:
            target = target[key]
        if len(op) == 1:
            del target[path[-1]]
        else:
            target[path[-1]] = copy.deepcopy(op[1])
    return out


# ------------------------------------------------------------------------------------- frames


def frame(state: games.State) -> dict[str, Any]:
    """What the page shows of one position, all of it from the engine."""
    out: dict[str, Any] = {"scores": list(state.scores())}
    if state.game.family in DRAWN_FAMILIES:
        view = state.view(0).to_dict()
        view.pop("seat", None)
        out["view"] = view
    else:
        out["view"] = {"to_move": state.current_player()}
        out["text"] = state.render()
    return out


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


class _Recorder(transcripts.Visitor):
    def __init__(self) -> None:
        self.head: transcripts.Header | None = None
        self.family = ""
        self.frames: list[dict[str, Any]] = []
        self.moves: list[dict[str, Any]] = []
        self.incidents: list[dict[str, Any]] = []
        self.foot: transcripts.Footer | None = None
        self.last: games.State | None = None  # the position the replay ends on

    def header(self, header: transcripts.Header, state: games.State) -> None:
        self.head = header
        self.family = state.game.family
        self.frames.append(frame(state))
        self.last = state

    def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
        prev = self.frames[-1]
        now = frame(after)
        move: dict[str, Any] = {"ply": ply.ply, "actor": ply.actor, "action": ply.action}
        if ply.actor >= 0:
            move["think_ms"] = None if ply.think_ms is None else round(ply.think_ms, 1)
            move["bank_ms"] = ply.bank_ms
            if ply.fallback:
                move["fallback"] = True
        if self.family == "shangrila":
            move.update(shangrila_effect(prev["view"], now["view"], action))
        elif self.family == "shanghaien":
            move.update(shanghaien_effect(prev["view"], now["view"]))
        self.moves.append(move)
        self.frames.append(now)
        self.last = after

    def incident(self, event: transcripts.Incident, state: games.State) -> None:
        d = event.to_dict()
        d["kind"] = d.pop("type")
        self.incidents.append(d)

    def footer(self, footer: transcripts.Footer, state: games.State) -> None:
        self.foot = footer


def replay_data(lines: Sequence[str | bytes]) -> dict[str, Any]:
    """Everything the replay page shows of a transcript (its lines), replayed through the engines and
    checked with ``referee.transcript.verify_lines``. TranscriptError if its first line is not a usable
    header; a later bad line ends the replay there (``replay_error`` says where and why)."""
    recorder = _Recorder()
    replay_error = None
    try:
        transcripts.walk_lines(lines, recorder)
    except transcripts.TranscriptError as e:
        if recorder.head is None:
            raise
        replay_error = str(e)
    header = recorder.head
    assert header is not None  # walk_lines raised otherwise
    game = games.get(header.game_id)
    problem = transcripts.verify_lines(lines)
    first = recorder.frames[0]
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "game": {"game_id": game.game_id, "family": game.family, "num_players": game.num_players},
        "header": header.to_dict(),
        "frames": [first, *(patch(a, b) for a, b in pairwise(recorder.frames))],
        "moves": recorder.moves,
        "incidents": recorder.incidents,
        "footer": None if recorder.foot is None else recorder.foot.to_dict(),
        "verified": {"ok": problem is None, "line": problem and problem.line, "message": problem and problem.message},
        "replay_error": replay_error,
        # one rule with the ladder page (arena.colours): a bot looks the same on both
        "seat_colours": seat_colours(
            [(s.bot_name, s.bot_version) for s in header.seats],
            first["view"].get("colours") if game.family == "shangrila" else None,
        ),
    }
    if game.family == "shangrila":
        start = {v for bridge in first["view"]["standing_bridges"] for v in bridge}
        data["board"] = {
            "size": list(BOARD_SIZE), "radius": VILLAGE_RADIUS, "villages": [list(xy) for xy in VILLAGE_XY],
            "bridges": first["view"]["standing_bridges"],  # the bridges in play (none of village 2's with 3 players)
            "closed": [v for v in range(len(VILLAGE_XY)) if v not in start],  # villages out of play
            "red_walled": RED_WALLED_VILLAGE,
        }  # fmt: skip
    elif game.family == "shanghaien":
        data["deck"] = {"rounds": ROUNDS, "nations": list(NATIONS), "tricks": list(TRICKS)}
        if isinstance(recorder.last, ShanghaienState):  # the engine's own H9 lines, drawn at the end
            data["scoring"] = recorder.last.score_sheet().to_dict()
    return data


def frames_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every frame of ``replay_data``'s output, decoded (what the page's script does on load)."""
    out = [data["frames"][0]]
    for ops in data["frames"][1:]:
        out.append(apply_patch(out[-1], ops))
    return out
