"""The Redis match queue against a real redis-server: idempotent enqueue, priorities, leases,
takeover after a worker dies, results recorded exactly once, and durability across a restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis

from arena import keys
from arena.local.redisproc import RedisProcess
from arena.results import StoredResult
from arena.service.matches import MatchStore, entry_lines
from arena.service.queue import LADDER_EVERY, DuplicateMatchError, MatchQueue, Priority, QueuedMatch
from referee import games
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus


def queue(url: str, lease_ms: int = 15_000) -> MatchQueue:
    return MatchQueue(redis.Redis.from_url(url, socket_timeout=None), lease_ms=lease_ms)


def match(match_id: str, game_id: str = "shanghaien", rated: bool = False) -> QueuedMatch:
    game = games.get(game_id)
    names = tuple(f"bot{i}" for i in range(game.num_players))
    return QueuedMatch(match_id, game_id, names, game.time_control, "0" * 64, rated=rated)


def finished(
    match_id: str,
    ranks: tuple[int, ...] = (1, 2),
    *,
    rated: bool = True,
    end: EndReason = EndReason.COMPLETED,
    forfeited: tuple[int, ...] = (),
) -> StoredResult:
    """A stored result of a match of bot0, bot1, ... ranked ``ranks``, finished at a fixed time."""
    seats = tuple(SeatResult(i, f"bot{i}", "1", 3 - rank, rank, SeatStatus.FORFEITED if i in forfeited
                             else SeatStatus.ACTIVE, 0, 0) for i, rank in enumerate(ranks))  # fmt: skip
    return StoredResult(MatchResult(match_id, "shanghaien", end, seats, "s", "0" * 64, 40), rated, 1_700_000_000.25)


def test_a_queued_match_round_trips_through_json() -> None:
    m = match("m1", "shangrila-4p", rated=True)
    assert QueuedMatch.from_json(m.to_json()) == m


def test_enqueue_is_idempotent_by_match_id(redis_url: str) -> None:
    q = queue(redis_url)
    q.enqueue(match("m1", "shanghaien"))
    with pytest.raises(DuplicateMatchError):
        q.enqueue(match("m1", "shangrila-4p"))
    assert q.depth() == {"requested": 1, "ladder": 0}
    assert QueuedMatch.from_json(q.status("m1")["spec"]).game_id == "shanghaien"  # the first request stands


def test_requested_matches_come_before_ladder_matches_in_order(redis_url: str) -> None:
    q = queue(redis_url)
    q.enqueue(match("l1"), Priority.LADDER)
    q.enqueue(match("r1"), Priority.REQUESTED)
    q.enqueue(match("l2"), Priority.LADDER)
    q.enqueue(match("r2"), Priority.REQUESTED)
    order = []
    while (claim := q.claim("w1")) is not None:
        order.append(claim.match_id)
    assert order == ["r1", "r2", "l1", "l2"]
    assert q.status("r1")["status"] == "running" and q.status("r1")["worker"] == "w1"


def test_a_flood_of_requested_matches_does_not_starve_the_ladder(redis_url: str) -> None:
    """Requested matches go first, but one claim in LADDER_EVERY reads the ladder first: before, a steady
    stream of owners' requests kept every ladder match waiting for as long as it lasted."""
    q = queue(redis_url)
    for i in range(4):
        q.enqueue(match(f"l{i}"), Priority.LADDER)
    for i in range(12):
        q.enqueue(match(f"r{i}"), Priority.REQUESTED)
    first = [claim.match_id for _ in range(8) if (claim := q.claim("w1")) is not None]
    assert sum(1 for m in first if m.startswith("l")) == 8 // LADDER_EVERY, first
    assert [m for m in first if m.startswith("r")] == [f"r{i}" for i in range(8 - 8 // LADDER_EVERY)]  # in order


def test_blocking_claim_returns_when_work_arrives_or_times_out(redis_url: str) -> None:
    q = queue(redis_url)
    t = time.monotonic()
    assert q.claim("w1", block_ms=200) is None
    assert time.monotonic() - t >= 0.15


def test_an_expired_lease_is_taken_over_and_the_result_counts_once(redis_url: str) -> None:
    q = queue(redis_url, lease_ms=100)
    q.enqueue(match("m1", "shangrila-3p"))
    dead = q.claim("dead-worker")
    assert dead is not None
    assert q.reclaim("w2") == []  # the lease still runs
    time.sleep(0.15)
    taken = q.reclaim("w2")
    assert [c.match_id for c in taken] == ["m1"] and taken[0].match == match("m1", "shangrila-3p")
    assert not q.renew("dead-worker", dead)  # the old owner learns it lost the lease
    assert q.complete(taken[0], finished("m1", (1, 2)))
    assert not q.complete(dead, finished("m1", (2, 1)))  # a late second delivery changes nothing
    assert q.status("m1")["result"] == finished("m1", (1, 2)).to_json()
    r = redis.Redis.from_url(redis_url)
    assert r.xlen("arena:results") == 1
    assert r.xpending("arena:queue:requested", "referees")["pending"] == 0
    assert q.depth() == {"requested": 0, "ladder": 0} and q.running() == 0


def test_recording_the_result_deletes_the_event_log_and_the_seed_which_the_transcript_holds(redis_url: str) -> None:
    """A finished match keeps no event log (about 20 KB each, an hour, before) nor seed key: the stored
    transcript has every line and its footer the seed. A late append of the worker that lost the match
    cannot bring the log back (the lease's fence refuses it)."""
    q = queue(redis_url)
    q.enqueue(match("m1"), seed="the seed")
    claim = q.claim("w1")
    assert claim is not None and claim.seed == "the seed"
    assert q.append_events("w1", [(claim, ["header", "ply"])], {"m1": 0}) == set()
    r = redis.Redis.from_url(redis_url)
    assert r.exists(keys.events("m1"), keys.match_seed("m1")) == 2
    assert q.complete(claim, finished("m1"), transcript="header\nply\nfooter\n", worker="w1", bots=("bot0", "bot1"))
    assert r.exists(keys.events("m1"), keys.match_seed("m1")) == 0
    assert r.get(keys.transcript("m1")) == b"header\nply\nfooter\n"
    assert q.append_events("w1", [(claim, ["late"])]) == {"m1"} and r.exists(keys.events("m1")) == 0
    assert r.zscore(keys.matches_finished(), "m1") is not None  # the archiver's work list has it


def test_a_results_entry_carries_the_record_of_its_result(redis_url: str) -> None:
    """What the ladder reads instead of the whole result (``arena.results``), stored with it."""
    q = queue(redis_url)
    rated = finished("m1", (1, 2))
    forfeit = finished("m2", (2, 1), rated=False, end=EndReason.FORFEIT, forfeited=(0,))
    for result in (rated, forfeit):
        q.enqueue(match(result.result.match_id))
        claim = q.claim("w1")
        assert claim is not None and claim.match_id == result.result.match_id and q.complete(claim, result)
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    entries: Any = r.xrange(keys.results())
    assert [fields for _, fields in entries] == [
        {"match_id": "m1",
         keys.RESULT_RECORD: '["shanghaien","m1",1700000000.25,true,"completed","bot0","1",1,0,"bot1","1",2,0]'},
        {"match_id": "m2",
         keys.RESULT_RECORD: '["shanghaien","m2",1700000000.25,false,"forfeit","bot0","1",2,1,"bot1","1",1,0]'},
    ]  # fmt: skip
    assert StoredResult.from_json(q.status("m2")["result"]) == forfeit


def test_a_lease_runs_out_by_the_watchers_own_clock_not_by_redis_idle_times(redis_url: str) -> None:
    """Redis's idle times follow its wall clock, which can jump: a worker takes a match over only after
    watching it go unrenewed for a whole lease itself. So a worker that starts (or a Redis whose clock
    jumped) finding an entry idle for long still waits a lease, and a renewal seen meanwhile starts the
    wait again; the takeover checks, atomically, that nobody renewed it since."""
    q = queue(redis_url, lease_ms=200)
    q.enqueue(match("m1"))
    holder = q.claim("w1")
    assert holder is not None
    time.sleep(0.3)  # idle past the lease by Redis's clock
    fresh = queue(redis_url, lease_ms=200)
    assert fresh.reclaim("w2") == []  # never watched it: not taken over on Redis's word
    time.sleep(0.12)
    assert q.renew("w1", holder)  # renewed while watched: the wait starts again
    assert fresh.reclaim("w2") == []
    time.sleep(0.12)
    assert fresh.reclaim("w2") == []  # 0.12 s unrenewed since it saw the renewal: not a lease yet
    time.sleep(0.12)
    taken = fresh.reclaim("w2")
    assert [c.match_id for c in taken] == ["m1"]
    assert not q.renew("w1", holder)


def test_renewing_keeps_the_lease(redis_url: str) -> None:
    q = queue(redis_url, lease_ms=150)
    q.enqueue(match("m1"))
    claim = q.claim("w1")
    assert claim is not None
    for _ in range(3):
        time.sleep(0.08)
        assert q.renew("w1", claim)
        assert q.reclaim("w2") == []


def test_queued_matches_and_results_survive_a_redis_restart(tmp_path: Path) -> None:
    server = RedisProcess(tmp_path / "data").start()
    try:
        q = queue(server.url)
        q.enqueue(match("a"))
        q.enqueue(match("b"), Priority.LADDER)
        claim = q.claim("w1")
        assert claim is not None and q.complete(claim, finished("a"))
        time.sleep(1.2)  # appendfsync everysec
        server.kill()  # a crash, not a clean shutdown
        server.start()
        q2 = queue(server.url)
        assert q2.status("a")["result"] == finished("a").to_json()
        left = q2.claim("w2")
        assert left is not None and left.match_id == "b"
        with pytest.raises(DuplicateMatchError):
            q2.enqueue(match("a"))
    finally:
        server.stop()


def test_a_local_redis_runs_with_the_shipped_persistence_settings(tmp_path: Path) -> None:
    """``arena local``/``arena serve``'s redis-server loads deploy/redis.conf, then its own overrides."""
    server = RedisProcess(tmp_path / "data").start()
    try:
        r = redis.Redis.from_url(server.url, decode_responses=True)
        settings = {k: v for name in ("appendonly", "auto-aof-rewrite-min-size", "maxmemory-policy", "tcp-keepalive")
                    for k, v in r.config_get(name).items()}  # fmt: skip
        assert settings == {"appendonly": "yes", "auto-aof-rewrite-min-size": str(64 * 1024 * 1024),
                            "maxmemory-policy": "noeviction", "tcp-keepalive": "60"}  # fmt: skip
        r.close()
    finally:
        server.stop()


def test_event_lines_follow_the_log_or_are_refused(redis_url: str) -> None:
    """A worker says how many entries (batches) the log holds before its batch: a log that lost its last
    entries (a Redis failover whose new primary had not received them) or holds a retried batch already is
    not appended to with a gap or twice; the match is refused, as when its lease is lost, and the takeover
    replays it. A batch is one entry (one XADD), its lines in order."""
    q = queue(redis_url)
    q.enqueue(match("m1"))
    claim = q.claim("w1")
    assert claim is not None
    assert q.append_events("w1", [(claim, ["a", "b"])], {"m1": 0}) == set()
    assert q.append_events("w1", [(claim, ["c"])], {"m1": 1}) == set()
    assert q.append_events("w1", [(claim, ["c"])], {"m1": 1}) == {"m1"}  # the retry of a batch that went in
    assert q.append_events("w1", [(claim, ["e"])], {"m1": 3}) == {"m1"}  # a gap: entry 3 was lost
    assert q.append_events("w1", [(claim, ["d"])]) == set()  # unchecked, as before
    assert q.r.xlen(keys.events("m1")) == 3
    lines = [line for _, line in MatchStore(q.r).events("m1")]
    assert lines == ["a", "b", "c", "d"]
    first, second = (i for i, _ in MatchStore(q.r).events("m1")[:2])
    assert first == second  # one flush, one entry
    assert q.append_events("w2", [(claim, ["x"])], {"m1": 3}) == {"m1"}  # not the lease holder


def test_appends_ask_no_script_exists_and_survive_a_redis_that_lost_its_scripts(redis_url: str) -> None:
    """A flush is one round trip of EVALSHAs (a redis-py pipeline of scripts asked SCRIPT EXISTS first, a
    command and a round trip more every flush); a Redis without the script (flushed, restarted, failed
    over) gets it loaded and the refused appends again, once each."""
    q = queue(redis_url)
    q.enqueue(match("m1"))
    claim = q.claim("w1")
    assert claim is not None

    def calls(name: str) -> int:
        stats: Any = q.r.info("commandstats")
        return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))

    asked = calls("script|exists")
    for n in range(5):
        assert q.append_events("w1", [(claim, [f"l{n}"])], {"m1": n}) == set()
    assert calls("script|exists") == asked
    q.r.script_flush()
    assert q.append_events("w1", [(claim, ["l5", "l6"])], {"m1": 5}) == set()
    assert [line for _, line in MatchStore(q.r).events("m1")] == [f"l{n}" for n in range(7)]
    assert q.append_events("w2", [(claim, ["x"])], {"m1": 6}) == {"m1"}  # the fence holds as before


def test_an_event_log_written_before_batches_reads_the_same(redis_url: str) -> None:
    """A match running through an upgrade: its entries of one line each (``keys.EVENT_LINE``), then batches."""
    r = redis.Redis.from_url(redis_url)
    r.xadd(keys.events("old"), {keys.EVENT_LINE: "h"})
    r.xadd(keys.events("old"), {keys.EVENT_LINES: "p1\np2"})
    assert [line for _, line in MatchStore(r).events("old")] == ["h", "p1", "p2"]
    assert entry_lines({}) == [] and entry_lines({"line": "x"}) == ["x"]
