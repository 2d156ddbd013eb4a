"""Events in Redis (keys ``arena.keys.event*``): creating one (its entrants resolved and frozen, its first
slots planned, its secret seed drawn, all in one transaction), reading them, changing their state, writing
their slots, and reading the results of their matches. Everything an event is lives here, so a restarted
scheduler, gateway or Redis (with its AOF) carries on from where it was.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import redis

from arena import keys
from arena.events.formats import check_field, swiss_round, tables
from arena.events.model import (
    FINAL,
    DuplicateEventError,
    Entrant,
    Event,
    EventError,
    EventState,
    EventStateError,
    Slot,
    UnknownEventError,
    check_definition,
    plan_round,
    slot_order,
)
from arena.events.standings import standings
from arena.ladder.store import Ladder
from arena.service.matches import ARENA_MAX_MS, MatchStore
from arena.service.registry import Registry
from referee import chance, games
from referee.wire.values import MatchResult

# the state changes the admin may ask for: from which states, to which
TRANSITIONS: dict[str, tuple[frozenset[EventState], EventState]] = {
    "pause": (frozenset({EventState.ACTIVE}), EventState.PAUSED),
    "resume": (frozenset({EventState.PAUSED}), EventState.ACTIVE),
    "cancel": (frozenset({EventState.ACTIVE, EventState.PAUSED}), EventState.CANCELLED),
}


class EventStore:
    def __init__(self, client: redis.Redis, matches: MatchStore | None = None) -> None:
        self.r = client
        self.registry = Registry(client)
        self.matches = matches or MatchStore(client, registry=self.registry)

    # ----------------------------------------------------------------- creating

    def entrants(self, game_id: str, named: Sequence[str], top: int) -> tuple[Entrant, ...]:
        """The frozen entrants: ``NAME`` (the version it last connected with), ``NAME@VERSION``, then the
        ladder's best ``top`` versions of ``game_id`` now (one per bot, skipping those named)."""
        out: list[Entrant] = []
        for spec in named:
            name, _, version = spec.partition("@")
            bot = self.registry.find(name)
            if bot is None:
                raise EventError(f"no bot named {name!r}")
            if game_id not in bot.game_ids:
                raise EventError(f"bot {name!r} does not play {game_id}")
            if not bot.enabled:
                raise EventError(f"bot {name!r} is disabled")
            version = version or bot.version
            if not version:
                raise EventError(f"bot {name!r} never connected: name its version, {name}@VERSION")
            out.append(Entrant(name, version))
        if top:
            seen = {e.name for e in out}
            for standing in Ladder(self.r).leaderboard(game_id):
                if len(out) >= len(named) + top:
                    break
                bot = self.registry.find(standing.row.name)
                if standing.row.name in seen or bot is None or not bot.enabled:
                    continue
                seen.add(standing.row.name)
                out.append(Entrant(standing.row.name, standing.row.version))
            if len(out) < len(named) + top:
                raise EventError(f"the {game_id} ladder has {len(out) - len(named)} enabled bots to enter, not {top}")
        return tuple(out)

    def create(self, event: Event) -> Event:
        """Store a new event (``created_at`` now) with its first slots; EventError if it cannot run or its
        id is taken."""
        if event.game_id not in games.GAME_IDS:
            raise EventError(f"unknown game id {event.game_id!r}; known: {', '.join(games.GAME_IDS)}")
        event = replace(event, created_at=time.time())
        check_definition(event)
        try:
            control = games.time_control(event.game_id, event.time_control)
        except ValueError as e:
            raise EventError(str(e)) from None
        for name, top in ARENA_MAX_MS.items():  # what every match request checks: refused now, not at each match
            if getattr(control, name) > top:
                raise EventError(f"on the arena {name} is at most {top:,} ms")
        seats = games.get(event.game_id).num_players
        try:
            check_field(len(event.entrants), seats)
            if event.format == "swiss":
                first = swiss_round([0.0] * len(event.entrants), seats, {})
            else:
                first = tables(len(event.entrants), seats, event.format)
        except ValueError as e:
            raise EventError(str(e)) from None
        slots = plan_round(event, 0, first)
        key = keys.event(event.event_id)
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)  # type: ignore[no-untyped-call]
                if pipe.exists(key):
                    raise DuplicateEventError(f"an event {event.event_id!r} exists already")
                pipe.multi()
                pipe.hset(key, mapping={"definition": json.dumps(event.to_dict()), "state": EventState.ACTIVE.value,
                                        "updated_at": event.created_at})  # fmt: skip
                pipe.set(keys.event_seed(event.event_id), chance.new_seed())
                self._put(pipe, event.event_id, slots)
                pipe.zadd(keys.event_ids(), {event.event_id: event.created_at})
                pipe.execute()
            except redis.WatchError:
                raise DuplicateEventError(f"an event {event.event_id!r} was created at the same moment") from None
        return event

    # ----------------------------------------------------------------- reading

    def get(self, event_id: str) -> tuple[Event, EventState] | None:
        raw: Any = self.r.hmget(keys.event(event_id), "definition", "state")
        if raw[0] is None:
            return None
        return Event.from_dict(json.loads(raw[0])), EventState(keys.text(raw[1]))

    def require(self, event_id: str) -> tuple[Event, EventState]:
        found = self.get(event_id)
        if found is None:
            raise UnknownEventError(f"no event {event_id!r}")
        return found

    def ids(self) -> list[str]:
        """Every event id, newest first."""
        raw: Any = self.r.zrevrange(keys.event_ids(), 0, -1)
        return [keys.text(i) for i in raw]

    def slots(self, event_id: str) -> list[Slot]:
        raw: Any = self.r.hgetall(keys.event_slots(event_id))
        return [Slot.from_dict(json.loads(v)) for v in raw.values()]

    def seed(self, event_id: str) -> str:
        raw: Any = self.r.get(keys.event_seed(event_id))
        return keys.text(raw) if raw else ""

    def results(self, slots: Sequence[Slot]) -> dict[str, MatchResult]:
        """Slot key -> the stored result of its match, for the slots that are done."""
        done = [s for s in slots if s.state.value == "done" and s.match_id]
        records = {m.match_id: m for m in self.matches.describe_many([s.match_id for s in done])}
        out = {}
        for s in done:
            m = records.get(s.match_id)
            if m is not None and m.outcome is not None:
                out[s.key] = m.outcome
        return out

    # ----------------------------------------------------------------- writing

    def put_slots(self, event_id: str, slots: Sequence[Slot]) -> None:
        if slots:
            pipe = self.r.pipeline(transaction=True)
            self._put(pipe, event_id, slots)
            pipe.execute()

    @staticmethod
    def _put(pipe: Any, event_id: str, slots: Sequence[Slot]) -> None:
        if slots:
            pipe.hset(keys.event_slots(event_id), mapping={s.key: json.dumps(s.to_dict()) for s in slots})

    def change(self, event_id: str, action: str) -> EventState:
        """``pause``, ``resume`` or ``cancel`` (EventError when the event's state does not allow it,
        UnknownEventError for no such event); returns the new state. A WATCH transaction: a scheduler finishing
        the event at the same moment makes one of the two retry."""
        if action not in TRANSITIONS:
            raise EventError(f"unknown action {action!r}; known: {', '.join(TRANSITIONS)}")
        allowed, to = TRANSITIONS[action]
        return self.move(event_id, allowed, to, action)

    def move(self, event_id: str, allowed: frozenset[EventState], to: EventState, what: str = "") -> EventState:
        """Set the state to ``to`` if it is one of ``allowed`` now (EventError otherwise)."""
        key = keys.event(event_id)
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]
                    raw = pipe.hget(key, "state")
                    if raw is None:
                        raise UnknownEventError(f"no event {event_id!r}")
                    now = EventState(keys.text(raw))
                    if now not in allowed:
                        final = " (for good)" if now in FINAL else ""
                        raise EventStateError(f"event {event_id!r} is {now.value}{final}: it cannot {what or to.value}")
                    pipe.multi()
                    pipe.hset(key, mapping={"state": to.value, "updated_at": time.time()})
                    pipe.execute()
                    return to
                except redis.WatchError:
                    continue

    # ----------------------------------------------------------------- the whole picture

    def summary(self, event_id: str) -> dict[str, Any]:
        """The event as its pages, ``arena event show --json`` and the JSON export give it: ``event`` (the
        definition, ``state`` and match counts), ``standings`` (``arena.events.standings``) and ``matches``
        (every slot: key, bots by seat, state, match id, absent bots, finish time), in the order they are
        due. UnknownEventError for no such event."""
        event, state = self.require(event_id)
        slots = slot_order(self.slots(event_id))
        table = standings(event, slots, self.results(slots))
        head = {**event.to_dict(), "state": state.value, "matches_played": table["matches_played"],
                "matches_forfeited": table["matches_forfeited"], "matches_remaining": table["remaining"]}  # fmt: skip
        matches = [{"slot": s.key, "round": s.round, "bots": list(s.bots), "state": s.state.value,
                    "match_id": s.match_id or None, "absent": list(s.absent), "finished_at": s.finished_at}
                   for s in slots]  # fmt: skip
        return {"event": head, "standings": table, "matches": matches}
