"""The match queue: Redis Streams with one consumer group, one stream per priority.

- ``enqueue`` is idempotent by match id: a Lua script creates the match record and appends the
  stream entry only if the match does not exist yet, atomically.
- ``claim`` reads with XREADGROUP, higher priority first; the entry stays in the group's pending
  list (the worker's lease) until ``complete`` acknowledges it. A worker renews its lease with
  ``renew`` (XCLAIM, which also counts the renewal in the entry's delivery count); ``reclaim`` lets any
  worker take over entries whose lease ran out, e.g. from a worker killed with SIGKILL: entries it has
  watched go unrenewed for a lease by its own monotonic clock, never by Redis's idle times, which a
  jump of Redis's wall clock would make expire all at once (or never).
- ``complete`` records the result exactly once (a second delivery changes nothing).
- ``QueueCollector`` reads the queue's depth for the gateway's ``/metrics`` (``arena.metrics`` names the
  families).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

import redis
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from arena import keys
from arena.metrics import MATCHES_BY_STATE, QUEUE_DEPTH, REDIS_MAX, REDIS_USED, scrape_failed
from arena.redis_client import replicated
from arena.results import StoredResult
from referee import games
from referee.games import TimeControl
from referee.wire.values import MatchStatus


class Priority(StrEnum):
    """Queues are read in this order: requested matches before ladder matches."""

    REQUESTED = "requested"
    LADDER = "ladder"


PRIORITIES = (Priority.REQUESTED, Priority.LADDER)
LADDER_EVERY: Final = 4
"""One claim in this many reads the ladder's queue first (``MatchQueue.claim``)."""


class DuplicateMatchError(Exception):
    """A match with that id exists already; the queue is unchanged."""


class LeaseLostError(Exception):
    """Another worker holds the match now (this one's lease ran out): its result is not recorded."""


_ENQUEUE = f"""
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'spec', ARGV[1], 'status', '{MatchStatus.QUEUED}', 'priority', ARGV[2],
           'enqueued_at', ARGV[3])
redis.call('XADD', KEYS[2], '*', 'match_id', ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[3], ARGV[5]) end
for i = 4, #KEYS do redis.call('ZADD', KEYS[i], ARGV[3], ARGV[4]) end
return 1
"""

# KEYS: match, queue, results, transcript, events, finished index, seed, running set of each seated bot...
# ARGV: result, now, group, entry id, match id, transcript, worker, end reason, result record
# The event log and the seed go with the result: the transcript holds every line (FollowMatch of a finished
# match reads it) and its footer reveals the seed, so neither stays resident (about 20 KB a match).
_COMPLETE = f"""
if redis.call('HEXISTS', KEYS[1], 'result') == 1 then
  redis.call('XACK', KEYS[2], ARGV[3], ARGV[4])
  redis.call('XDEL', KEYS[2], ARGV[4])
  return 0
end
local p = redis.call('XPENDING', KEYS[2], ARGV[3], ARGV[4], ARGV[4], 1)
if ARGV[7] ~= '' and #p > 0 and p[1][2] ~= ARGV[7] then return -1 end
redis.call('HSET', KEYS[1], 'result', ARGV[1], 'status', '{MatchStatus.FINISHED}', 'finished_at', ARGV[2],
           'end_reason', ARGV[8])
if ARGV[6] ~= '' then redis.call('SET', KEYS[4], ARGV[6]) end
redis.call('DEL', KEYS[5], KEYS[7])
redis.call('ZADD', KEYS[6], ARGV[2], ARGV[5])
for i = 8, #KEYS do redis.call('SREM', KEYS[i], ARGV[5]) end
redis.call('XADD', KEYS[3], '*', 'match_id', ARGV[5], '{keys.RESULT_RECORD}', ARGV[9])
redis.call('XACK', KEYS[2], ARGV[3], ARGV[4])
redis.call('XDEL', KEYS[2], ARGV[4])
return 1
"""

# The lease check every write of a worker for a match starts with (fencing): the match's queue entry must
# still be pending for this worker, else the write is refused (-1) and nothing is changed.
# KEYS[1]: queue; ARGV[1..3]: group, entry id, worker
_HOLDS = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return -1 end
"""

# KEYS: queue, events; ARGV: group, entry id, worker, entries the log holds before this one (-1: unchecked),
# the lines joined by newlines. One entry (one XADD) per batch: a worker's flush carries 2 lines a match on
# average, and the XADDs were a third of every command Redis ran. The length check refuses (-2) a batch that
# would not follow the log's last: entries acknowledged by a primary that died before its replicas had them
# (a gap after a failover), or a retried batch that went in already.
_APPEND = (
    _HOLDS
    + f"""
if tonumber(ARGV[4]) >= 0 and redis.call('XLEN', KEYS[2]) ~= tonumber(ARGV[4]) then return -2 end
redis.call('XADD', KEYS[2], '*', '{keys.EVENT_LINES}', ARGV[5])
return 1
"""
)

# KEYS: queue, match, assignments; ARGV: group, entry id, worker, address, now, maxlen, then per seat
# (bot, running-set key, seat), after the match id and game id at ARGV[7], ARGV[8]
_ANNOUNCE = (
    _HOLDS
    + f"""
redis.call('HSET', KEYS[2], 'status', '{MatchStatus.RUNNING}', 'worker', ARGV[3], 'address', ARGV[4],
           'started_at', ARGV[5])
for i = 9, #ARGV, 3 do
  redis.call('SADD', ARGV[i + 1], ARGV[7])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'bot', ARGV[i], 'match_id', ARGV[7],
             'game_id', ARGV[8], 'seat', ARGV[i + 2], 'address', ARGV[4])
end
return 1
"""
)

# A renewal bumps the entry's delivery count: the counter watchers go by (``reclaim``), no clock involved.
_RENEW = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'RETRYCOUNT', p[1][4] + 1, 'JUSTID')
return 1
"""

# Take an entry over only if it is still held by the worker and at the renewal count that were watched.
# KEYS: queue; ARGV: group, entry id, old worker, its delivery count, new worker
_TAKEOVER = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] or p[1][4] ~= tonumber(ARGV[4]) then return false end
return redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[5], 0, ARGV[2])
"""

WATCH_AT_MOST: Final = 10_000  # pending entries a worker watches a priority (running matches, not queued ones)


@dataclass(frozen=True, slots=True)
class QueuedMatch:
    """A match as requested: made once where it is requested (``MatchStore.request``), stored as JSON
    in the match's record, read by the worker that runs it. Public: the seed is kept apart."""

    match_id: str
    game_id: str
    bot_names: tuple[str, ...]  # by seat
    time_control: TimeControl
    seed_sha256: str
    rated: bool = False
    requested_by: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "match_id": self.match_id,
                "game_id": self.game_id,
                "seats": [{"seat": i, "bot_name": name} for i, name in enumerate(self.bot_names)],
                "rated": self.rated,
                "time_control": self.time_control.to_dict(),
                "seed_sha256": self.seed_sha256,
                "requested_by": self.requested_by,
            }
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> QueuedMatch:
        d = json.loads(text)
        seats = sorted(d["seats"], key=lambda s: int(s["seat"]))
        tc = d.get("time_control")
        return cls(
            match_id=d["match_id"],
            game_id=d["game_id"],
            bot_names=tuple(s["bot_name"] for s in seats),
            time_control=TimeControl.from_dict(tc) if tc else games.time_control(d["game_id"]),
            seed_sha256=d.get("seed_sha256", ""),
            rated=bool(d.get("rated", False)),
            requested_by=d.get("requested_by", ""),
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """A match a worker holds a lease on."""

    match_id: str
    priority: Priority
    entry_id: str
    match: QueuedMatch
    seed: str = ""
    # when the claim's reply came, on this process's monotonic clock (the lease began no later): a worker
    # counts its lease from here by its own clock, which no jump of a wall clock moves
    leased_at: float = field(default_factory=time.monotonic, compare=False)


class MatchQueue:
    def __init__(self, client: redis.Redis, *, lease_ms: int = 15_000) -> None:
        self.r = client
        self.lease_ms = lease_ms
        self._claims = 0
        self._enqueue = client.register_script(_ENQUEUE)
        self._complete = client.register_script(_COMPLETE)
        self._renew = client.register_script(_RENEW)
        self._takeover = client.register_script(_TAKEOVER)
        # (stream, entry id) -> ((worker, delivery count), when this process first saw it so): see ``reclaim``
        self._watched: dict[tuple[str, str], tuple[tuple[str, int], float]] = {}
        # entries of other workers that Redis's idle times call expired, not yet taken over: a worker takes
        # no new work while there are any, so that orphans, whose bots wait, go first (see ``reclaim``)
        self.suspected = 0
        self._append = client.register_script(_APPEND)
        self._announce = client.register_script(_ANNOUNCE)
        for p in PRIORITIES:
            try:
                client.xgroup_create(keys.queue(p), keys.CONSUMER_GROUP, id="0", mkstream=True)
            except redis.ResponseError as e:
                if "BUSYGROUP" not in str(e):
                    raise

    def enqueue(self, match: QueuedMatch, priority: Priority = Priority.REQUESTED, *, seed: str = "") -> None:
        """Queue a match; DuplicateMatchError if the id is taken (nothing is changed then).

        The match is indexed by time, by game and by each seated bot. ``seed`` is kept apart from the
        match's record, which is public.
        """
        index = [keys.matches_by_time(), keys.matches_by_game(match.game_id)]
        index += [keys.matches_by_bot(b) for b in sorted(set(match.bot_names))]
        created = self._enqueue(
            keys=[keys.match(match.match_id), keys.queue(priority), keys.match_seed(match.match_id), *index],
            args=[match.to_json(), priority.value, f"{time.time():.6f}", match.match_id, seed],
        )
        if not created:
            raise DuplicateMatchError(f"match {match.match_id!r} already exists")

    def claim(self, worker: str, block_ms: int | None = None) -> Claim | None:
        """The next queued match, higher priority first, leased to ``worker``; None if none came. Every
        ``LADDER_EVERY``-th claim looks at the ladder first, so owners' requests cannot starve the ladder:
        with both queues full it still gets a share of the workers."""
        self._claims += 1
        order = PRIORITIES if self._claims % LADDER_EVERY else tuple(reversed(PRIORITIES))
        for p in order:
            claim = self._read(worker, {keys.queue(p): ">"}, None)
            if claim is not None:
                return claim
        if block_ms:
            return self._read(worker, {keys.queue(p): ">" for p in PRIORITIES}, block_ms)
        return None

    def _read(self, worker: str, streams: dict[Any, Any], block_ms: int | None) -> Claim | None:
        reply: Any = self.r.xreadgroup(keys.CONSUMER_GROUP, worker, streams, count=1, block=block_ms)
        for stream, entries in reply or []:
            for entry_id, fields in entries:
                return self._claimed(worker, keys.text(stream), keys.text(entry_id), keys.text(fields[b"match_id"]))
        return None

    def _claimed(self, worker: str, stream: str, entry_id: str, match_id: str) -> Claim:
        priority = Priority(stream.removeprefix(keys.queue("")))
        self.r.hset(keys.match(match_id), mapping={"status": MatchStatus.RUNNING, "worker": worker,
                                                   "claimed_at": time.time()})  # fmt: skip
        spec: Any = self.r.hget(keys.match(match_id), "spec")
        seed = self.r.get(keys.match_seed(match_id))
        return Claim(match_id, priority, entry_id, QueuedMatch.from_json(spec), "" if seed is None else keys.text(seed))

    def append_events(
        self, worker: str, batches: list[tuple[Claim, list[str]]], logged: Mapping[str, int] | None = None
    ) -> set[str]:
        """Append each claim's transcript lines to its match's event log as one entry, in one round trip,
        each only while ``worker`` still holds the claim's lease (fencing: a worker that lost a match,
        paused or cut off, can never fork its log) and, for a match in ``logged`` (match id -> the entries
        its log holds before this one), only right after them: a log that lost its last entries in a Redis
        failover, or holds a retried batch already, is never appended to with a gap or twice. Returns the
        match ids whose lines were refused so; their worker lets them go, and the takeover replays from
        the log.

        Sent as plain EVALSHAs: a pipeline of redis-py ``Script`` calls asks ``SCRIPT EXISTS`` first, a
        round trip and a command more for every flush. A Redis that does not have the script (restarted,
        failed over) answers NOSCRIPT to those, which are loaded and sent again (only those: they did
        nothing)."""
        replies: list[Any] = [None] * len(batches)
        todo = list(range(len(batches)))
        for attempt in range(2):
            pipe = self.r.pipeline(transaction=False)
            for i in todo:
                claim, lines = batches[i]
                before = (logged or {}).get(claim.match_id, -1)
                pipe.evalsha(self._append.sha, 2, keys.queue(claim.priority), keys.events(claim.match_id),
                             keys.CONSUMER_GROUP, claim.entry_id, worker, before, "\n".join(lines))  # fmt: skip
            for i, reply in zip(todo, pipe.execute(raise_on_error=False), strict=True):
                replies[i] = reply
            todo = [i for i in todo if isinstance(replies[i], redis.exceptions.NoScriptError)]
            if not todo or attempt:
                break
            self.r.script_load(_APPEND)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return {claim.match_id for (claim, _), n in zip(batches, replies, strict=True) if n in (-1, -2)}

    def announce(self, worker: str, claim: Claim, address: str, bots: tuple[str, ...], game_id: str,
                 maxlen: int) -> None:  # fmt: skip
        """Record where the match runs and tell each seated bot's session (the assignments stream), only
        while ``worker`` holds the lease: LeaseLostError otherwise (a worker that lost the match must not
        point its bots back to itself)."""
        seats: list[str] = []
        for seat, bot in enumerate(bots):
            seats += [bot, keys.bot_running(bot), str(seat)]
        done = self._announce(
            keys=[keys.queue(claim.priority), keys.match(claim.match_id), keys.assignments()],
            args=[keys.CONSUMER_GROUP, claim.entry_id, worker, address, f"{time.time():.6f}", maxlen,
                  claim.match_id, game_id, *seats],
        )  # fmt: skip
        if done == -1:
            raise LeaseLostError(f"match {claim.match_id} is held by another worker now")

    def renew(self, worker: str, claim: Claim) -> bool:
        """Keep the lease: resets the entry's idle time. False if another worker took it over (or it is done)."""
        return bool(self._renew(keys=[keys.queue(claim.priority)], args=[keys.CONSUMER_GROUP, claim.entry_id, worker]))

    def reclaim(self, worker: str, count: int = 100, mine: Collection[str] = ()) -> list[Claim]:
        """Take over entries whose lease ran out (their worker died or stalled), at most ``count``.

        An entry's lease has run out when this process, calling here again and again, has seen it held by
        the same worker at the same renewal count for a whole lease by its own monotonic clock. Redis's
        idle times are not used: they follow Redis's wall clock, and a jump of it would expire every live
        lease at once (or, backwards, keep a dead worker's for as long as it jumped). A process that has
        just started watches for a lease before it takes anything over. ``mine``: entry ids ``worker`` runs
        the matches of now, never taken over (by itself) however long their lease went unrenewed (Redis away
        in a failover): a second run of a match this process still runs, whose takeover also marked the
        match running again after its result was recorded, left it unfinished for good."""
        now = time.monotonic()
        out: list[Claim] = []
        seen: set[tuple[str, str]] = set()
        suspected = 0
        for p in PRIORITIES:
            stream = keys.queue(p)
            pending: Any = self.r.xpending_range(stream, keys.CONSUMER_GROUP, "-", "+", WATCH_AT_MOST)
            for e in pending:
                entry_id, holder = keys.text(e["message_id"]), keys.text(e["consumer"])
                key, mark = (stream, entry_id), (holder, int(e["times_delivered"]))
                seen.add(key)
                if holder == worker and entry_id in mine:
                    continue
                watched = self._watched.get(key)
                if watched is None or watched[0] != mark:
                    self._watched[key] = (mark, now)
                    watched = self._watched[key]
                if now - watched[1] < self.lease_ms / 1000 or len(out) >= count:
                    suspected += holder != worker and int(e["time_since_delivered"]) >= self.lease_ms
                    continue
                reply: Any = self._takeover(keys=[stream], args=[keys.CONSUMER_GROUP, entry_id, *mark, worker])
                del self._watched[key]
                for got in reply or []:
                    if got and got[1]:  # an entry deleted meanwhile comes back empty
                        fields = dict(zip(got[1][::2], got[1][1::2], strict=True))
                        out.append(self._claimed(worker, stream, entry_id, keys.text(fields[b"match_id"])))
        for key in self._watched.keys() - seen:
            del self._watched[key]  # acknowledged (finished) or taken over by another worker
        self.suspected = suspected
        return out

    def complete(
        self,
        claim: Claim,
        result: StoredResult,
        *,
        transcript: str = "",
        worker: str = "",
        bots: tuple[str, ...] = (),
    ) -> bool:
        """Record the result (and the transcript) once and release the lease; the match's event log and
        its seed key are deleted then (the transcript has every line, its footer the seed).

        False when a result was recorded already (a second delivery changes nothing). With ``worker``,
        LeaseLostError when another worker holds the match now.
        """
        mid = claim.match_id
        done = replicated(self.r, lambda pipe: self._complete(
            keys=[keys.match(mid), keys.queue(claim.priority), keys.results(), keys.transcript(mid), keys.events(mid),
                  keys.matches_finished(), keys.match_seed(mid), *(keys.bot_running(b) for b in sorted(set(bots)))],
            args=[result.to_json(), f"{time.time():.6f}", keys.CONSUMER_GROUP, claim.entry_id, claim.match_id,
                  transcript, worker, result.result.end_reason.value, result.record_json()],
            client=pipe,
        ), f"recording match {mid}'s result")[0]  # fmt: skip
        if done == -1:
            raise LeaseLostError(f"match {claim.match_id} is held by another worker now")
        return bool(done)

    def status(self, match_id: str) -> dict[str, str]:
        return {keys.text(k): keys.text(v) for k, v in self.r.hgetall(keys.match(match_id)).items()}

    def depth(self) -> dict[str, int]:
        """Matches waiting for a worker, per priority (finished entries are deleted from the streams)."""
        out = {}
        for p in PRIORITIES:
            stream = keys.queue(p)
            pending = self.r.xpending(stream, keys.CONSUMER_GROUP)["pending"]
            out[p.value] = int(self.r.xlen(stream)) - int(pending)
        return out

    def running(self) -> int:
        """Matches leased to a worker right now."""
        return sum(int(self.r.xpending(keys.queue(p), keys.CONSUMER_GROUP)["pending"]) for p in PRIORITIES)


# ---------------------------------------------------------------------- read on each /metrics scrape


class QueueCollector(Collector):
    """``arena_queue_depth{priority}`` (queued, not yet claimed) and ``arena_matches{state}`` (queued,
    running: leased to a worker), read from the queue streams, and Redis's memory (``INFO memory``:
    used and ``maxmemory``, past which ``noeviction`` refuses writes), in one pipelined round trip per
    scrape."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(n, "") for n in (QUEUE_DEPTH, MATCHES_BY_STATE, REDIS_USED, REDIS_MAX)]

    def collect(self) -> Iterable[Metric]:
        try:
            pipe = self.r.pipeline(transaction=False)
            for p in PRIORITIES:
                pipe.xlen(keys.queue(p))
                pipe.xpending(keys.queue(p), keys.CONSUMER_GROUP)
            pipe.info("memory")
            replies = pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, (redis.ConnectionError, redis.TimeoutError)):
                    raise reply
        except redis.RedisError as e:
            scrape_failed(e)
            return []
        depth = GaugeMetricFamily(QUEUE_DEPTH, "Matches waiting for a worker (all workers)", labels=["priority"])
        running = 0
        for i, p in enumerate(PRIORITIES):
            length, pending = replies[2 * i], replies[2 * i + 1]
            leased = 0 if isinstance(pending, Exception) else int(pending["pending"])  # no group yet: none
            depth.add_metric([p.value], max(0, int(length) - leased))
            running += leased
        queued = sum(s.value for s in depth.samples)
        states = GaugeMetricFamily(MATCHES_BY_STATE, "Matches in the arena by state", labels=["state"])
        states.add_metric(["queued"], queued)
        states.add_metric(["running"], running)
        out: list[Metric] = [depth, states]
        memory = replies[-1]
        if isinstance(memory, dict):
            out.append(GaugeMetricFamily(REDIS_USED, "Memory Redis uses (INFO used_memory)",
                                         value=float(memory.get("used_memory", 0))))  # fmt: skip
            out.append(GaugeMetricFamily(REDIS_MAX, "Redis's maxmemory (0: none set); past it writes fail (noeviction)",
                                         value=float(memory.get("maxmemory", 0))))  # fmt: skip
        return out
