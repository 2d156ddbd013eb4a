"""The event scheduler against a real Redis, its matches played by a stand-in worker (claimed from the real
queue and completed with results the test chooses): a Swiss event's next round paired by points, a bot
that played with another version played again, an absent bot forfeiting once the grace is over (a clock
the test moves), a paused event queueing nothing and a finished one left alone."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from arena import keys
from arena.events.model import Entrant, Event, EventError, EventState, SlotState
from arena.events.scheduler import EventScheduler
from arena.events.store import EventStore
from arena.ladder.store import Ladder
from arena.results import StoredResult
from arena.service.queue import MatchQueue
from arena.service.registry import Registry
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus
from tests.web_world import result

GAME = "shanghaien"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def play_all(r: Any, winner_of: dict[str, int], versions: dict[str, str] | None = None) -> list[str]:
    """Claim every queued match and complete it: the bot ``winner_of[bot]`` ranks are lower is better."""
    queue = MatchQueue(r)
    done = []
    while (claim := queue.claim("w1")) is not None:
        names = claim.match.bot_names
        ranks = [1 + sorted(names, key=lambda n: winner_of[n]).index(n) for n in names]
        seats = tuple(SeatResult(seat=i, bot_name=n, bot_version=(versions or {}).get(n, "1"), score=0,
                                 rank=ranks[i], status=SeatStatus.ACTIVE, strikes=0, refusals=0)
                      for i, n in enumerate(names))  # fmt: skip
        result = MatchResult(match_id=claim.match_id, game_id=GAME, end_reason=EndReason.COMPLETED, seats=seats,
                             seed="s", seed_sha256="", plies=1, detail="")  # fmt: skip
        assert queue.complete(claim, StoredResult.of(result, rated=False), transcript="x\n", bots=names)
        done.append(claim.match_id)
    return done


def world(redis_url: str, names: list[str]) -> tuple[Any, Registry]:
    r: Any = redis.Redis.from_url(redis_url)
    registry = Registry(r)
    for name in names:
        registry.register(name, "tests", [GAME])
        registry.seen(name, "1", {})
    return r, registry


def test_a_swiss_event_pairs_its_second_round_by_points_and_finishes(redis_url: str) -> None:
    names = ["a", "b", "c", "d"]
    r, _ = world(redis_url, names)
    store = EventStore(r)
    store.create(Event("swiss", GAME, "swiss", tuple(Entrant(n, "1") for n in names), 2, rounds=2, share=1.0))
    scheduler = EventScheduler(r, store)
    strength = {"a": 0, "b": 1, "c": 2, "d": 3}  # a beats everyone, d no one
    first = {s.bots for s in store.slots("swiss")}
    assert first == {("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")}  # round 1: 0-1, 2-3 in both seat orders
    for _ in range(10):
        scheduler.tick(queue_depth=8)
        play_all(r, strength)
    found = store.get("swiss")
    assert found is not None and found[1] is EventState.FINISHED
    second = {frozenset(s.bots) for s in store.slots("swiss") if s.round == 1}
    assert second == {frozenset({"a", "c"}), frozenset({"b", "d"})}  # the winners meet, and the losers
    table = store.summary("swiss")["standings"]
    assert [row["name"] for row in table["rows"]] == ["a", "b", "c", "d"] and table["remaining"] == 0
    assert [row["points"] for row in table["rows"]] == [4.0, 2.0, 2.0, 0.0]


def test_another_version_is_played_again_and_an_absent_bot_forfeits_after_the_grace(redis_url: str) -> None:
    r, registry = world(redis_url, ["a", "b", "c"])
    store = EventStore(r)
    store.create(Event("cup", GAME, "round-robin", tuple(Entrant(n, "1") for n in "abc"), 2, share=1.0, grace_s=60))
    clock = Clock()
    scheduler = EventScheduler(r, store, clock=clock)
    r.delete(keys.presence("c"))  # c goes offline
    r.hset(keys.event("broken"), mapping={"definition": "{not json", "state": "active"})  # an event gone bad
    r.zadd(keys.event_ids(), {"broken": 0})
    assert scheduler.tick(queue_depth=8) == 1  # a-b; the tables with c wait for it; "broken" is logged, skipped
    waiting = [s for s in store.slots("cup") if "c" in s.bots]
    assert all(s.state is SlotState.PENDING and s.blocked_since == clock.now for s in waiting)
    (played,) = play_all(r, {"a": 0, "b": 1, "c": 2}, versions={"a": "1", "b": "9"})  # b was not its frozen self
    clock.now += 30
    scheduler.tick(queue_depth=8)
    again = next(s for s in store.slots("cup") if s.attempt == 1)
    assert again.state is SlotState.QUEUED and again.match_id == played + "-a1"  # played again, new id
    play_all(r, {"a": 0, "b": 1, "c": 2})
    clock.now += 31  # past the grace for c's tables
    store.change("cup", "pause")
    assert scheduler.tick(queue_depth=8) == 0  # paused: nothing queued, nothing forfeited
    assert not any(s.state is SlotState.FORFEITED for s in store.slots("cup"))
    store.change("cup", "resume")
    for _ in range(4):
        scheduler.tick(queue_depth=8)
        play_all(r, {"a": 0, "b": 1, "c": 2})
    slots = store.slots("cup")
    assert sorted(s.state.value for s in slots) == ["done", "done", "forfeited", "forfeited", "forfeited", "forfeited"]
    assert all(s.absent == ("c",) for s in slots if s.state is SlotState.FORFEITED)
    found = store.get("cup")
    assert found is not None and found[1] is EventState.FINISHED
    rows = {row["name"]: row for row in store.summary("cup")["standings"]["rows"]}
    assert rows["c"]["forfeits"] == 4 and rows["a"]["points"] == 4.0 and rows["b"]["points"] == 2.0
    registry.seen("c", "1", {})
    assert scheduler.tick(queue_depth=8) == 0  # finished: left alone


def test_the_ladders_top_n_are_entered_at_their_versions_and_bad_entrants_are_refused(redis_url: str) -> None:
    r, registry = world(redis_url, ["a", "b", "c", "d"])
    ladder = Ladder(r)
    for k, (winner, loser) in enumerate([("c", "a"), ("c", "b"), ("a", "b"), ("c", "d"), ("a", "d")]):
        ladder.apply(result(f"m{k}", (winner, loser), ("7", "7"), 0, 1.7e9 + k))
    registry.set_enabled("a", False, "testing")  # the ladder's second: skipped, the next one enters
    store = EventStore(r)
    entrants = store.entrants(GAME, ["d@1"], top=2)
    assert entrants == (Entrant("d", "1"), Entrant("c", "7"), Entrant("b", "7"))
    created = store.create(Event("gauntlet", GAME, "gauntlet", entrants, 1))
    assert {s.bots[0] if s.rot == 0 else s.bots[1] for s in store.slots(created.event_id)} == {"d"}  # d at every table
    assert len(store.slots("gauntlet")) == 4  # 2 tables, 1 game rounded up to both seat orders
    for bad, why in ((["zed"], "no bot named"), (["a"], "disabled"), (["b", "b"], "named twice")):
        with pytest.raises(EventError, match=why):
            store.create(Event("x", GAME, "round-robin", store.entrants(GAME, bad, 0), 2))
    with pytest.raises(EventError, match="move_ms is at most"):
        store.create(Event("x", GAME, "round-robin", entrants, 2, time_control={"move_ms": 3_600_000}))
    with pytest.raises(EventError, match="3 enabled bots to enter, not 9"):
        store.entrants(GAME, [], top=9)
    assert store.get("x") is None  # nothing stored for a refused event
