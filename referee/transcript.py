"""Match transcripts: a versioned JSON Lines format, and its verifier.

One JSON object per line, each with a ``type``:

- ``header`` (first line): format, version, match_id, game_id, engine_version, sdk_version, rated,
  seats (seat, bot_name, bot_version), time_control, seed_sha256, started_at.
- ``ply``: ply, actor (seat, or -1 for chance), action (canonical notation); for seats also
  think_ms, bank_ms (left after the move) and fallback (true when the referee played it).
- ``refusal``: ply, seat, action, code, reason.
- ``strike``: ply, seat, strikes (count so far), reason (``timeout``).
- ``disconnect`` / ``reconnect``: ply, seat.
- ``forfeit``: ply, seat, reason (``strikes`` or ``disconnected``).
- ``footer`` (last line): end_reason (completed, forfeit, aborted), plies, scores, game_ranks (the
  engine's), ranks (after forfeits: forfeited seats last), forfeited, seed, ended_at, detail.

docs/transcripts.md documents the same with an example. ``verify`` replays a transcript through
the engines and checks the seed, every chance outcome, every action and the result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee import chance, games
from referee.fallback import fallback_action

FORMAT = "arena-transcript"
VERSION = 1
ENGINE_VERSION = "1"  # bump when a rule's implementation changes the outcome of any game


def final_ranks(game_ranks: Sequence[int], forfeited: Iterable[int]) -> list[int]:
    """RULINGS A3/A4: forfeited seats rank last (sharing it); the rest keep their order among themselves."""
    out = set(forfeited)
    n = len(game_ranks)
    ranks = [0] * n
    active = [s for s in range(n) if s not in out]
    for s in active:
        ranks[s] = 1 + sum(1 for o in active if game_ranks[o] < game_ranks[s])
    for s in out:
        ranks[s] = len(active) + 1
    return ranks


def dumps(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class VerifyError:
    line: int  # 1-based line number in the file
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def read(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def verify_lines(lines: Sequence[str]) -> VerifyError | None:
    """None if the transcript is consistent; otherwise the first bad line and why."""
    events: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            return VerifyError(i, f"not JSON: {e.msg}")
        if not isinstance(event, dict) or "type" not in event:
            return VerifyError(i, "not a transcript event (no 'type')")
        event["_line"] = i
        events.append(event)
    if not events or events[0]["type"] != "header":
        return VerifyError(1, "the first line must be the header")
    header = events[0]
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        return VerifyError(1, f"unknown format {header.get('format')!r} version {header.get('version')!r}")
    try:
        game = games.get(header["game_id"])
    except KeyError as e:
        return VerifyError(1, str(e))
    footer = events[-1]
    if footer["type"] != "footer":
        return VerifyError(footer["_line"], "the last line must be the footer")
    seed = footer.get("seed")
    if not isinstance(seed, str):
        return VerifyError(footer["_line"], "the footer reveals no seed")
    if hashlib.sha256(seed.encode()).hexdigest() != header.get("seed_sha256"):
        return VerifyError(footer["_line"], "the revealed seed does not match the header's seed_sha256")
    state: Any = game.new_state()
    ply = 0
    forfeited: set[int] = set()
    for event in events[1:-1]:
        line = event["_line"]
        kind = event["type"]
        if kind == "forfeit":
            forfeited.add(int(event["seat"]))
            continue
        if kind != "ply":
            continue
        if event.get("ply") != ply:
            return VerifyError(line, f"ply {event.get('ply')} out of order; expected {ply}")
        if state.is_terminal():
            return VerifyError(line, "an action after the game ended")
        actor = state.current_player()
        if event.get("actor") != actor:
            return VerifyError(line, f"actor {event.get('actor')} but the engine has {actor} to move")
        text = event.get("action")
        try:
            action = state.parse_action(text)
        except games.ActionError as e:
            return VerifyError(line, f"{e}")
        if actor == games.CHANCE:
            expected = chance.sample(state, seed, ply)
            if action is not expected:
                return VerifyError(line, f"chance outcome {text!r} does not derive from the seed (expected {expected})")
        elif event.get("fallback"):
            expected = fallback_action(state, seed, ply)
            if action is not expected:
                return VerifyError(line, f"fallback {text!r} is not the documented fallback ({expected})")
        state = state.apply(action)
        ply += 1
    line = footer["_line"]
    end = footer.get("end_reason")
    if end == "aborted":
        return None
    if footer.get("plies") != ply:
        return VerifyError(line, f"footer says {footer.get('plies')} plies, the transcript has {ply}")
    if end == "completed" and not state.is_terminal():
        return VerifyError(line, "footer says completed but the game is not over")
    if set(footer.get("forfeited", [])) != forfeited:
        return VerifyError(line, "forfeited seats differ from the forfeit events")
    if state.is_terminal():
        if footer.get("scores") != state.scores():
            return VerifyError(line, f"scores {footer.get('scores')} but the replay gives {state.scores()}")
        if footer.get("game_ranks") != state.ranks():
            return VerifyError(line, f"game ranks {footer.get('game_ranks')} but the replay gives {state.ranks()}")
        game_ranks = state.ranks()
    else:
        game_ranks = footer.get("game_ranks", [])
    if footer.get("ranks") != final_ranks(game_ranks, forfeited):
        return VerifyError(line, f"ranks {footer.get('ranks')} do not follow from the game ranks and forfeits")
    return None


def verify(path: str | Path) -> VerifyError | None:
    with open(path, encoding="utf-8") as f:
        return verify_lines(f.readlines())
