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

import concurrent.futures
import contextlib
import copy
import queue
import threading
from collections.abc import Iterator, Sequence
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
            if ply.note:  # the seat's private data: only a copy with it (its owner's) has any
                move["note"] = ply.note
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


# -------------------------------------------------------------------------------- live replays


def live_start(recorder: _Recorder) -> dict[str, Any]:
    """The page data of a transcript of which only the header is known yet (a live match's start)."""
    header = recorder.head
    assert header is not None
    game = games.get(header.game_id)
    first = recorder.frames[0]
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "game": {"game_id": game.game_id, "family": game.family, "num_players": game.num_players},
        "header": header.to_dict(),
        "frames": [first],
        "moves": [],
        "incidents": [],
        "footer": None,
        "verified": {"ok": None, "line": None, "message": "verified when the match ends"},
        "replay_error": None,
        "seat_colours": seat_colours(
            [(s.bot_name, s.bot_version) for s in header.seats], recorder.drawing.colours(first["view"])
        ),
    }
    data.update(recorder.drawing.extra(first, None))
    return data


class _LiveRecorder(_Recorder):
    """``_Recorder`` that also says, line by line, what each line adds to the page data (``apply_update``)."""

    def __init__(self) -> None:
        super().__init__()
        self.out: dict[str, Any] = {}

    def header(self, header: transcripts.Header, state: games.State) -> None:
        super().header(header, state)
        self.out = {"start": live_start(self)}

    def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
        super().ply(ply, action, before, after)
        self.out = {"frame": patch(self.frames[-2], self.frames[-1]), "move": self.moves[-1]}
        del self.frames[1:-1]  # the first frame (for the drawing's extra) and the last (the next patch's base)

    def incident(self, event: transcripts.Incident, state: games.State) -> None:
        super().incident(event, state)
        self.out = {"incident": self.incidents[-1]}

    def footer(self, footer: transcripts.Footer, state: games.State) -> None:
        super().footer(footer, state)
        self.out = {"footer": footer.to_dict()}


_STOP = object()


class LiveReplay:
    """A transcript replayed as its lines arrive, for live viewers: ``feed(lines)`` gives, per line, the
    update it makes to the page data (``apply_update`` applies one, and the page's script does the same).

    The frames are made as for a whole transcript (the same ``_Recorder`` and the game's drawing); only
    their packaging differs. ``referee.transcript.walk_lines`` pulls its lines, so the walk runs in a
    thread of its own, waiting for the next batch; the caller is never blocked by it (``feed`` returns a
    future). After the footer the update also carries the verification and the drawing's extra data."""

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._recorder = _LiveRecorder()
        self._lines: list[str] = []
        self._thread = threading.Thread(target=self._run, name="live-replay", daemon=True)
        self._thread.start()

    def feed(self, lines: Sequence[str]) -> concurrent.futures.Future[list[dict[str, Any]]]:
        """The updates of ``lines`` (one dict each, in order), once the engine has replayed them."""
        done: concurrent.futures.Future[list[dict[str, Any]]] = concurrent.futures.Future()
        self._inbox.put((list(lines), done))
        return done

    def close(self) -> None:
        self._inbox.put(_STOP)

    def _run(self) -> None:
        batch: tuple[list[str], concurrent.futures.Future[list[dict[str, Any]]]] | None = None
        updates: list[dict[str, Any]] = []
        stopped = False

        def pull() -> Iterator[str]:
            nonlocal batch, updates, stopped
            while True:
                item = self._inbox.get()
                if item is _STOP:
                    stopped = True
                    return
                batch, updates = item, []
                for line in batch[0]:
                    self._recorder.out = {}
                    self._lines.append(line)
                    yield line
                    updates.append(self._recorder.out)  # the walk asks for the next line: this one is done
                    if self._recorder.foot is not None:
                        return
                _answer(batch[1], updates)
                batch = None

        error: str | None = None
        try:
            transcripts.walk_lines(pull(), self._recorder)
        except transcripts.TranscriptError as e:
            error = str(e)
        except Exception as e:
            error = f"the replay failed: {e!r}"
        if batch is not None:  # the walk ended inside a batch: at the footer or at a bad line
            if error is not None:
                updates.append({"replay_error": error})
            elif updates and "footer" in updates[-1]:
                problem = transcripts.verify_lines(self._lines)
                updates[-1]["verified"] = {
                    "ok": problem is None, "line": problem and problem.line, "message": problem and problem.message
                }  # fmt: skip
                first = {"view": self._recorder.frames[0]["view"]} if self._recorder.frames else {}
                updates[-1]["extra"] = self._recorder.drawing.extra(first, self._recorder.last) if first else {}
            updates += [{} for _ in batch[0][len(updates) :]]
            _answer(batch[1], updates)
        # lines after the end of the walk: nothing more is drawn (the page shows the error or the footer)
        while not stopped and (item := self._inbox.get()) is not _STOP:
            _answer(item[1], [{} for _ in item[0]])


def _answer(done: concurrent.futures.Future[list[dict[str, Any]]], updates: list[dict[str, Any]]) -> None:
    """A batch's updates to its caller, unless the caller gave up waiting (its future cancelled: a follower
    stopped, the website shutting down). Raising there instead ended the replay thread (and, between two
    batches, the replay with "the replay failed"), leaving every later batch's future unanswered."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        done.set_result(updates)


def apply_update(data: dict[str, Any] | None, update: dict[str, Any]) -> dict[str, Any] | None:
    """The page data after one line's update (``LiveReplay``); the page's script has the same lines."""
    if "start" in update:
        start: dict[str, Any] = copy.deepcopy(update["start"])
        return start
    if data is None:
        return None
    if "frame" in update:
        data["frames"].append(update["frame"])
        data["moves"].append(update["move"])
    if "incident" in update:
        data["incidents"].append(update["incident"])
    if "footer" in update:
        data["footer"] = update["footer"]
        data["verified"] = update.get("verified", data["verified"])
        data.update(update.get("extra", {}))
    if "replay_error" in update:
        data["replay_error"] = update["replay_error"]
    return data
