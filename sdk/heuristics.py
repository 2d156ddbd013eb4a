"""Static evaluations of positions, used by the greedy and strong reference bots.

Every evaluation looks at one position only (no search). ``seat_values(state)`` gives one number per
seat (higher is better for that seat, comparable between seats); ``value(state, seat)`` is the seat's
margin over its best opponent, which is what the greedy bot maximises.

The evaluations themselves are game-specific and live with the game's strategy (``sdk.strategies``):

- Shangri-La (``sdk.strategies.shangrila``, S17 counts masters): masters + 0.1 * villages held + 0.05 *
  students outside Stone villages + 0.5 * journey options - 0.5 * journey threats.
- Shanghaien (``sdk.strategies.shanghaien``, H9): the seat's score if the tavern were distributed now (H8).

Their functions are importable from here too, as before they moved.
"""

from __future__ import annotations

from typing import Any

from sdk.strategies import margin, strategy_of
from sdk.strategies.shanghaien import shanghaien_points_now, shanghaien_value, tavern_margin
from sdk.strategies.shangrila import (
    DEFAULT,
    Analysis,
    Weights,
    journey_deltas,
    shangrila_action_values,
    shangrila_final_values,
    shangrila_seat_values,
    shangrila_value,
)

__all__ = [
    "DEFAULT",
    "Analysis",
    "Weights",
    "journey_deltas",
    "margin",
    "seat_values",
    "shanghaien_points_now",
    "shanghaien_value",
    "shangrila_action_values",
    "shangrila_final_values",
    "shangrila_seat_values",
    "shangrila_value",
    "tavern_margin",
    "value",
]


def seat_values(state: Any) -> list[float]:
    """One value per seat, higher is better for that seat."""
    return strategy_of(state).seat_values(state)


def value(state: Any, seat: int) -> float:
    """The seat's margin over its best opponent in ``state``."""
    return strategy_of(state).value(state, seat)
