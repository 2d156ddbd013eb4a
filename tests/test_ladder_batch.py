"""The ladder's batch path against a real redis-server: a batch of stream entries is one transaction and
still counts every match exactly once (a batch applied twice, a crash between batches or between a
batch's EXEC and the cursor's move, another applier committing in the middle of a batch), batches give
the very table one-by-one application gives, whatever the batch size, and a rebuild gives the same again.
The results include what the ladder must get right: new versions, forfeits, shared places, a bot version
in two seats, aborted and unrated matches, an entry delivered twice, an entry whose result is missing, and
names and match ids that look like the storage's separators."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from arena import keys
from arena.ladder import store as ladder_store
from arena.ladder.elo import Table
from arena.ladder.store import Ladder
from arena.results import counting_record, record_json

GAMES = {"shanghaien": 2, "shangrila-3p": 3, "shangrila-4p": 4}
NAMES = ["ann", "bob", "cy", "dee", "eve", "fay", 'we"ird],[name', "ünï"]


def client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=None)


def make_result(rng: random.Random, i: int) -> dict[str, Any]:
    game_id = rng.choice(list(GAMES))
    names = rng.sample(NAMES, GAMES[game_id])
    if GAMES[game_id] > 2 and rng.random() < 0.1:
        names[1] = names[0]  # one bot version in two seats
    seats: list[dict[str, Any]] = []
    for s, name in enumerate(names):
        version = "1" if i < 60 or name != "ann" else ("2" if i < 150 else "3")  # ann gets two new versions
        forfeited = rng.random() < 0.05
        seats.append({"seat": s, "bot_name": name, "bot_version": version, "score": rng.randrange(3),
                      "status": "forfeited" if forfeited else "active", "rank": 0})  # fmt: skip
    order = [(seat["status"] == "forfeited", -seat["score"]) for seat in seats]
    for s, seat in enumerate(seats):
        seat["rank"] = 1 + sum(k < order[s] for k in order)
    match_id = f"m{i:04d}" if i % 50 else f"m{i:04d}],[x\ny"  # separators in a few match ids
    end_reason = rng.choice(["completed"] * 15 + ["aborted"])
    return {"match_id": match_id, "game_id": game_id, "end_reason": end_reason, "rated": rng.random() > 0.05,
            "finished_at": 1_700_000_000.0 + i + rng.random(), "seats": seats}  # fmt: skip


def results(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_result(rng, i) for i in range(n)]


def store(r: redis.Redis, res: dict[str, Any], record: bool = False) -> None:
    """A stored result as ``MatchQueue.complete`` leaves it: on the match hash, and a results-stream entry
    naming the match; ``record``: with the result's record too, as it is written now (without: as
    entries were stored before records existed, and as most of these tests store them)."""
    r.hset(keys.match(res["match_id"]), mapping={"result": json.dumps(res), "status": "finished"})
    entry = {"match_id": res["match_id"]} | ({keys.RESULT_RECORD: record_json(res)} if record else {})
    r.xadd(keys.results(), entry)  # type: ignore[arg-type]


def store_all(r: redis.Redis, rs: list[dict[str, Any]], record: Callable[[int], bool] = lambda i: False) -> None:
    for i, res in enumerate(rs):
        store(r, res, record(i))
        if i % 97 == 0:
            store(r, res, not record(i))  # delivered twice (once in each format)
        if i % 89 == 0:
            r.xadd(keys.results(), {"match_id": f"gone-{i}"})  # an entry whose match has no result


def snapshots(ladder: Ladder) -> dict[str, Any]:
    return {g: ladder.snapshot(g) for g in GAMES}


def expected_rows(rs: list[dict[str, Any]]) -> dict[str, Any]:
    t = Table()
    t.apply_all(rs)
    return {g: {k: r.to_dict() for k, r in t.rows.get(g, {}).items()} for g in GAMES}


def one_by_one(r: redis.Redis, rs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ladder each result applied in its own transaction (``apply``), as before batches."""
    r.flushall()
    ladder = Ladder(r)
    for res in rs:
        ladder.apply(res)
    return snapshots(ladder)


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_sync_in_batches_gives_the_table_of_one_by_one_application(redis_url: str, size: int) -> None:
    r = client(redis_url)
    rs = results(250, seed=1)
    reference = one_by_one(r, rs)
    r.flushall()
    store_all(r, rs)
    ladder = Ladder(r)
    assert ladder.sync(batch=size) == Table().apply_all(rs)
    assert snapshots(ladder) == reference  # rows, board, latest, head to head, history strings, applied set
    assert {g: s["rows"] for g, s in reference.items()} == expected_rows(rs)
    assert reference["shanghaien"]["latest"]["ann"] == "3"
    assert ladder.sync(batch=size) == 0


def test_a_batch_applied_twice_counts_once(redis_url: str) -> None:
    r = client(redis_url)
    rs = results(120, seed=2)
    ladder = Ladder(r)
    counting = Table().apply_all(rs)
    assert ladder.apply_batch(rs) == counting
    first = snapshots(ladder)
    assert ladder.apply_batch(rs) == 0
    assert ladder.apply_batch(rs[30:80] + rs[:10]) == 0  # any part of it, in any order
    assert snapshots(ladder) == first
    assert {g: s["rows"] for g, s in first.items()} == expected_rows(rs)
    assert first == one_by_one(r, rs)


def test_a_batch_after_one_by_one_applications_goes_on_from_the_stored_rows(redis_url: str) -> None:
    r = client(redis_url)
    rs = results(200, seed=3)
    reference = one_by_one(r, rs)
    r.flushall()
    ladder = Ladder(r)
    for res in rs[:90]:  # the ladder as an earlier, one-at-a-time applier left it
        ladder.apply(res)
    assert ladder.apply_batch(rs[60:]) == Table().apply_all(rs) - Table().apply_all(rs[:90])
    assert snapshots(ladder) == reference


class CrashError(Exception):
    pass


def test_a_crash_between_a_batch_and_the_cursor_loses_nothing_and_applies_nothing_twice(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies after a batch's EXEC, before the cursor moves; then a later batch dies before its
    EXEC. A new process syncs from the cursor: the first batch is found applied, the second is applied."""
    r = client(redis_url)
    rs = results(240, seed=4)
    reference = one_by_one(r, rs)
    r.flushall()
    store_all(r, rs)
    crashing = Ladder(r)
    advance = crashing._advance
    calls = {"advance": 0, "write": 0}

    def advance_then_die(*args: Any, **kw: Any) -> Any:
        calls["advance"] += 1
        if calls["advance"] == 2:
            raise CrashError  # the second batch is committed, its cursor move is lost
        return advance(*args, **kw)

    monkeypatch.setattr(crashing, "_advance", advance_then_die)
    with pytest.raises(CrashError):
        crashing.sync(batch=50)
    partly = sum(len(s["applied"]) for s in snapshots(Ladder(r)).values())
    assert 0 < partly < Table().apply_all(rs)

    write = ladder_store.Ladder._write_batch

    def write_then_die(self: Ladder, *args: Any) -> None:
        calls["write"] += 1
        write(self, *args)
        raise CrashError  # inside MULTI: nothing of this batch reaches Redis

    monkeypatch.setattr(ladder_store.Ladder, "_write_batch", write_then_die)
    with pytest.raises(CrashError):
        Ladder(r).sync(batch=50)  # finds the committed batch applied, dies in the next one
    assert calls["write"] == 1
    assert sum(len(s["applied"]) for s in snapshots(Ladder(r)).values()) == partly
    monkeypatch.undo()
    assert Ladder(r).sync(batch=50) == Table().apply_all(rs) - partly
    assert snapshots(Ladder(r)) == reference
    assert Ladder(r).sync() == 0


def test_another_applier_committing_in_the_middle_of_a_batch(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Applier A has watched and read; before its EXEC, applier B commits part of A's batch. A's EXEC fails,
    A reads again and applies only the rest: every match once, and in stream order."""
    r = client(redis_url)
    rs = results(160, seed=5)
    reference = one_by_one(r, rs)
    r.flushall()
    a, b = Ladder(r), Ladder(client(redis_url))
    load = a._load
    state = {"calls": 0, "b": 0}

    def load_then_b_commits(by_game: Any) -> Any:
        state["calls"] += 1
        loaded = load(by_game)
        if state["calls"] == 1:
            state["b"] = b.apply_batch(rs[:70])
        return loaded

    monkeypatch.setattr(a, "_load", load_then_b_commits)
    applied_by_a = a.apply_batch(rs)
    assert state["calls"] == 2  # the first EXEC failed on the watched state keys
    assert state["b"] + applied_by_a == Table().apply_all(rs) and state["b"] > 0
    assert snapshots(a) == reference


def test_a_batch_waits_for_a_rebuild(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    r = client(redis_url)
    rs = [res for res in results(40, seed=6) if res["game_id"] == "shanghaien"]
    ladder = Ladder(r)
    r.set(keys.ladder_rebuild_lock("shanghaien"), "someone")
    sleeps = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        if len(sleeps) == 3:
            r.delete(keys.ladder_rebuild_lock("shanghaien"))

    monkeypatch.setattr(time, "sleep", sleep)
    assert ladder.apply_batch(rs) == Table().apply_all(rs)
    assert len(sleeps) == 3


def test_rebuild_equals_batched_increments(redis_url: str) -> None:
    r = client(redis_url)
    rs = results(300, seed=7)
    ladder = Ladder(r)
    store_all(r, rs[:100])
    ladder.consume("c1", burst=True)
    store_all(r, rs[100:])
    assert ladder.sync(batch=33) > 0
    before = snapshots(ladder)
    assert [ladder.rebuild(g) for g in GAMES] == [len(before[g]["applied"]) for g in GAMES]
    assert snapshots(ladder) == before
    assert ladder.sync() == 0
    assert {g: s["rows"] for g, s in before.items()} == expected_rows(rs)
    assert before == one_by_one(r, rs)


@pytest.mark.parametrize("mixed", [False, True])
def test_entries_with_ladder_records_and_older_ones_give_the_same_ladder(redis_url: str, mixed: bool) -> None:
    """Results stored with their record (as ``MatchQueue.complete`` writes them now) and, when
    ``mixed``, older entries without one (the result read from the match hash) interleaved in one stream: the
    increments, a rebuild and one-by-one application of the results themselves agree to the last bit. The
    records are what is read: the match hashes of the entries with one are dropped before anything is
    applied."""
    r = client(redis_url)
    rs = results(300, seed=9)
    reference = one_by_one(r, rs)
    r.flushall()
    with_record = (lambda i: i % 3 != 0) if mixed else (lambda i: True)
    store_all(r, rs, with_record)
    r.delete(*[keys.match(res["match_id"]) for i, res in enumerate(rs) if with_record(i) and i % 97])
    ladder = Ladder(r)
    assert ladder.sync(batch=50) == Table().apply_all(rs)
    assert snapshots(ladder) == reference
    assert list(ladder.stored_records()) == [rec for i, res in enumerate(rs) if (rec := counting_record(res))
                                             for _ in range(2 if i % 97 == 0 else 1)]  # fmt: skip
    assert [ladder.rebuild(g) for g in GAMES] == [len(reference[g]["applied"]) for g in GAMES]
    assert snapshots(ladder) == reference


def test_rebuild_replaces_an_existing_ladder_and_reads_in_chunks(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small chunks and bulk writes (5,000 and 50,000 in use) so that several of each are exercised; the
    old rows' histories are dropped when a version is gone from the results."""
    monkeypatch.setattr(ladder_store, "_CHUNK", 17)
    monkeypatch.setattr(ladder_store, "_BULK", 23)
    r = client(redis_url)
    rs = results(200, seed=8)
    store_all(r, rs)
    ladder = Ladder(r)
    ladder.sync(batch=40)
    before = snapshots(ladder)
    stray = keys.ladder_history("shanghaien", ladder_store.member(("ghost", "1")))
    r.hset(keys.ladder_rows("shanghaien"), ladder_store.member(("ghost", "1")), "{}")
    r.rpush(stray, '[1.0,1500.0,"x"]')
    assert ladder.rebuild("shanghaien") == len(before["shanghaien"]["applied"])
    assert ladder.rebuild("shangrila-4p") == len(before["shangrila-4p"]["applied"])
    assert snapshots(ladder) == before
    assert not r.exists(stray)
