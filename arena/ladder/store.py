"""The Redis-backed ladder: Elo rows per (game, bot, version), rating history, head-to-head counts and
a leaderboard, updated from the arena's results exactly once.

Where the numbers come from: every finished match has one entry in the stream ``keys.results()`` and
its result (JSON) in ``keys.match(match_id)``. The entry also carries the result's record (field
``keys.RESULT_RECORD``, ``arena.results``: the few values the rules read as a flat JSON list), written
with it by ``MatchQueue.complete``; the ladder reads that, and the match's whole result only for an entry
without one (stored before records existed: ``arena.results.record`` makes the same record of it, so there
is no migration and old and new entries may be mixed). The ladder applies them **in stream order**, both
incrementally and in ``rebuild``, so a rebuild gives exactly the numbers the increments gave: both run
the same Python code, ``arena.ladder.elo.Table.apply_records``, on the same floats (records and rows are
stored as JSON, which round-trips a float exactly).

Exactly once, atomically, a batch at a time (the choice): ``apply_batch`` applies a run of results (in
stream order) as one optimistic transaction. ``WATCH`` of each touched game's state key and rebuild lock;
then, on another connection, one read per game (``_SNAPSHOT``: which of the batch's match ids are in the
game's applied set, the rows, latest versions and head-to-head counts the batch touches, as one JSON
reply; one more round trip for the predecessors of new versions); then ``elo.Table`` seeded with those
applies the batch in memory, skipping what was applied; then one ``MULTI``/``EXEC`` writes every change,
adds the match ids to the applied set and bumps the state key. Any other change to the game's ladder
between the ``WATCH`` and the ``EXEC`` (another applier's ``EXEC``, a rebuild taking its lock) makes the
``EXEC`` fail: the batch is read again and what the other applied is skipped. So a match counts once
whoever applies it, and a batch costs a handful of round trips however long it is. ``apply`` is a batch of
one. The rating arithmetic stays in Python (one implementation shared with ``rebuild`` and the
simulations) instead of a Lua copy of it; Lua only moves values (reads, and long lists written as one
argument with a value a line, ``_BULK_WRITE``).

Order: ``sync`` applies the stream's entries after the ladder's cursor (``keys.ladder_cursor()``) a batch
at a time in stream order, then moves the cursor forward (never back). Several ladder processes may sync
at once: each goes through the same entries in the same order, a transaction applies only entries after
everything applied so far (the cursor never passes an entry before it is applied), so the order is the
stream's whatever the interleaving. A crash between a batch's ``EXEC`` and the cursor's move loses nothing:
the next sync reads those entries again and finds them applied.
``consume`` reads the stream through the consumer group ``ladder``: an entry it is handed means
"sync up to here", it is acknowledged after that, and a restart re-reads its pending entries first
(sync is idempotent), so a crash loses nothing and applies nothing twice.

``rebuild`` holds a per-game lock (appliers wait while it is set), replays every result of the game
from the stream through ``elo.Table`` and writes the game's ladder anew. Reading and writing are bulk:
the records come 5,000 stream entries at a time from one Lua script (``_READ``: the game's records joined,
one ``json.loads`` a chunk), the next chunk asked for before this one is decoded so that Redis reads while
Python rates; the writes go in batches of about 50,000 values, each sent when Redis has answered the one
before.
"""

from __future__ import annotations

import gc
import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from arena import keys
from arena.ladder import elo, fit
from arena.ladder.elo import BotKey, Row
from arena.ladder.values import HeadToHead, HistoryPoint, Standing
from arena.redis_client import ReadScript, replicated, replicated_after
from arena.results import HEAD, SEAT, Record, counting_record, counts, game_prefix

REBUILD_LOCK_MS = 10 * 60 * 1000
_CHUNK = 5_000  # stream entries per read in rebuild
_BATCH = 1_000  # stream entries per transaction in sync
_BULK = 50_000  # values per bulk write in rebuild

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

_READ = """
-- KEYS[1]: the results stream; ARGV: XRANGE start, end, count; the match hash key prefix (keys.match(''));
-- the stream field of an entry's result record; how the records of one game begin ('' for every game).
-- Returns {last entry id, the entries' records in stream order, joined by commas 100 at a time}, or {} when
-- there are no entries. An entry stored with a record gives it (none if it is of another game); an older
-- entry gives its match's stored result (JSON) instead (none if its match has no result).
-- It names the match hashes itself (one Redis server, as the arena is deployed; not for Redis Cluster): the
-- client then neither sends every key nor parses a reply per entry.
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2], 'COUNT', ARGV[3])
local n = #entries
if n == 0 then return {} end
local prefix, field, game = ARGV[4], ARGV[5], ARGV[6]
local glen = #game
local out, part, m = {entries[n][1]}, {}, 0
for i = 1, n do
  local f, v, id = entries[i][2], false, false
  for j = 1, #f, 2 do
    if f[j] == field then
      v = f[j + 1]
      break
    elseif f[j] == 'match_id' then
      id = f[j + 1]
    end
  end
  if v then
    if glen > 0 and string.sub(v, 1, glen) ~= game then v = false end
  elseif id then
    v = redis.call('HGET', prefix .. id, 'result')
    if v == '' then v = false end
  end
  if v then
    m = m + 1
    part[m] = v
    if m == 100 then
      out[#out + 1] = table.concat(part, ',')
      m = 0
    end
  end
end
if m > 0 then out[#out + 1] = table.concat(part, ',', 1, m) end
return out
"""

_SNAPSHOT = """
-- KEYS: one game's rebuild lock, applied set, rows, latest versions and head-to-head hashes. ARGV[1]: JSON
-- [match ids, row members, bot names, head-to-head fields]. Returns JSON [locked, applied flags (1/0),
-- rows, latest versions, head-to-head counts] (false where absent): one reply to parse, not one per value.
local q = cjson.decode(ARGV[1])
local function each(cmd, key, xs)
  local out = {}
  for i = 1, #xs, 1000 do
    local part = redis.call(cmd, key, unpack(xs, i, math.min(i + 999, #xs)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end
return cjson.encode({
  redis.call('EXISTS', KEYS[1]),
  each('SMISMEMBER', KEYS[2], q[1]),
  each('HMGET', KEYS[3], q[2]),
  each('HMGET', KEYS[4], q[3]),
  each('HMGET', KEYS[5], q[4]),
})
"""

_TOP = """
-- KEYS: a game's board (sorted set) and rows (hash); ARGV: first and last place (ZREVRANGE indexes).
-- The rows at those places, best first, as one JSON array (null for a member without a row): one round
-- trip and one reply to decode.
local members = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for i = 1, #members, 1000 do
  local rows = redis.call('HMGET', KEYS[2], unpack(members, i, math.min(i + 999, #members)))
  for j = 1, #rows do out[#out + 1] = rows[j] or 'null' end
end
return '[' .. table.concat(out, ',') .. ']'
"""

_PAIRS = """#!lua flags=no-writes
-- KEYS: a game's head-to-head hash and one bot's index of its fields (keys.ladder_opponents). Returns JSON
-- [[fields...], [counts...]] of the pairs that have counts: one reply to decode, however many opponents.
local fields = redis.call('SMEMBERS', KEYS[2])
local fs, cs, n = {}, {}, 0
for i = 1, #fields, 1000 do
  local part = {unpack(fields, i, math.min(i + 999, #fields))}
  local counts = redis.call('HMGET', KEYS[1], unpack(part))
  for j = 1, #part do
    if counts[j] then
      n = n + 1
      fs[n], cs[n] = part[j], counts[j]
    end
  end
end
return '[[' .. table.concat(fs, ',') .. '],[' .. table.concat(cs, ',') .. ']]'
"""

_INDEXED = """
-- KEYS: a game's board and state. Queued in a batch's transaction before its first row: a board that does
-- not exist yet means the ladder starts now, with its per-bot indexes complete from the start.
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[2], 'indexed', '1') end
return 0
"""

_BULK_WRITE = """
-- KEYS[1]: a key; ARGV[1]: RPUSH, SADD or HSET; ARGV[2]: values, one a line; ARGV[3] (HSET): the
-- values paired with them, one a line. Runs the command 1,000 values at a time; returns how many lines.
local function split(s)
  local out, n, pos = {}, 0, 1
  while true do
    local e = string.find(s, '\\n', pos, true)
    n = n + 1
    if e then
      out[n] = string.sub(s, pos, e - 1)
      pos = e + 1
    else
      out[n] = string.sub(s, pos)
      return out, n
    end
  end
end
local xs, n = split(ARGV[2])
local ys = nil
if ARGV[3] then
  local m
  ys, m = split(ARGV[3])
  if m ~= n then return redis.error_reply('bulk write: ' .. n .. ' fields, ' .. m .. ' values') end
end
local buf, m = {}, 0
for i = 1, n do
  m = m + 1
  buf[m] = xs[i]
  if ys then
    m = m + 1
    buf[m] = ys[i]
  end
  if m >= 1000 then
    redis.call(ARGV[1], KEYS[1], unpack(buf, 1, m))
    m = 0
  end
end
if m > 0 then redis.call(ARGV[1], KEYS[1], unpack(buf, 1, m)) end
return n
"""

_PLAIN = json.JSONEncoder()  # what json.dumps(x) does
_repr = float.__repr__  # how json.dumps writes a finite float
_json_str: Callable[[str], str] = json.encoder.encode_basestring_ascii  # how json.dumps writes a str


def _by_name(versions: Iterable[BotKey]) -> dict[str, list[str]]:
    """Bot versions grouped by name: what ``keys.ladder_versions`` holds."""
    out: dict[str, list[str]] = {}
    for name, version in versions:
        out.setdefault(name, []).append(version)
    return out


def _pairs_by_name(pairs: Iterable[tuple[BotKey, BotKey, str]]) -> dict[str, list[str]]:
    """Head-to-head fields grouped by each name they hold: what ``keys.ladder_opponents`` holds."""
    out: dict[str, list[str]] = {}
    for a, b, field in pairs:
        out.setdefault(a[0], []).append(field)
        if b[0] != a[0]:
            out.setdefault(b[0], []).append(field)
    return out


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


def _pair_field(a: str, b: str) -> str:
    """``_h2h_field`` from the two versions' ``member``s (``["a","1"]`` and ``["b","2"]``: ``["a","1","b","2"]``)."""
    return a[:-1] + "," + b[1:]


def _point(finished_at: float, rating: float, match_id: str) -> str:
    return json.dumps([finished_at, rating, match_id], separators=(",", ":"))


def _lines(values: Sequence[str]) -> str | None:
    """``values`` one a line, or None if one of them holds a line break itself."""
    text = "\n".join(values)
    return text if text.count("\n") == len(values) - 1 else None


def _point_lines(points: Sequence[tuple[float, float, str]]) -> str:
    """``_point`` of each history point, one a line (a point's JSON never holds a line break)."""
    text = "\n".join([f"[{_repr(t)},{_repr(r)},{_json_str(m)}]" for t, r, m in points])
    if "inf" in text or "nan" in text:  # json.dumps writes Infinity and NaN (or an "inf" in a match id)
        text = "\n".join(_point(*p) for p in points)
    return text


class _PointText:
    """``_point`` text of a game's history points, one a line, from a Table's compact history: the parts of
    a point that are its match's (when it finished, its id) are encoded once per match, as a ``%`` format
    its rating fills (``%r``: ``repr``, as ``json.dumps`` writes a finite float). One format per point, made
    in C (``map``): a rebuild writes two points per result."""

    def __init__(self, matches: elo.Matches) -> None:
        self.matches = matches
        self.forms: list[str] = []  # '[finished_at,%r,"match_id"]' per match ('%' of the id doubled)

    def lines(self, points: elo.Points, start: int = 0, stop: int | None = None) -> str:
        m = self.matches
        done = len(self.forms)
        if done < len(m.match_id):
            self.forms += [f"[{_repr(t)},%r,{_json_str(i).replace('%', '%%')}]"
                           for t, i in zip(m.finished_at[done:], m.match_id[done:], strict=True)]  # fmt: skip
        ratings, matches = points.rating[start:stop], points.match[start:stop]
        text = "\n".join(map(str.__mod__, map(self.forms.__getitem__, matches), ratings))
        if "inf" in text or "nan" in text:  # json.dumps writes Infinity and NaN (or an "inf" in a match id)
            text = "\n".join(_point(m.finished_at[i], r, m.match_id[i]) for r, i in zip(ratings, matches, strict=True))
        return text


def _count_lines(counts: Iterable[Sequence[int]]) -> str:
    """``json.dumps`` of each head-to-head count ``[a_wins, draws, b_wins]``, one a line."""
    return _PLAIN.encode(list(counts))[1:-1].replace("], [", "]\n[")


def _json_list(texts: Iterable[str]) -> list[Any]:
    """Several JSON texts decoded in one call."""
    return list(json.loads("[" + ",".join(texts) + "]"))


def _fitted(value: bytes | str | None) -> fit.Fitted | None:
    """A stored fit value (``keys.ladder_fit``), None if there is none."""
    if value is None:
        return None
    rating, sd, games = json.loads(value)
    return fit.Fitted(float(rating), float(sd), int(games))


def _row_json(row: Row) -> str:
    return json.dumps(row.to_dict())


def _records(parts: Sequence[bytes | str], game_id: str | None = None) -> list[Record]:
    """What ``_READ`` sent (JSON texts joined by commas, in parts), decoded in one call, as the records of the
    results that count (of one game, if given): a stored record as it is, an older entry's whole result
    through ``counting_record``."""
    if not parts:
        return []
    if isinstance(parts[0], str):
        items = json.loads("[" + ",".join(parts) + "]")  # type: ignore[arg-type]
    else:
        items = json.loads(b"[" + b",".join(parts) + b"]")  # type: ignore[arg-type]
    recs = [x if type(x) is list else counting_record(x) if type(x) is dict else None for x in items]
    return [r for r in recs if r is not None and counts(r) and (game_id is None or r[0] == game_id)]


def _read_args(game_id: str | None) -> list[str]:
    """``_READ``'s arguments after the range: the match hash prefix, the record field, and how the records of
    ``game_id`` begin (``game_prefix``; '': every game)."""
    return [keys.match(""), keys.RESULT_RECORD, "" if game_id is None else game_prefix(game_id)]


def _as_record(result: Mapping[str, Any] | Record | None) -> Record | None:
    return result if result is None or isinstance(result, list) else counting_record(result)


@dataclass
class _Loaded:
    """What a batch read of one game's ladder, in a Table seeded with it, and the values as read."""

    table: elo.Table
    applied: set[str]
    latest: dict[str, str]
    h2h: dict[tuple[BotKey, BotKey], list[int]]


class _Pipe:
    """Commands sent now and their replies read later, on one connection of the client's pool: Redis works
    on one batch while this process prepares the next (and no thread competes for the GIL). ``send`` a
    batch, ``replies`` reads every reply not read yet (an error reply raises); leaving with replies unread
    drops the connection rather than give it back to the pool."""

    def __init__(self, client: redis.Redis) -> None:
        self.pool = client.connection_pool
        try:
            self.conn: Any = self.pool.get_connection()
        except TypeError:  # redis-py before 5.3 wants a command name
            self.conn = self.pool.get_connection("_")
        self.pending = 0

    def send(self, commands: Sequence[Sequence[Any]]) -> None:
        if commands:
            self.conn.send_packed_command(self.conn.pack_commands(commands))
            self.pending += len(commands)

    def replies(self) -> list[Any]:
        out = []
        while self.pending:
            self.pending -= 1
            out.append(self.conn.read_response())
        return out

    def __enter__(self) -> _Pipe:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pending or exc[0] is not None:
            self.conn.disconnect()
        self.pool.release(self.conn)


class _Writer:
    """Bulk writes for ``rebuild``: commands gathered into batches of about ``values`` values; a batch is sent
    once Redis has answered the one before, so Redis writes one while the caller encodes the next."""

    def __init__(self, pipe: _Pipe, values: int | None = None) -> None:
        self.pipe = pipe
        self.values = values or _BULK
        self.commands: list[tuple[Any, ...]] = []
        self.queued = 0

    def add(self, values: int, *command: Any) -> None:
        self.commands.append(command)
        self.queued += values
        if self.queued >= self.values:
            self.flush()

    def flush(self) -> None:
        self.pipe.replies()
        self.pipe.send(self.commands)
        self.commands, self.queued = [], 0


class Ladder:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._advance = client.register_script(_ADVANCE)
        self._release = client.register_script(_RELEASE)
        self._read_script = client.register_script(_READ)
        self._bulk = client.register_script(_BULK_WRITE)
        self._snapshot = client.register_script(_SNAPSHOT)
        self._top = ReadScript(client, _TOP)
        self._indexed = client.register_script(_INDEXED)
        self._pairs = ReadScript(client, _PAIRS)

    # ------------------------------------------------------------------------------ applying

    def apply(self, result: Mapping[str, Any] | Record) -> bool:
        """Apply one stored result (or its record) to its game's ladder, exactly once per match id.

        True when this call applied it; False when it does not count (aborted, unrated) or was applied
        before. Call it in stream order (``sync`` and ``consume`` do) so that ``rebuild`` agrees.
        """
        return self.apply_batch([result]) == 1

    def apply_batch(self, results: Iterable[Mapping[str, Any] | Record | None]) -> int:
        """Apply stored results (or their records, ``arena.results.record``), in the order given (stream
        order), in one transaction; each exactly once per match id. Returns how many this call applied (not
        counting ones, ones applied before and None are skipped). The transaction waits while a rebuild of one
        of the games runs."""
        return self._apply_records([rec for rec in map(_as_record, results) if rec is not None])

    def _apply_records(self, records: Iterable[Record]) -> int:
        """``apply_batch`` on records."""
        by_game: dict[str, list[Record]] = {}
        for rec in records:
            if counts(rec):
                by_game.setdefault(rec[0], []).append(rec)
        if not by_game:
            return 0
        watched = [k for g in sorted(by_game) for k in (keys.ladder_state(g), keys.ladder_rebuild_lock(g))]
        with self.r.pipeline() as pipe:
            p: Any = pipe
            while True:
                try:
                    p.watch(*watched)
                    loaded = self._load(by_game)  # another connection, after the WATCH: a change since fails EXEC
                    if loaded is None:  # a rebuild holds a lock
                        p.unwatch()
                        time.sleep(0.05)
                        continue
                    applied = {g: loaded[g].table.apply_records(by_game[g]) for g in by_game}
                    if not any(applied.values()):
                        p.unwatch()
                        # applied before, maybe by a call that then failed its WAIT: replicated now?
                        replicated(self.r, lambda _: None, "a ladder batch applied before")
                        return 0
                    p.multi()
                    for g, n in applied.items():
                        if n:
                            self._write_batch(p, g, loaded[g], n)
                    p.info("server")  # which server ran it, for the WAIT
                    replies = p.execute()
                    replicated_after(self.r, replies[-1]["run_id"], "a ladder batch")
                    return sum(applied.values())
                except redis.WatchError:
                    continue

    def _load(self, by_game: Mapping[str, Sequence[Record]]) -> dict[str, _Loaded] | None:
        """The part of each game's ladder the batch touches, one ``_SNAPSHOT`` a game (and one more round trip
        when new versions need their predecessors' rows); None while a rebuild holds one of the games' locks."""
        out: dict[str, _Loaded] = {}
        preds: list[tuple[str, BotKey]] = []
        for g, results in by_game.items():
            bots: dict[BotKey, None] = {}
            pairs: dict[tuple[BotKey, BotKey], None] = {}
            mids = []
            for rec in results:
                mids.append(rec[1])
                seat_bots = [(rec[i], rec[i + 1]) for i in range(HEAD, len(rec), SEAT)]
                for i, a in enumerate(seat_bots):
                    bots[a] = None
                    for b in seat_bots[i + 1 :]:
                        if a != b:
                            pairs[(a, b) if a < b else (b, a)] = None
            names = list(dict.fromkeys(b[0] for b in bots))
            members = {b: member(b) for b in bots}
            fields = [_pair_field(members[a], members[b]) for a, b in pairs]
            snapshot_keys = [keys.ladder_rebuild_lock(g), keys.ladder_applied(g), keys.ladder_rows(g),
                             keys.ladder_latest(g), keys.ladder_h2h(g)]  # fmt: skip
            reply: Any = self._snapshot(
                keys=snapshot_keys, args=[json.dumps([mids, list(members.values()), names, fields], ensure_ascii=False)]
            )
            locked, *lists = json.loads(reply)
            if locked:
                return None
            flags, rows, latest, h2h = (x if isinstance(x, list) else [] for x in lists)  # Lua's empty table: {}
            present = [(b, v) for b, v in zip(bots, rows, strict=True) if v]
            found = {b: Row.from_dict(d) for (b, _), d in zip(present, _json_list(v for _, v in present), strict=True)}
            latest_now = {name: str(v) for name, v in zip(names, latest, strict=True) if v is not False}
            known = [(pair, v) for pair, v in zip(pairs, h2h, strict=True) if v]
            counts = dict(zip([pair for pair, _ in known], _json_list(v for _, v in known), strict=True))
            for b in bots:  # a new version starts from its name's latest version's row
                if b not in found and b[0] in latest_now and (b[0], latest_now[b[0]]) not in found:
                    preds.append((g, (b[0], latest_now[b[0]])))
            table = elo.Table()
            applied = {mid for mid, flag in zip(mids, flags, strict=True) if flag}
            table.load(g, found.values(), latest_now, counts, applied)
            out[g] = _Loaded(table, applied, latest_now, counts)
        if preds:
            preds = list(dict.fromkeys(preds))
            with self.r.pipeline(transaction=False) as pipe:
                q: Any = pipe
                for g, key in preds:
                    q.hget(keys.ladder_rows(g), member(key))
                for (g, _), raw in zip(preds, q.execute(), strict=True):
                    if raw:
                        out[g].table.load(g, [Row.from_dict(json.loads(raw))])
        return out

    def _write_batch(self, p: Any, game_id: str, loaded: _Loaded, applied: int) -> None:
        """Queue (in the transaction) every change the batch made to one game's ladder."""
        table = loaded.table
        history, matches = table.points(game_id)
        encode = _PointText(matches)
        members = {k: member(k) for k in table.rows.get(game_id, {})}
        moved = {k: table.row(game_id, k) for k in history}
        self._indexed(keys=[keys.ladder_board(game_id), keys.ladder_state(game_id)], client=p)
        p.hset(keys.ladder_rows(game_id), mapping={members[k]: _row_json(r) for k, r in moved.items()})
        p.zadd(keys.ladder_board(game_id), {members[k]: r.rating for k, r in moved.items()})
        for k, points in history.items():
            n = len(points.rating)
            self._lines(p, keys.ladder_history(game_id, members[k]), "RPUSH", encode.lines(points), n)
        latest = {n: v for n, v in table.latest.get(game_id, {}).items() if loaded.latest.get(n) != v}
        if latest:  # new versions became their names' latest
            p.hset(keys.ladder_latest(game_id), mapping=latest)
        h2h = [(pair, c) for pair, c in table.h2h.get(game_id, {}).items() if loaded.h2h.get(pair) != c]
        if h2h:
            fields = "\n".join([_pair_field(members[a], members[b]) for (a, b), _ in h2h])  # JSON: no line breaks
            self._lines(p, keys.ladder_h2h(game_id), "HSET", fields, len(h2h), _count_lines(c for _, c in h2h))
        # the per-bot indexes (SADD: what is there already stays once)
        for name, versions in _by_name(moved).items():
            p.sadd(keys.ladder_versions(game_id, name), *versions)
        for name, pairs in _pairs_by_name((a, b, _pair_field(members[a], members[b])) for (a, b), _ in h2h).items():
            p.sadd(keys.ladder_opponents(game_id, name), *pairs)
        ids = list(table.applied - loaded.applied)
        text = _lines(ids)
        if text is None:  # a line break in a match id: as arguments
            p.sadd(keys.ladder_applied(game_id), *ids)
        else:
            self._lines(p, keys.ladder_applied(game_id), "SADD", text, len(ids))
        p.sadd(keys.ladder_games(), game_id)
        p.hincrby(keys.ladder_state(game_id), "seq", applied)

    def _lines(self, p: Any, key: str, command: str, values: str, n: int, paired: str | None = None) -> None:
        """Queue ``command key`` with ``values`` (one a line; HSET: each with its line of ``paired``): as
        arguments when they are few, else through ``_BULK_WRITE`` (one argument to pack, not thousands)."""
        if n > 8:
            self._bulk(keys=[key], args=[command, values] + ([paired] if paired is not None else []), client=p)
        elif paired is None:
            p.execute_command(command, key, *values.split("\n"))
        else:
            p.execute_command(
                command, key, *[x for pair in zip(values.split("\n"), paired.split("\n"), strict=True) for x in pair]
            )

    def sync(self, until: str | None = None, batch: int = _BATCH) -> int:
        """Apply every stream entry after the cursor (up to ``until``, inclusive) in stream order, ``batch``
        entries to a transaction; returns how many this call applied."""
        applied = 0
        while True:
            cursor = keys.text(self.r.get(keys.ladder_cursor()) or b"0-0")
            last, records = self._read(f"({cursor}", until or "+", batch)
            if last is None:
                return applied
            applied += self._apply_records(records)
            self._advance(keys=[keys.ladder_cursor()], args=[last])

    def _read(self, start: str, end: str, count: int) -> tuple[str | None, list[Record]]:
        """Up to ``count`` stream entries from ``start`` to ``end``: the last one's id (None: no entries) and
        the records of those that count, in stream order."""
        reply: Any = self._read_script(keys=[keys.results()], args=[start, end, count, *_read_args(None)])
        return (keys.text(reply[0]), _records(reply[1:])) if reply else (None, [])

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
                group, consumer, {stream: start}, count=_BATCH, block=None if start == "0" or burst else block_ms
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

    def stored_records(self, game_id: str | None = None) -> Iterator[Record]:
        """The record (``arena.results.record``) of every stored result that counts, in stream order (of one
        game, if given)."""
        for chunk in self._stored_chunks(game_id):
            yield from chunk

    def _stored_chunks(self, game_id: str | None) -> Iterator[list[Record]]:
        """``stored_records`` 5,000 stream entries at a time. The next 5,000 are asked for before these are
        decoded, so Redis reads them meanwhile."""
        sha = self.r.script_load(_READ)
        args = _read_args(game_id)

        def read(start: str) -> tuple[Any, ...]:
            return ("EVALSHA", sha, 1, keys.results(), start, "+", _CHUNK, *args)

        with _Pipe(self.r) as pipe:
            pipe.send([read("-")])
            while True:
                (reply,) = pipe.replies()
                if not reply:
                    return
                pipe.send([read(f"({keys.text(reply[0])}")])
                yield _records(reply[1:], game_id)

    def rebuild(self, game_id: str) -> int:
        """Recompute the game's ladder from every stored result, in stream order; returns how many counted."""
        token = uuid.uuid4().hex
        lock = keys.ladder_rebuild_lock(game_id)
        if not self.r.set(lock, token, nx=True, px=REBUILD_LOCK_MS):
            raise RebuildRunningError(f"a rebuild of {game_id!r} is running")
        collect = gc.isenabled()
        gc.disable()  # millions of acyclic objects made and dropped: the cyclic collector would only walk them
        try:
            table = elo.Table()
            counted = sum(table.apply_records(chunk) for chunk in self._stored_chunks(game_id))
            self._replace(game_id, table)
            del table  # freed by reference counting, before the collector is back
            return counted
        finally:
            if collect:
                gc.enable()
            self._release(keys=[lock], args=[token])

    def _replace(self, game_id: str, table: elo.Table) -> None:
        """Write the game's ladder anew from ``table``, in batches that Redis writes while the next is encoded;
        lists, sets and the head-to-head hash through ``_BULK_WRITE`` (values one a line)."""
        old = [keys.text(m) for m in self.r.hkeys(keys.ladder_rows(game_id))]
        old_names = {unmember(m)[0] for m in old}
        rows = table.rows.get(game_id, {})
        history, matches = table.points(game_id)
        encode = _PointText(matches)
        members = {k: member(k) for k in rows}
        bulk = self.r.script_load(_BULK_WRITE)
        with _Pipe(self.r) as pipe:
            w = _Writer(pipe)
            doomed = [keys.ladder_history(game_id, m) for m in old]
            doomed += [keys.ladder_versions(game_id, n) for n in old_names]
            doomed += [keys.ladder_opponents(game_id, n) for n in old_names]
            doomed += [keys.ladder_rows(game_id), keys.ladder_board(game_id), keys.ladder_latest(game_id)]
            doomed += [keys.ladder_h2h(game_id), keys.ladder_applied(game_id), keys.ladder_fit(game_id)]
            for i in range(0, len(doomed), _CHUNK):
                w.add(len(doomed[i : i + _CHUNK]), "UNLINK", *doomed[i : i + _CHUNK])  # freed in the background
            items = list(rows.items())
            for i in range(0, len(items), _CHUNK):
                chunk = items[i : i + _CHUNK]
                w.add(
                    len(chunk),
                    "HSET",
                    keys.ladder_rows(game_id),
                    *[x for k, r in chunk for x in (members[k], _row_json(r))],
                )
                w.add(
                    len(chunk),
                    "ZADD",
                    keys.ladder_board(game_id),
                    *[x for k, r in chunk for x in (r.rating, members[k])],
                )
            for k, points in history.items():
                n = len(points.rating)
                for i in range(0, n, _BULK):
                    lines = encode.lines(points, i, i + _BULK)
                    w.add(
                        min(n - i, _BULK), "EVALSHA", bulk, 1, keys.ladder_history(game_id, members[k]), "RPUSH", lines
                    )
            latest = table.latest.get(game_id, {})
            if latest:
                w.add(len(latest), "HSET", keys.ladder_latest(game_id), *[x for n, v in latest.items() for x in (n, v)])
            h2h = list(table.h2h.get(game_id, {}).items())
            for i in range(0, len(h2h), _BULK):
                counts = h2h[i : i + _BULK]
                fields = "\n".join([_pair_field(members[a], members[b]) for (a, b), _ in counts])  # JSON: one a line
                w.add(len(counts), "EVALSHA", bulk, 1, keys.ladder_h2h(game_id), "HSET", fields,
                      _count_lines(c for _, c in counts))  # fmt: skip
            applied = list(table.applied)
            for i in range(0, len(applied), _BULK):
                ids = applied[i : i + _BULK]
                text = _lines(ids)
                if text is None:  # a line break in a match id: as arguments
                    w.add(len(ids), "SADD", keys.ladder_applied(game_id), *ids)
                else:
                    w.add(len(ids), "EVALSHA", bulk, 1, keys.ladder_applied(game_id), "SADD", text)
            for name, versions in _by_name(rows).items():
                w.add(len(versions), "SADD", keys.ladder_versions(game_id, name), *versions)
            named = _pairs_by_name((a, b, _pair_field(members[a], members[b])) for (a, b), _ in h2h)
            for name, pairs in named.items():
                for i in range(0, len(pairs), _BULK):  # fields are JSON: one a line
                    part = pairs[i : i + _BULK]
                    w.add(len(part), "EVALSHA", bulk, 1, keys.ladder_opponents(game_id, name), "SADD", "\n".join(part))
            if rows:
                w.add(1, "SADD", keys.ladder_games(), game_id)
            w.add(1, "HSET", keys.ladder_state(game_id), "indexed", "1")
            w.add(1, "HINCRBY", keys.ladder_state(game_id), "seq", 1)
            w.flush()
            pipe.replies()

    # ------------------------------------------------------------------------------ queries

    def games(self) -> list[str]:
        return sorted(keys.text(g) for g in self.r.smembers(keys.ladder_games()))

    def leaderboard(self, game_id: str, limit: int | None = None, offset: int = 0) -> list[Standing]:
        """Best first, from the sorted set; ``limit`` rows from place ``offset + 1``."""
        end = -1 if limit is None else offset + limit - 1
        raw: Any = self._top([keys.ladder_board(game_id), keys.ladder_rows(game_id)], [offset, end])
        rows = [(offset + i + 1, Row.from_dict(d)) for i, d in enumerate(json.loads(raw)) if d]
        if not rows:
            return []
        pipe = self.r.pipeline(transaction=False)
        for _, row in rows:
            pipe.hget(keys.bot(row.name), "owner")
        pipe.hmget(keys.ladder_fit(game_id), [member(row.key) for _, row in rows])
        *owners, fits = pipe.execute()
        return [Standing(rank, row, keys.text(o or ""), _fitted(f))
                for (rank, row), o, f in zip(rows, owners, fits, strict=True)]  # fmt: skip

    def size(self, game_id: str) -> int:
        return int(self.r.zcard(keys.ladder_board(game_id)))

    def row(self, game_id: str, name: str, version: str) -> Row | None:
        raw = self.r.hget(keys.ladder_rows(game_id), member((name, version)))
        return Row.from_dict(json.loads(raw)) if raw else None

    def rows(self, game_id: str) -> dict[BotKey, Row]:
        """Every bot version's row on this ladder (the scheduler's view: rating, games, information)."""
        values: Any = self.r.hvals(keys.ladder_rows(game_id))
        return {row.key: row for row in map(Row.from_dict, _json_list(keys.text(v) for v in values))}

    def ratings(self, game_id: str) -> dict[BotKey, float]:
        """Every bot version's rating on this ladder."""
        board: Any = self.r.zrange(keys.ladder_board(game_id), 0, -1, withscores=True)
        return {unmember(m): float(s) for m, s in board}

    # ------------------------------------------------------------------------------ the whole-history fit

    def refit(self, game_id: str) -> int:
        """Fit every result applied to the game's ladder (``arena.ladder.fit``) and store the fit
        (``keys.ladder_fit``) in place of the last one; returns how many results it fitted. The fit does not
        depend on the order of the results, so a live ladder and a rebuild that applied the same results
        store the same numbers. Reads the game's whole stream, so it is not part of ``rebuild`` (which drops
        the old fit; ``arena ladder rebuild`` calls this after it): ``arena ladder run`` calls it at start
        and now and then (``LadderRunner.fit_every_s``)."""
        applied = {keys.text(m) for m in self.r.smembers(keys.ladder_applied(game_id))}
        records = []
        for rec in self.stored_records(game_id):
            if rec[1] in applied:
                applied.discard(rec[1])  # a match id stored twice counts once, as on the ladder
                records.append(rec)
        fitted = fit.fit_records(records)
        values = [x for k, f in fitted.items() for x in (member(k), json.dumps([f.rating, f.sd, f.games]))]
        p = self.r.pipeline(transaction=True)
        p.unlink(keys.ladder_fit(game_id))
        for i in range(0, len(values), 2 * _CHUNK):
            p.hset(keys.ladder_fit(game_id), items=values[i : i + 2 * _CHUNK])
        p.hset(keys.ladder_fit(game_id), mapping={"results": len(records), "fitted_at": repr(time.time())})
        p.execute()
        return len(records)

    def fitted(self, game_id: str) -> dict[BotKey, fit.Fitted]:
        """The stored fit of every bot version in it (empty before the first ``refit``)."""
        out = {}
        for f, v in self.r.hgetall(keys.ladder_fit(game_id)).items():
            field = keys.text(f)
            if field.startswith("["):
                out[unmember(field)] = _fitted(v)
        return {k: f for k, f in out.items() if f is not None}

    def indexed(self, game_id: str) -> bool:
        """Whether the per-bot indexes (``keys.ladder_versions``, ``keys.ladder_opponents``) are complete: a
        ladder begun or rebuilt since they exist. One stored before gets them from ``arena ladder rebuild``;
        until then the queries below scan."""
        return self.r.hget(keys.ladder_state(game_id), "indexed") is not None

    def versions(self, game_id: str, name: str) -> list[BotKey]:
        """The rated versions of one bot name on this ladder: from its index, else a scan of every row."""
        if self.indexed(game_id):
            return sorted((name, keys.text(v)) for v in self.r.smembers(keys.ladder_versions(game_id, name)))
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
                points_ = _json_list(keys.text(p) for p in points)  # one decode, not one a point
                out[b] = [HistoryPoint(float(t), float(r), str(m)) for t, r, m in points_]
        return out

    def h2h(self, game_id: str, name: str | None = None) -> list[HeadToHead]:
        """Pairwise records (of one bot name, if given: from its index when the ladder has it), most games
        first."""
        out = []
        if name is not None and self.indexed(game_id):
            raw: Any = self._pairs([keys.ladder_h2h(game_id), keys.ladder_opponents(game_id, name)])
            fields, counts_ = json.loads(raw)
            decoded = zip(fields, counts_, strict=True)
        else:
            pairs = [(keys.text(f), keys.text(v)) for f, v in self.r.hgetall(keys.ladder_h2h(game_id)).items()]
            decoded = zip(_json_list(f for f, _ in pairs), _json_list(v for _, v in pairs), strict=True)
        for (an, av, bn, bv), (aw, d, bw) in decoded:
            if name is not None and name not in (an, bn):
                continue
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
