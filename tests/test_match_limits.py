"""The arena bounds a requested time control: a match asked for with an hour a move (which the engines
allow, for local play) once held its seats and a worker slot for days. Real Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from arena import keys
from arena.service.matches import ARENA_MAX_MS, MatchRequestError, MatchStore
from arena.service.queue import QueuedMatch
from arena.service.registry import Registry
from referee import games


@pytest.fixture
def store(redis_url: str) -> Any:
    client = redis.Redis.from_url(redis_url)
    registry = Registry(client)
    for name in ("a", "b"):
        registry.register(name, "tests", ["shanghaien"], 4)
    yield MatchStore(client, registry=registry)
    client.close()


@pytest.mark.parametrize("field", sorted(ARENA_MAX_MS))
def test_a_time_control_past_the_arenas_bound_is_refused_and_queues_nothing(store: Any, field: str) -> None:
    with pytest.raises(MatchRequestError, match=f"{field} is at most"):
        store.request("shanghaien", ["a", "b"], time_control={field: ARENA_MAX_MS[field] + 1})
    assert store.r.zcard(keys.matches_by_time()) == 0
    match_id, _ = store.request("shanghaien", ["a", "b"], time_control={field: ARENA_MAX_MS[field]})
    assert match_id


def test_every_field_of_a_requested_control_reaches_the_queued_match(store: Any) -> None:
    """The request's overrides meet the game's default once (``referee.games.time_control``); what is
    queued is the whole control, which the worker reads back as it was asked for."""
    asked = {"first_move_ms": 4000, "move_ms": 900, "bank_ms": 7000, "grace_ms": 300,
             "disconnect_grace_ms": 20_000, "join_timeout_ms": 40_000}  # fmt: skip
    match_id, _ = store.request("shanghaien", ["a", "b"], time_control=asked)
    queued = QueuedMatch.from_json(store.r.hget(keys.match(match_id), "spec"))
    assert queued.time_control.to_dict() == asked
    match_id, _ = store.request("shanghaien", ["a", "b"], time_control={})
    queued = QueuedMatch.from_json(store.r.hget(keys.match(match_id), "spec"))
    assert queued.time_control == games.get("shanghaien").time_control
