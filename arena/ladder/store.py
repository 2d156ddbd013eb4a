"""The Redis-backed ladder: Elo rows per (game, bot, version), rating history, head-to-head counts and
a leaderboard, updated from the arena's results exactly once.

Where the numbers come from: every finished match has one entry in the stream ``keys.results()`` and
its result (JSON) in ``keys.match(match_id)``. The ladder applies them **in stream order**, both
incrementally and in ``rebuild``, so a rebuild gives exactly the numbers the increments gave (the
arithmetic is the same Python code, ``arena.ladder.elo``, on the same floats: rows are stored as JSON, which
round-trips a float exactly).

Exactly once, atomically (the choice): each application is one optimistic transaction on its game,
``WATCH`` of the game's state key, reads, ``MULTI``/``EXEC`` of every write plus a bump of that state
key and the match id added to the game's applied set. Two processes applying the same match: one
``EXEC`` wins, the other fails, retries and finds the match applied. The rating arithmetic stays in
Python (one implementation shared with ``rebuild`` and the simulations) instead of a Lua copy of it;
contention is per game and a retry costs a few round trips.

Order: ``sync`` applies the stream's entries after the ladder's cursor (``keys.ladder_cursor()``) one
by one in stream order, then moves the cursor forward (never back). Several ladder processes may sync
at once: each goes through the same entries in the same order and an entry is applied (by whoever
wins) before anyone applies a later one, so the order is the stream's whatever the interleaving.
``consume`` reads the stream through the consumer group ``ladder``: an entry it is handed means
"sync up to here", it is acknowledged after that, and a restart re-reads its pending entries first
(sync is idempotent), so a crash loses nothing and applies nothing twice.

``rebuild`` holds a per-game lock (appliers wait while it is set), replays every result of the game
from the stream through ``elo.Table`` and writes the game's ladder anew.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from arena import keys
from arena.ladder import elo
from arena.ladder.elo import BotKey, Row

REBUILD_LOCK_MS = 10 * 60 * 1000
_CHUNK = 5_000

_ADVANCE = """
local cur = redis.call('GET', KEYS[1])
if cur then
  local cm, cs = string.match(cur, '^(%d+)-(%d+)$')
  local nm, ns = string.match(ARGV[1], '^(%d+)-(%d+)$')
  cm, cs, nm, ns = tonumber(cm), tonumber(cs), tonumber(nm), tonumber(ns)
  if nm < cm or (nm == cm and ns <= cs) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RebuildRunningError(RuntimeError):
    """Another rebuild of the same game holds the lock."""


def member(key: BotKey) -> str:
    """A bot version as a Redis member/field: JSON ``["name","version"]``, unambiguous for any names."""
    return json.dumps(list(key), separators=(",", ":"))


def unmember(value: str | bytes) -> BotKey:
    name, version = json.loads(value)
    return (str(name), str(version))


def _h2h_field(a: BotKey, b: BotKey) -> str:
    return json.dumps([a[0], a[1], b[0], b[1]], separators=(",", ":"))


def _point(finished_at: float, rating: float, match_id: str) -> str:
    return json.dumps([finished_at, rating, match_id], separators=(",", ":"))


@dataclass(frozen=True)
class Standing:
    rank: int
    row: Row


@dataclass(frozen=True)
class HistoryPoint:
    finished_at: float
    rating: float
    match_id: str


@dataclass(frozen=True)
class HeadToHead:
    """Pairwise record of two bot versions on one ladder (every pair of seats of every match)."""

    a: BotKey
    b: BotKey
    a_wins: int
    draws: int
    b_wins: int


class Ladder:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._advance = client.register_script(_ADVANCE)
        self._release = client.register_script(_RELEASE)

    # ------------------------------------------------------------------------------ applying

    def apply(self, result: Mapping[str, Any]) -> bool:
        """Apply one stored result to its game's ladder, exactly once per match id.

        True when this call applied it; False when it does not count (aborted, unrated) or was applied
        before. Call it in stream order (``sync`` and ``consume`` do) so that ``rebuild`` agrees.
        """
        if not elo.counts(result):
            return False
        game_id = str(result["game_id"])
        match_id = str(result["match_id"])
        bots = list(dict.fromkeys(elo.seat_key(s) for s in result["seats"]))
        state, lock, applied = (
            keys.ladder_state(game_id),
            keys.ladder_rebuild_lock(game_id),
            keys.ladder_applied(game_id),
        )
        with self.r.pipeline() as pipe:
            p: Any = pipe
            while True:
                try:
                    p.watch(state, lock)
                    if p.exists(lock):
                        p.unwatch()
                        time.sleep(0.05)
                        continue
                    if p.sismember(applied, match_id):
                        return False
                    before, new = self._rows_before(p, game_id, bots)
                    update = elo.rate(result, before)
                    fields = [_h2h_field(*sorted((pair.a, pair.b))) for pair in update.pairs]
                    old_h2h = p.hmget(keys.ladder_h2h(game_id), fields) if fields else []
                    h2h: dict[str, list[int]] = {}
                    for f, raw, pair in zip(fields, old_h2h, update.pairs, strict=True):
                        c = h2h.get(f) or (json.loads(raw) if raw else [0, 0, 0])
                        s = pair.score if pair.a < pair.b else 1.0 - pair.score
                        c[0 if s == 1.0 else 1 if s == 0.5 else 2] += 1
                        h2h[f] = c
                    p.multi()
                    self._write_update(p, game_id, update, new)
                    if h2h:
                        p.hset(keys.ladder_h2h(game_id), mapping={f: json.dumps(c) for f, c in h2h.items()})
                    p.sadd(applied, match_id)
                    p.sadd(keys.ladder_games(), game_id)
                    p.hincrby(state, "seq", 1)
                    p.execute()
                    return True
                except redis.WatchError:
                    continue

    def _rows_before(self, p: Any, game_id: str, bots: list[BotKey]) -> tuple[dict[BotKey, Row], set[BotKey]]:
        """The current rows of ``bots``; new versions start from their predecessor's rating."""
        raw = p.hmget(keys.ladder_rows(game_id), [member(b) for b in bots])
        before = {b: Row.from_dict(json.loads(v)) for b, v in zip(bots, raw, strict=True) if v}
        new = {b for b in bots if b not in before}
        if new:
            names = sorted({b[0] for b in new})
            latest = dict(zip(names, p.hmget(keys.ladder_latest(game_id), names), strict=True))
            for b in new:
                prev = latest[b[0]]
                pred = p.hget(keys.ladder_rows(game_id), member((b[0], keys.text(prev)))) if prev else None
                before[b] = elo.new_row(b[0], b[1], Row.from_dict(json.loads(pred)) if pred else None)
        return before, new

    @staticmethod
    def _write_update(p: Any, game_id: str, update: elo.Update, new: set[BotKey]) -> None:
        p.hset(keys.ladder_rows(game_id), mapping={member(k): json.dumps(r.to_dict()) for k, r in update.rows.items()})
        p.zadd(keys.ladder_board(game_id), {member(k): r.rating for k, r in update.rows.items()})
        for k, r in update.rows.items():
            p.rpush(keys.ladder_history(game_id, member(k)), _point(update.finished_at, r.rating, update.match_id))
        for k in update.rows:  # a new version becomes its name's latest (in seat order, as elo.Table does)
            if k in new:
                p.hset(keys.ladder_latest(game_id), k[0], k[1])

    def sync(self, until: str | None = None, batch: int = 500) -> int:
        """Apply every stream entry after the cursor (up to ``until``, inclusive) in stream order."""
        applied = 0
        while True:
            cursor = keys.text(self.r.get(keys.ladder_cursor()) or b"0-0")
            entries: Any = self.r.xrange(keys.results(), min=f"({cursor}", max=until or "+", count=batch)
            if not entries:
                return applied
            for result in self._results(entries):
                if result is not None:
                    applied += self.apply(result)
            self._advance(keys=[keys.ladder_cursor()], args=[keys.text(entries[-1][0])])

    def _results(self, entries: list[Any]) -> list[dict[str, Any] | None]:
        with self.r.pipeline(transaction=False) as p:
            for _, fields in entries:
                p.hget(keys.match(keys.text(fields[b"match_id"])), "result")
            raws = p.execute()
        return [json.loads(raw) if raw else None for raw in raws]

    def consume(
        self, consumer: str, *, block_ms: int = 5_000, burst: bool = False, stop: Callable[[], bool] | None = None
    ) -> int:
        """Apply results as they arrive, through the consumer group ``ladder``; returns how many applied.

        Pending entries of this consumer (a restart) come first, then entries left by consumers idle for
        a minute, then new ones. ``burst`` returns once nothing new is waiting (tests, catch-up runs).
        """
        stream, group = keys.results(), keys.LADDER_GROUP
        try:
            self.r.xgroup_create(stream, group, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise
        applied = 0
        claimed: Any = self.r.xautoclaim(stream, group, consumer, 60_000, "0-0", count=1000)
        if claimed[1]:
            applied += self.sync(until=keys.text(claimed[1][-1][0]))
            self.r.xack(stream, group, *[e[0] for e in claimed[1]])
        start = "0"
        while stop is None or not stop():
            reply: Any = self.r.xreadgroup(
                group, consumer, {stream: start}, count=500, block=None if start == "0" or burst else block_ms
            )
            entries = reply[0][1] if reply else []
            if not entries:
                if start == "0":
                    start = ">"
                    continue
                if burst:
                    break
                continue
            applied += self.sync(until=keys.text(entries[-1][0]))
            self.r.xack(stream, group, *[e[0] for e in entries])
        return applied

    # ------------------------------------------------------------------------------ rebuild

    def stored_results(self, game_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every stored result in stream order (of one game, if given)."""
        last = "-"
        while True:
            entries: Any = self.r.xrange(keys.results(), min=last, max="+", count=_CHUNK)
            if not entries:
                return
            for result in self._results(entries):
                if result is not None and (game_id is None or result.get("game_id") == game_id):
                    yield result
            last = f"({keys.text(entries[-1][0])}"

    def rebuild(self, game_id: str) -> int:
        """Recompute the game's ladder from every stored result, in stream order; returns how many counted."""
        token = uuid.uuid4().hex
        lock = keys.ladder_rebuild_lock(game_id)
        if not self.r.set(lock, token, nx=True, px=REBUILD_LOCK_MS):
            raise RebuildRunningError(f"a rebuild of {game_id!r} is running")
        try:
            table = elo.Table()
            counted = table.apply_all(self.stored_results(game_id))
            self._replace(game_id, table)
            return counted
        finally:
            self._release(keys=[lock], args=[token])

    def _replace(self, game_id: str, table: elo.Table) -> None:
        old = [keys.text(m) for m in self.r.hkeys(keys.ladder_rows(game_id))]
        rows = table.rows.get(game_id, {})
        history = table.history.get(game_id, {})
        with self.r.pipeline(transaction=False) as pipe:
            p: Any = pipe
            doomed = [keys.ladder_history(game_id, m) for m in old]
            doomed += [keys.ladder_rows(game_id), keys.ladder_board(game_id), keys.ladder_latest(game_id)]
            doomed += [keys.ladder_h2h(game_id), keys.ladder_applied(game_id)]
            for i in range(0, len(doomed), _CHUNK):
                p.delete(*doomed[i : i + _CHUNK])
            p.execute()
            items = list(rows.items())
            for i in range(0, len(items), _CHUNK):
                chunk = items[i : i + _CHUNK]
                p.hset(keys.ladder_rows(game_id), mapping={member(k): json.dumps(r.to_dict()) for k, r in chunk})
                p.zadd(keys.ladder_board(game_id), {member(k): r.rating for k, r in chunk})
                p.execute()
            for k, points in history.items():
                for i in range(0, len(points), _CHUNK):
                    p.rpush(keys.ladder_history(game_id, member(k)), *[_point(*pt) for pt in points[i : i + _CHUNK]])
                p.execute()
            latest = table.latest.get(game_id, {})
            if latest:
                p.hset(keys.ladder_latest(game_id), mapping=latest)
            h2h = list(table.h2h.get(game_id, {}).items())
            for i in range(0, len(h2h), _CHUNK):
                p.hset(
                    keys.ladder_h2h(game_id),
                    mapping={_h2h_field(a, b): json.dumps(c) for (a, b), c in h2h[i : i + _CHUNK]},
                )
            applied = sorted(table.applied)
            for i in range(0, len(applied), _CHUNK):
                p.sadd(keys.ladder_applied(game_id), *applied[i : i + _CHUNK])
            if rows:
                p.sadd(keys.ladder_games(), game_id)
            p.hincrby(keys.ladder_state(game_id), "seq", 1)
            p.execute()

    # ------------------------------------------------------------------------------ queries

    def games(self) -> list[str]:
        return sorted(keys.text(g) for g in self.r.smembers(keys.ladder_games()))

    def leaderboard(self, game_id: str, limit: int | None = None, offset: int = 0) -> list[Standing]:
        """Best first, from the sorted set; ``limit`` rows from place ``offset + 1``."""
        end = -1 if limit is None else offset + limit - 1
        members: Any = self.r.zrevrange(keys.ladder_board(game_id), offset, end)
        if not members:
            return []
        raw = self.r.hmget(keys.ladder_rows(game_id), members)
        return [Standing(offset + i + 1, Row.from_dict(json.loads(v))) for i, v in enumerate(raw) if v]

    def size(self, game_id: str) -> int:
        return int(self.r.zcard(keys.ladder_board(game_id)))

    def row(self, game_id: str, name: str, version: str) -> Row | None:
        raw = self.r.hget(keys.ladder_rows(game_id), member((name, version)))
        return Row.from_dict(json.loads(raw)) if raw else None

    def ratings(self, game_id: str) -> dict[BotKey, float]:
        """Every bot version's rating on this ladder."""
        board: Any = self.r.zrange(keys.ladder_board(game_id), 0, -1, withscores=True)
        return {unmember(m): float(s) for m, s in board}

    def versions(self, game_id: str, name: str) -> list[BotKey]:
        """The rated versions of one bot name on this ladder."""
        prefix = json.dumps([name])[:-1] + ","
        pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
        found = self.r.hscan_iter(keys.ladder_rows(game_id), match=pattern, count=1000)
        return sorted(unmember(m) for m, _ in found)

    def history(self, game_id: str, name: str, version: str | None = None) -> dict[BotKey, list[HistoryPoint]]:
        """Rating after each match, per version of ``name`` (one version if given)."""
        bots = [(name, version)] if version is not None else self.versions(game_id, name)
        out: dict[BotKey, list[HistoryPoint]] = {}
        for b in bots:
            points = self.r.lrange(keys.ladder_history(game_id, member(b)), 0, -1)
            if points:
                out[b] = [HistoryPoint(float(t), float(r), str(m)) for t, r, m in map(json.loads, points)]
        return out

    def h2h(self, game_id: str, name: str | None = None) -> list[HeadToHead]:
        """Pairwise records (of one bot name, if given), most games first."""
        out = []
        for f, v in self.r.hgetall(keys.ladder_h2h(game_id)).items():
            an, av, bn, bv = json.loads(f)
            if name is not None and name not in (an, bn):
                continue
            aw, d, bw = json.loads(v)
            out.append(HeadToHead((an, av), (bn, bv), int(aw), int(d), int(bw)))
        return sorted(out, key=lambda h: (-(h.a_wins + h.draws + h.b_wins), h.a, h.b))

    def snapshot(self, game_id: str) -> dict[str, Any]:
        """Everything the ladder holds for a game, as plain values (tests compare rebuild with increments)."""
        rows = {unmember(m): json.loads(v) for m, v in self.r.hgetall(keys.ladder_rows(game_id)).items()}
        board: Any = self.r.zrange(keys.ladder_board(game_id), 0, -1, withscores=True)
        return {
            "rows": rows,
            "board": {unmember(m): s for m, s in board},
            "latest": {keys.text(k): keys.text(v) for k, v in self.r.hgetall(keys.ladder_latest(game_id)).items()},
            "h2h": {keys.text(k): json.loads(v) for k, v in self.r.hgetall(keys.ladder_h2h(game_id)).items()},
            "history": {
                b: [keys.text(x) for x in self.r.lrange(keys.ladder_history(game_id, member(b)), 0, -1)] for b in rows
            },
            "applied": {keys.text(m) for m in self.r.smembers(keys.ladder_applied(game_id))},
        }
