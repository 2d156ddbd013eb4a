"""The data of a replay page: a transcript replayed through the engines, one frame per position.

``replay_data(lines)`` walks the transcript with ``referee.transcript.walk`` and keeps, for every
position (the start, then after each ply), what the engine shows of it, as the game's drawing
(``arena.replay.drawing``, found from the game's registration) says: e.g. ``state.view(0).to_dict()``
and ``state.scores()``, or the engine's text picture for a game registered without a drawing. Nothing
here applies a rule: the page only draws these frames. What a move did (the spaces a placement changed,
the cards a round gave out) is read by the drawing comparing the engine's frames before and after it.

Frames are stored compactly: the first one whole, each later one as a patch against the one before,
a list of operations ``[path, value]`` (set) or ``[path]`` (delete), ``path`` being the keys and list
indices down to the value (``[]``: replace everything). ``apply_patch`` undoes ``patch``; the page's
JavaScript has the same twelve lines.

A transcript whose replay stops at a bad line still gives a page up to there, with the error
(``replay_error``); only a first line that is not a usable header raises ``TranscriptError``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from arena.colours import seat_colours
from arena.replay.drawing import TEXT, Drawing, drawing_for
from referee import games
from referee import transcript as transcripts

SCHEMA = 1
"""The version of the page data's layout (``data["schema"]``)."""


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


class _Recorder(transcripts.Visitor):
    def __init__(self) -> None:
        self.head: transcripts.Header | None = None
        self.drawing: Drawing = TEXT
        self.frames: list[dict[str, Any]] = []
        self.moves: list[dict[str, Any]] = []
        self.incidents: list[dict[str, Any]] = []
        self.foot: transcripts.Footer | None = None
        self.last: games.State | None = None  # the position the replay ends on

    def header(self, header: transcripts.Header, state: games.State) -> None:
        self.head = header
        self.drawing = drawing_for(state.game)
        self.frames.append(self.drawing.frame(state))
        self.last = state

    def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
        prev = self.frames[-1]
        now = self.drawing.frame(after)
        move: dict[str, Any] = {"ply": ply.ply, "actor": ply.actor, "action": ply.action}
        if ply.actor >= 0:
            move["think_ms"] = None if ply.think_ms is None else round(ply.think_ms, 1)
            move["bank_ms"] = ply.bank_ms
            if ply.fallback:
                move["fallback"] = True
        move.update(self.drawing.effect(prev["view"], now["view"], action))
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
            [(s.bot_name, s.bot_version) for s in header.seats], recorder.drawing.colours(first["view"])
        ),
    }
    data.update(recorder.drawing.extra(first, recorder.last))
    return data


def frames_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every frame of ``replay_data``'s output, decoded (what the page's script does on load)."""
    out = [data["frames"][0]]
    for ops in data["frames"][1:]:
        out.append(apply_patch(out[-1], ops))
    return out
