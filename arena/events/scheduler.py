"""Playing events beside the ladder: the ladder runner (``arena.local.ladder_runner``) asks ``tick`` for
the events' share of the ladder's queue before it pairs ladder matches.

Each tick, for every active event past its start time:

1. its queued slots whose matches have a result are done; an aborted match, or one where a bot played
   with another version than its frozen one, is played again (the slot's next attempt, a new match id);
2. a Swiss event whose round is complete gets its next round, paired by the points so far; an event
   with no open slot left is finished;
3. its pending slots, in order (``model.slot_order``), are queued at ladder priority while the event's
   waiting matches fill less than ``share`` of the ladder's ``queue_depth``: a slot whose bots are all
   online, enabled, connected with their frozen version and not playing another match of the event. A
   slot with a bot absent (offline, another version, disabled) waits, and later slots go first; once it
   has waited ``grace_s``, its absent bots forfeit it (``SlotState.FORFEITED``).

All state is in Redis (``arena.events.store``); match ids are fixed per slot and attempt, so a tick cut
short by a restart is repeated without doubling a match.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Final

import redis
import structlog

from arena.events.formats import swiss_round
from arena.events.model import Event, EventState, EventStateError, Slot, SlotState, plan_round, slot_order
from arena.events.rating import pair_games
from arena.events.standings import forfeit_pairs
from arena.events.store import EventStore
from arena.redis_client import TROUBLE
from arena.service.matches import MatchRecord, MatchRequestError
from arena.service.queue import DuplicateMatchError, Priority
from arena.service.registry import BotRecord
from referee import games
from referee.wire.values import EndReason, MatchStatus

log = structlog.get_logger("arena.events")

LIVE: Final = frozenset({EventState.ACTIVE})


class EventScheduler:
    def __init__(
        self, client: redis.Redis, store: EventStore | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store or EventStore(client)
        self.clock = clock

    def tick(self, queue_depth: int) -> int:
        """Queue the events' due matches (module doc); returns how many were queued."""
        queued = 0
        bots: dict[str, BotRecord] | None = None
        for event_id in self.store.ids():
            try:
                found = self.store.get(event_id)
                if found is None or found[1] not in LIVE or found[0].start_at > self.clock():
                    continue
                if bots is None:
                    bots = {b.name: b for b in self.store.registry.list()}
                queued += self.tick_event(found[0], bots, queue_depth)
            except TROUBLE:
                raise  # the ladder runner's loop waits for Redis
            except EventStateError:
                continue  # paused or cancelled as it finished: the admin's change stands
            except Exception:  # one broken event must not stop the others, nor the ladder beside them
                log.exception("event tick failed", event_id=event_id)
        return queued

    def tick_event(self, event: Event, bots: dict[str, BotRecord], queue_depth: int) -> int:
        slots = self.store.slots(event.event_id)
        changed: dict[str, Slot] = {}
        self._collect(event, slots, changed)
        slots = [changed.get(s.key, s) for s in slots]
        if not any(s.open for s in slots):
            nxt = self._next_round(event, slots)
            if nxt:
                self.store.put_slots(event.event_id, [*changed.values(), *nxt])
                return 0
            self.store.put_slots(event.event_id, list(changed.values()))
            self.store.move(event.event_id, LIVE, EventState.FINISHED, "finish")
            log.info("event finished", event_id=event.event_id, matches=len(slots))
            return 0
        waiting = self._waiting(slots)
        room = math.ceil(event.share * queue_depth) - waiting
        busy = {name for s in slots if s.state is SlotState.QUEUED for name in s.bots}
        now = self.clock()
        frozen = {e.name: e.version for e in event.entrants}
        secret = self.store.seed(event.event_id)
        queued = 0
        for slot in slot_order([s for s in slots if s.state is SlotState.PENDING]):
            absent = tuple(n for n in slot.bots if not self._present(bots.get(n), frozen[n], event.game_id))
            if absent:
                since = slot.blocked_since or now
                if now - since >= event.grace_s:
                    changed[slot.key] = slot.but(state=SlotState.FORFEITED, absent=absent, finished_at=now)
                    log.info("event match forfeited", event_id=event.event_id, slot=slot.key, absent=list(absent))
                elif not slot.blocked_since:
                    changed[slot.key] = slot.but(blocked_since=now)
                continue
            if room <= 0 or busy & set(slot.bots):
                continue
            match_id = slot.match_id_for(event.event_id)
            try:
                self.store.matches.request(
                    event.game_id, slot.bots, seed=slot.seed_for(secret), rated=event.rated,
                    time_control=event.time_control or None, match_id=match_id, priority=Priority.LADDER,
                    requested_by=f"event:{event.event_id}",
                )  # fmt: skip
            except DuplicateMatchError:
                pass  # queued before a restart: the slot catches up
            except MatchRequestError as e:
                log.warning("event match not queued", event_id=event.event_id, slot=slot.key, error=str(e))
                continue
            changed[slot.key] = slot.but(state=SlotState.QUEUED, match_id=match_id, blocked_since=0.0)
            busy |= set(slot.bots)
            room -= 1
            queued += 1
        self.store.put_slots(event.event_id, list(changed.values()))
        return queued

    @staticmethod
    def _present(bot: BotRecord | None, version: str, game_id: str) -> bool:
        return bot is not None and bot.online and bot.enabled and bot.version == version and game_id in bot.game_ids

    def _collect(self, event: Event, slots: list[Slot], changed: dict[str, Slot]) -> None:
        """Step 1 of the module doc."""
        queued = [s for s in slots if s.state is SlotState.QUEUED]
        records = {m.match_id: m for m in self.store.matches.describe_many([s.match_id for s in queued])}
        frozen = {e.name: e.version for e in event.entrants}
        for s in queued:
            m = records.get(s.match_id)
            if m is None or m.outcome is None:
                continue
            if self._counts(m, frozen):
                changed[s.key] = s.but(state=SlotState.DONE, finished_at=m.finished_at)
            else:
                log.info("event match played again", event_id=event.event_id, slot=s.key, match_id=s.match_id)
                changed[s.key] = s.but(state=SlotState.PENDING, attempt=s.attempt + 1, match_id="")

    @staticmethod
    def _counts(m: MatchRecord, frozen: dict[str, str]) -> bool:
        outcome = m.outcome
        assert outcome is not None
        if outcome.end_reason is EndReason.ABORTED:
            return False
        return all(frozen.get(seat.bot_name) == seat.bot_version for seat in outcome.seats)

    def _waiting(self, slots: list[Slot]) -> int:
        """The event's matches queued and not started yet."""
        ids = [s.match_id for s in slots if s.state is SlotState.QUEUED]
        return sum(1 for m in self.store.matches.describe_many(ids) if m.status is MatchStatus.QUEUED)

    def _next_round(self, event: Event, slots: list[Slot]) -> list[Slot]:
        """A Swiss event's next round, paired by the points so far (none when its rounds are played)."""
        if event.format != "swiss":
            return []
        round_no = 1 + max((s.round for s in slots), default=-1)
        if round_no >= event.rounds:
            return []
        index = event.index()
        points = [0.0] * len(event.entrants)
        met: dict[frozenset[int], int] = {}
        results = self.store.results(slots)
        for s in slots:
            pairs = pair_games(results[s.key], index) if s.key in results else forfeit_pairs(s, index)
            for g in pairs:
                points[g.a] += g.score
                points[g.b] += 1.0 - g.score
                met[frozenset((g.a, g.b))] = met.get(frozenset((g.a, g.b)), 0) + 1
        seats = games.get(event.game_id).num_players
        return plan_round(event, round_no, swiss_round(points, seats, met))
