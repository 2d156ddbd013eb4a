"""The ladder's per-bot indexes (``keys.ladder_versions``, ``keys.ladder_opponents``), which let a bot page
read one bot's versions and head to head without scanning every row and pair: increments and a rebuild
write the same ones, the queries answer from them as the scans did, and a ladder stored before them is
scanned until a rebuild indexes it."""

from __future__ import annotations

import redis

from arena import keys
from arena.ladder.store import Ladder
from tests.ladder_results import batch, store


def scanned(ladder: Ladder, game_id: str, name: str) -> tuple[object, object]:
    """What the queries give without the index (the scans)."""
    ladder.r.hdel(keys.ladder_state(game_id), "indexed")
    try:
        return ladder.versions(game_id, name), ladder.h2h(game_id, name)
    finally:
        ladder.r.hset(keys.ladder_state(game_id), "indexed", "1")


def index(r: redis.Redis, game_id: str) -> dict[str, set[str]]:
    out = {}
    for kind in ("versions", "opponents"):
        for k in r.scan_iter(match=f"arena:ladder:{game_id}:{kind}:*"):
            out[keys.text(k)] = {keys.text(m) for m in r.smembers(k)}
    return out


def test_increments_and_rebuild_write_the_same_index_and_the_queries_agree_with_the_scans(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    ladder = Ladder(r)
    results = batch(120, seed=9)
    for res in results:
        store(r, res)
    for i in range(0, len(results), 7):  # several batches
        ladder.apply_batch(results[i : i + 7])
    games = {res["game_id"] for res in results}
    incremental = {g: index(r, g) for g in games}
    for g in games:
        assert ladder.indexed(g)
        for name in ("bot1", "bot3"):
            versions, h2h = ladder.versions(g, name), ladder.h2h(g, name)
            assert (versions, h2h) == scanned(ladder, g, name)
            assert versions and h2h
        assert sorted(v for _, v in ladder.versions(g, "bot1")) == ["1", "2"]
    r.sadd(keys.ladder_versions("shanghaien", "gone"), "stale")  # a rebuild drops what is no longer so
    r.hset(keys.ladder_rows("shanghaien"), '["gone","stale"]', r.hget(keys.ladder_rows("shanghaien"), '["bot1","1"]'))
    for g in games:
        ladder.rebuild(g)
        assert index(r, g) == incremental[g] and ladder.indexed(g)


def test_a_ladder_stored_before_the_index_is_scanned_until_rebuilt(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    ladder = Ladder(r)
    results = [res for res in batch(60, seed=4) if res["game_id"] == "shanghaien"]
    for res in results:
        store(r, res)
    ladder.apply_batch(results[:20])
    # as an older arena left it: no index, no flag; later increments add to a partial index
    for k in r.scan_iter(match="arena:ladder:shanghaien:versions:*"):
        r.delete(k)
    for k in r.scan_iter(match="arena:ladder:shanghaien:opponents:*"):
        r.delete(k)
    r.hdel(keys.ladder_state("shanghaien"), "indexed")
    ladder.apply_batch(results[20:])
    assert not ladder.indexed("shanghaien")
    full = (ladder.versions("shanghaien", "bot2"), ladder.h2h("shanghaien", "bot2"))  # scans: complete
    assert full[0] and full[1]
    ladder.rebuild("shanghaien")
    assert ladder.indexed("shanghaien")
    assert (ladder.versions("shanghaien", "bot2"), ladder.h2h("shanghaien", "bot2")) == full
