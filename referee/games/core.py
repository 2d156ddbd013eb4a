"""What every engine shares: player sentinels, the action base type and the two action errors.

Engines are pure: no I/O beyond loading their static data once, no clocks, no global random state.
Chance is a player (``CHANCE``) whose outcomes are listed with probabilities, so a game replays
exactly from its action history.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Protocol, Self, TypeVar

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


class State(Protocol):
    """The engine surface of RULINGS.md, as the referee, the SDK and outside tests use it."""

    def current_player(self) -> int: ...
    def legal_actions(self) -> list[Any]: ...
    def chance_outcomes(self) -> list[tuple[Any, float]]: ...
    def chance_outcomes_exact(self) -> list[tuple[Any, Fraction]]: ...
    def apply(self, action: Any) -> Self: ...
    def parse_action(self, text: str) -> Any: ...
    def is_terminal(self) -> bool: ...
    def scores(self) -> list[int]: ...
    def ranks(self) -> list[int]: ...
    def view(self, seat: int) -> Any: ...
    def render(self) -> str: ...


class Game(Protocol):
    """Static facts of a game id and the factory of its initial state."""

    game_id: str
    num_players: int
    has_chance: bool
    perfect_information: bool

    def new_state(self) -> State: ...
    def action_from_text(self, text: str) -> Any: ...


def shared_ranks(keys: Sequence[K]) -> list[int]:
    """Place of each seat, 1 = best; seats with equal keys share the better place."""
    return [1 + sum(1 for other in keys if other > key) for key in keys]
