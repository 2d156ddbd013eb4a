"""An event as stored: its definition (fixed at creation: game, format, frozen entrants, games per pairing,
time control, start, rating, share of the queue, grace), its state, and its slots (one planned match each).

Stored as JSON (``to_dict`` / ``from_dict``) in the keys of ``arena.keys`` (``event``, ``event_slots``), by
``arena.events.store``. A slot's match id is ``event-ID-SLOT`` (``-aN`` after N aborted attempts), so
queueing it twice queues it once (the queue is idempotent by match id): a scheduler that dies between
queueing and writing the slot finds it queued when it comes back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Final

from arena.events.formats import FORMATS, Format

EVENT_ID: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
DEFAULT_SHARE: Final = 0.5
DEFAULT_GRACE_S: Final = 600.0


class EventState(StrEnum):
    ACTIVE = "active"  # plays from its start time
    PAUSED = "paused"  # queues nothing new; matches queued already are played
    CANCELLED = "cancelled"  # for good; its standings stay as they were
    FINISHED = "finished"  # every slot played or forfeited


FINAL: Final = frozenset({EventState.CANCELLED, EventState.FINISHED})


class SlotState(StrEnum):
    PENDING = "pending"  # not queued yet (waiting for its bots, its turn or the start)
    QUEUED = "queued"  # requested; queued or running
    DONE = "done"  # played: its result counts
    FORFEITED = "forfeited"  # its absent bots were not back within the grace: they lose it unplayed


class EventError(ValueError):
    """An event request that cannot be done; the message says why. Nothing was changed."""


class DuplicateEventError(EventError):
    """An event of that id exists already."""


class EventStateError(EventError):
    """The event's state does not allow the change (a cancelled event cannot resume ...)."""


class UnknownEventError(LookupError):
    """No event of that id."""


@dataclass(frozen=True)
class Entrant:
    name: str
    version: str


@dataclass(frozen=True)
class Event:
    """What the admin created. ``time_control``: the fields given (the game's default for the others);
    ``rounds``: Swiss only; ``share``: the fraction of the ladder's queue its waiting matches may fill;
    ``grace_s``: how long a slot waits for an absent bot before it forfeits."""

    event_id: str
    game_id: str
    format: Format
    entrants: tuple[Entrant, ...]
    games_per_pairing: int
    time_control: dict[str, int] = field(default_factory=dict)
    start_at: float = 0.0
    rated: bool = False
    rounds: int = 0
    share: float = DEFAULT_SHARE
    grace_s: float = DEFAULT_GRACE_S
    created_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["entrants"] = [{"name": e.name, "version": e.version} for e in self.entrants]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Event:
        fields = dict(d)
        fields["entrants"] = tuple(Entrant(str(e["name"]), str(e["version"])) for e in d["entrants"])
        fields["time_control"] = {str(k): int(v) for k, v in d.get("time_control", {}).items()}
        return cls(**fields)

    def index(self) -> dict[str, int]:
        """Entrant name -> its index."""
        return {e.name: i for i, e in enumerate(self.entrants)}


def check_definition(event: Event) -> None:
    """EventError for a definition that cannot run (checked at creation, before anything is stored)."""
    if not EVENT_ID.match(event.event_id):
        raise EventError("an event id is 1-40 characters: lowercase letters, digits, - and _ (a letter or digit first)")
    if event.format not in FORMATS:
        raise EventError(f"unknown format {event.format!r}; known: {', '.join(FORMATS)}")
    names = [e.name for e in event.entrants]
    if len(set(names)) != len(names):
        raise EventError("an entrant is named twice (one version of a bot per event)")
    if not 1 <= event.games_per_pairing <= 1000:
        raise EventError("games per pairing: 1 to 1000")
    if event.format == "swiss" and not 1 <= event.rounds <= 100:
        raise EventError("a Swiss event needs --rounds, 1 to 100")
    if not 0.0 < event.share <= 1.0:
        raise EventError("the share of the ladder's queue is above 0 and at most 1")
    if event.grace_s < 0:
        raise EventError("the grace is not negative")


@dataclass(frozen=True)
class Slot:
    """One planned match: round (Swiss; 0 otherwise), table, seed ``j`` of the table in rotation ``rot``,
    the bots by seat; what became of it."""

    round: int
    table: int
    j: int
    rot: int
    bots: tuple[str, ...]
    state: SlotState = SlotState.PENDING
    attempt: int = 0
    match_id: str = ""
    blocked_since: float = 0.0  # when it was first due with a bot absent (0: not waiting for one)
    absent: tuple[str, ...] = ()  # forfeited: the bots that never came
    finished_at: float = 0.0

    @property
    def key(self) -> str:
        return f"r{self.round:02d}-t{self.table:03d}-{self.j:03d}-{self.rot}"

    @property
    def open(self) -> bool:
        return self.state in (SlotState.PENDING, SlotState.QUEUED)

    def match_id_for(self, event_id: str) -> str:
        return f"event-{event_id}-{self.key}" + (f"-a{self.attempt}" if self.attempt else "")

    def seed_for(self, secret: str) -> str:
        """Every rotation of a table's seed ``j`` plays the same seed."""
        return f"{secret}:{self.round}:{self.table}:{self.j}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = self.state.value
        d["bots"], d["absent"] = list(self.bots), list(self.absent)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Slot:
        fields = dict(d)
        fields["state"] = SlotState(d["state"])
        fields["bots"], fields["absent"] = tuple(d["bots"]), tuple(d.get("absent", ()))
        return cls(**fields)

    def but(self, **changes: Any) -> Slot:
        return replace(self, **changes)


def slot_order(slots: Sequence[Slot]) -> list[Slot]:
    """The order slots are due in: round, then seed by seed across tables (a run cut short has played every
    table about as much), then rotation."""
    return sorted(slots, key=lambda s: (s.round, s.j, s.table, s.rot))


def plan_round(event: Event, round_no: int, table_list: Sequence[tuple[int, ...]]) -> list[Slot]:
    """The slots of one round's tables (entrant indices): each table's seeds in every rotation."""
    from arena.events.formats import table_orders

    names = [e.name for e in event.entrants]
    return [
        Slot(round=round_no, table=t, j=j, rot=r, bots=tuple(names[i] for i in order))
        for t, table in enumerate(table_list)
        for j, r, order in table_orders(table, event.games_per_pairing)
    ]
