"""Matches as the arena records them: requesting one, its public record, listings, event logs and
stored transcripts.

A match is one Redis hash (``keys.match``) from its request to its result; its seed lives in a
separate key so that nothing that lists or describes matches can leak it before the end (RULINGS
A1). While it runs, every transcript line is appended to its event log (``keys.events``), which is
what a worker taking the match over resumes from; at the end the whole transcript is stored with
the result, in one atomic step (``MatchQueue.complete``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Sequence
from typing import Any, Final

import redis

from arena import keys
from arena.service.queue import MatchQueue, Priority
from arena.service.registry import Registry
from referee import games
from referee.timecontrol import TimeControl, default_for

MAX_LIST: Final = 1000
MATCH_ID_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


class MatchRequestError(ValueError):
    """A match request that cannot be queued; the message says why. Nothing was queued."""


def new_match_id(game_id: str) -> str:
    return f"{game_id}-{secrets.token_hex(4)}"


class MatchStore:
    def __init__(self, client: redis.Redis, queue: MatchQueue | None = None, registry: Registry | None = None) -> None:
        self.r = client
        self.queue = queue or MatchQueue(client)
        self.registry = registry or Registry(client)

    # ----------------------------------------------------------------- request

    def request(
        self,
        game_id: str,
        bot_names: Sequence[str],
        *,
        seed: str = "",
        rated: bool = False,
        time_control: dict[str, int] | None = None,
        match_id: str = "",
        priority: Priority = Priority.REQUESTED,
        requested_by: str = "",
    ) -> tuple[str, str]:
        """Queue a match; returns (match id, seed hash). MatchRequestError / DuplicateMatchError otherwise."""
        if game_id not in games.GAME_IDS:
            raise MatchRequestError(f"unknown game id {game_id!r}; known: {', '.join(games.GAME_IDS)}")
        n = games.get(game_id).num_players
        if len(bot_names) != n:
            raise MatchRequestError(f"{game_id} seats {n} bots, got {len(bot_names)}")
        for name in set(bot_names):
            bot = self.registry.find(name)
            if bot is None:
                raise MatchRequestError(f"no bot named {name!r}")
            if not bot.enabled:
                raise MatchRequestError(f"bot {name!r} is disabled: {bot.disabled_reason or 'no reason given'}")
            if game_id not in bot.game_ids:
                raise MatchRequestError(f"bot {name!r} does not play {game_id} (it plays {', '.join(bot.game_ids)})")
        control = default_for(game_id)
        if time_control:
            unknown = set(time_control) - set(TimeControl.__dataclass_fields__)
            if unknown:
                raise MatchRequestError(f"unknown time control field(s): {', '.join(sorted(unknown))}")
            if any(not isinstance(v, int) or v < 0 or v > 3_600_000 for v in time_control.values()):
                raise MatchRequestError("time control values are whole milliseconds between 0 and 3,600,000")
            control = control.with_overrides(**{k: v for k, v in time_control.items() if v})
        if match_id and (len(match_id) > 100 or not set(match_id) <= MATCH_ID_CHARS):
            raise MatchRequestError("a match id is 1-100 letters, digits and - _ . :")
        if len(seed) > 200:
            raise MatchRequestError("a seed is at most 200 characters")
        match_id = match_id or new_match_id(game_id)
        seed = seed or secrets.token_hex(16)
        seed_sha256 = hashlib.sha256(seed.encode()).hexdigest()
        spec = {
            "match_id": match_id,
            "game_id": game_id,
            "seats": [{"seat": i, "bot_name": name} for i, name in enumerate(bot_names)],
            "rated": rated,
            "time_control": control.to_dict(),
            "seed_sha256": seed_sha256,
            "requested_by": requested_by,
        }
        self.queue.enqueue(match_id, spec, priority, seed=seed)
        return match_id, seed_sha256

    # ----------------------------------------------------------------- reading

    def describe(self, match_id: str) -> dict[str, Any] | None:
        """The public record of a match (never its seed before the end), or None."""
        raw = self.r.hgetall(keys.match(match_id))
        return _record(match_id, raw) if raw else None

    def search(
        self,
        *,
        bot: str | None = None,
        game_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        state: str | None = None,
    ) -> list[dict[str, Any]]:
        """Matches newest first (by request time), filtered by bot, game, time window and state."""
        if bot and game_id:
            ids = self._window(keys.matches_by_bot(bot), since, until, MAX_LIST * 4)
            wanted: set[str] = set(self._window(keys.matches_by_game(game_id), since, until, MAX_LIST * 4))
            ids = [i for i in ids if i in wanted]
        elif bot:
            ids = self._window(keys.matches_by_bot(bot), since, until, MAX_LIST * 4)
        elif game_id:
            ids = self._window(keys.matches_by_game(game_id), since, until, MAX_LIST * 4)
        else:
            ids = self._window(keys.matches_by_time(), since, until, MAX_LIST * 4)
        limit = max(1, min(limit, MAX_LIST))
        out: list[dict[str, Any]] = []
        for chunk in _chunks(ids, 200):
            pipe = self.r.pipeline(transaction=False)
            for match_id in chunk:
                pipe.hgetall(keys.match(match_id))
            for match_id, raw in zip(chunk, pipe.execute(), strict=True):
                if not raw:
                    continue
                record = _record(match_id, raw)
                if state and record["status"] != state:
                    continue
                out.append(record)
                if len(out) >= limit:
                    return out
        return out

    def _window(self, key: str, since: float | None, until: float | None, limit: int) -> list[str]:
        hi = until if until else "+inf"
        lo = since if since else "-inf"
        reply: Any = self.r.zrevrangebyscore(key, hi, lo, start=0, num=limit)
        return [keys.text(x) for x in reply]

    def transcript(self, match_id: str) -> str | None:
        """The full stored transcript of a finished match (JSON Lines), or None."""
        raw: Any = self.r.get(keys.transcript(match_id))
        return None if raw is None else keys.text(raw)

    # ----------------------------------------------------------------- event logs

    def append_events(self, items: Iterable[tuple[str, str]]) -> None:
        """Append (match id, transcript line) pairs to their matches' event logs, in order."""
        pipe = self.r.pipeline(transaction=False)
        for match_id, line in items:
            pipe.xadd(keys.events(match_id), {"line": line})
        pipe.execute()

    def events(self, match_id: str, after: str = "-") -> list[tuple[str, str]]:
        """(entry id, line) of the match's event log after entry ``after`` (``-``: from the start)."""
        start = "-" if after == "-" else f"({after}"
        reply: Any = self.r.xrange(keys.events(match_id), start, "+")
        return [(keys.text(i), keys.text(f[b"line"])) for i, f in reply]


def public_lines(lines: Iterable[str], seats: set[int] | None) -> list[str]:
    """The transcript as ``seats`` may see it: refusals of other seats keep their seat, ply and code
    but lose the refused text and the referee's reason (``seats`` None: everything)."""
    out = []
    for line in lines:
        if seats is not None and '"refusal"' in line:
            event = json.loads(line)
            if event.get("type") == "refusal" and event.get("seat") not in seats:
                event = {k: v for k, v in event.items() if k not in ("action", "reason")}
                line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        out.append(line)
    return out


def _record(match_id: str, raw: dict[Any, Any]) -> dict[str, Any]:
    h = {keys.text(k): keys.text(v) for k, v in raw.items()}
    spec = json.loads(h.get("spec", "{}"))
    result = json.loads(h["result"]) if "result" in h else None
    return {
        "match_id": match_id,
        "game_id": spec.get("game_id", ""),
        "status": h.get("status", ""),
        "bot_names": [s["bot_name"] for s in spec.get("seats", [])],
        "rated": bool(spec.get("rated", False)),
        "priority": h.get("priority", ""),
        "enqueued_at": float(h.get("enqueued_at", 0)),
        "started_at": float(h.get("started_at", 0)),
        "finished_at": float(h.get("finished_at", 0)),
        "worker": h.get("worker", ""),
        "referee_address": h.get("address", ""),
        "seed_sha256": spec.get("seed_sha256", ""),
        "time_control": spec.get("time_control"),
        "result": result,
    }


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
