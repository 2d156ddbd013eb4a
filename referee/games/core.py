"""What every engine shares: player sentinels, the action base type and the two action errors.

Engines are pure: no I/O beyond loading their static data once, no clocks, no global random state.
Chance is a player (``CHANCE``) whose outcomes are listed with probabilities, so a game replays
exactly from its action history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from fractions import Fraction
from typing import Any, ClassVar, Protocol, Self, TypeVar

CHANCE = -1
"""``current_player()`` at a chance node: the referee samples an outcome from the match seed."""

TERMINAL = -2
"""``current_player()`` once the game is over."""


K = TypeVar("K", tuple[int, ...], int)


class ActionError(ValueError):
    """Base of the errors ``parse_action`` and ``apply`` raise."""


class ActionSyntaxError(ActionError):
    """The text is not an action of this game's notation, in any state."""


class IllegalActionError(ActionError):
    """A well-formed action that the rules forbid in this state; the message says why."""


class Action:
    """An interned action value: one instance per distinct action of a game.

    Equality is identity, which is exact because engines build every action once, in a table,
    and parsing returns the table's instance. ``str(action)`` is the canonical notation.
    Actions define no ordering (sort by ``str`` or ``code``): a Python-level comparison method
    would slow every ``action in list`` check, which the referee does on every move.
    """

    __slots__ = ("code", "text")

    def __init__(self, code: int, text: str) -> None:
        self.code = code
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


@dataclass(frozen=True, slots=True)
class TimeControl:
    """A match's pace in milliseconds. Each game states its default (``Game.time_control``), as a
    Kaggle environment's spec states its timeouts; a match request may override any field.

    ``first_move_ms`` and ``move_ms`` are the limits of a seat's first and later moves, ``bank_ms`` a
    reserve that overruns draw on, ``grace_ms`` network margin never reported to the bot,
    ``disconnect_grace_ms`` how long a dropped seat may take to come back, ``join_timeout_ms`` how long
    a match waits for its bots to join. The referee's clock that applies it is ``referee.timecontrol``.
    """

    first_move_ms: int
    move_ms: int
    bank_ms: int
    grace_ms: int = 200
    disconnect_grace_ms: int = 10_000
    join_timeout_ms: int = 30_000

    MAX_MS: ClassVar[int] = 3_600_000  # no field may exceed an hour ...
    FIELD_MAX_MS: ClassVar[Mapping[str, int]] = {"grace_ms": 10_000, "disconnect_grace_ms": 120_000,
                                                 "join_timeout_ms": 300_000}  # ... nor these  # fmt: skip

    def with_overrides(self, **changes: int | None) -> TimeControl:
        """This control with the given fields changed; a field given as None or 0 keeps its value.
        ValueError for an unknown field or a value that is not a whole number of ms in [0, MAX_MS]."""
        known = self.field_names()
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown time control field(s): {', '.join(sorted(unknown))}")
        for name, value in changes.items():
            top = self.FIELD_MAX_MS.get(name, self.MAX_MS)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top):
                raise ValueError(f"time control values are whole milliseconds between 0 and {self.MAX_MS:,} "
                                 f"({name} at most {top:,})")  # fmt: skip
        return replace(self, **{k: v for k, v in changes.items() if v})

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeControl:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.field_names()})

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in fields(cls))


class State(Protocol):
    """The engine surface of RULINGS.md, as the referee, the SDK and outside tests use it.

    Every engine's state class satisfies it (``tests/test_engine_protocol.py`` has mypy check that).
    """

    @property
    def game(self) -> Game:
        """The game this state belongs to: its static facts (``Game``)."""
        ...

    def current_player(self) -> int:
        """A seat (0-based), ``CHANCE`` or ``TERMINAL``."""
        ...

    def legal_actions(self) -> list[Any]:
        """The legal actions (at a chance node: the possible outcomes); empty at the end."""
        ...

    def chance_outcomes(self) -> list[tuple[Any, float]]:
        """(outcome, probability) at a chance node; empty at a player's node and at the end."""
        ...

    def chance_outcomes_exact(self) -> list[tuple[Any, Fraction]]:
        """As ``chance_outcomes``, with exact probabilities (``referee.chance`` documents its draw on these)."""
        ...

    def chance_weights(self) -> list[tuple[Any, int]]:
        """As ``chance_outcomes_exact``, with positive integer weights (probability = weight / sum of
        weights), the same outcomes in the same order; empty where there is no chance node. The referee
        samples from these (``referee.chance.sample``): integer arithmetic, the same outcome as the fractions."""
        ...

    def apply(self, action: Any) -> Self:
        """The next state; this one is unchanged. ``IllegalActionError`` for an action not legal here."""
        ...

    def parse_action(self, text: str) -> Any:
        """The legal action written ``text``; ``ActionSyntaxError`` or ``IllegalActionError`` otherwise."""
        ...

    def is_terminal(self) -> bool: ...

    def scores(self) -> list[int]:
        """Each seat's score: the final score at a terminal state; before the end, the score as the
        position stands (what the referee reports for a match cut short)."""
        ...

    def ranks(self) -> list[int]:
        """At a terminal state, each seat's place (1 = best; tied seats share the better place)."""
        ...

    def view(self, seat: int) -> Any:
        """What ``seat`` is shown (a typed view dataclass)."""
        ...

    def render(self) -> str:
        """A text picture of the position."""
        ...

    def is_milestone(self, before: Self) -> bool:
        """Whether a picture of this position helps a reader of the game, ``before`` being the position
        one action earlier (e.g. the end of setup, a journey, the end of a round)."""
        ...


class Game(Protocol):
    """Static facts of a game id and the factory of its initial state."""

    @property
    def game_id(self) -> str: ...

    @property
    def family(self) -> str:
        """The rules this game id plays (``shangrila`` for both ``shangrila-3p`` and ``shangrila-4p``): the key
        of per-game code outside the engines, such as the reference bots' strategies (``sdk.strategies``)."""
        ...

    @property
    def num_players(self) -> int: ...

    @property
    def has_chance(self) -> bool: ...

    @property
    def perfect_information(self) -> bool: ...

    @property
    def time_control(self) -> TimeControl:
        """The default pace of a match."""
        ...

    def new_state(self) -> State: ...
    def action_from_text(self, text: str) -> Any: ...


def shared_ranks(keys: Sequence[K]) -> list[int]:
    """Place of each seat, 1 = best; seats with equal keys share the better place."""
    return [1 + sum(1 for other in keys if other > key) for key in keys]
