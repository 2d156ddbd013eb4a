"""The interface through which the reference bots use what they know of one game: ``GameStrategy``.

A strategy holds everything game-specific that ``sdk.heuristics`` and the reference bots
(``sdk.bots.greedy``, ``sdk.bots.strong``) need: the static evaluation of a position (``seat_values``),
the one-ply value of every legal action (``action_values``, what the greedy policy maximises), and the
strong bot's hooks (its rollouts, which actions it searches, what it learns of its opponents). The
defaults here are generic: a new game needs only ``seat_values`` and ``action_values`` to be played by
greedy and strong. ``sdk.strategies`` maps each game family (``Game.family``) to its strategy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Protocol, TypeVar

from referee.games import CHANCE, State

if TYPE_CHECKING:
    from sdk.bot import Turn

EPS: Final = 1e-9
"""Values closer than this are equal (ties are then broken at random)."""

S = TypeVar("S", bound=State)


def margin(values: Sequence[float], seat: int) -> float:
    """The seat's value less the best other seat's."""
    return values[seat] - max(v for c, v in enumerate(values) if c != seat)


class OpponentWatch(Protocol):
    """What the strong bot learns of its opponents during one match, from the turns it is given.

    One watch serves every seat a bot plays in a match. ``observe`` sees each turn before the search,
    ``erratic`` says per seat how often rollouts should play that seat at random rather than greedy,
    ``played`` sees the action chosen, and ``forget(seat)`` ends a seat's match (True: forget the watch).
    """

    def observe(self, turn: Turn) -> None: ...
    def erratic(self, turn: Turn) -> list[float]: ...
    def played(self, turn: Turn, action: Any) -> None: ...
    def forget(self, seat: int) -> bool: ...


class GameStrategy(Generic[S]):
    """The reference bots' knowledge of one game family; ``S`` is its engine's state type."""

    family: ClassVar[str]
    """The ``Game.family`` this strategy plays."""

    every_action_a_candidate: ClassVar[bool] = False
    """The strong bot searches every legal action (True) or only its ``candidates`` best by ``action_values``."""

    # ------------------------------------------------------------------- evaluation (required)

    def seat_values(self, state: S) -> list[float]:
        """One value per seat of ``state``, higher is better for that seat, comparable between seats."""
        raise NotImplementedError

    def action_values(self, state: S, seat: int) -> list[tuple[Any, float]]:
        """Each legal action of ``state`` (a player's node) with its one-ply value for ``seat``."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------ generic

    def value(self, state: S, seat: int) -> float:
        """The seat's margin over its best opponent in ``state``."""
        return margin(self.seat_values(state), seat)

    def greedy_action(self, state: S, rng: random.Random) -> Any:
        """The best action one ply ahead for the player to move (``action_values``); ties broken with ``rng``."""
        legal = state.legal_actions()
        if len(legal) == 1:
            return legal[0]
        seat = state.current_player()
        best: list[Any] = []
        best_value = float("-inf")
        for action, v in self.action_values(state, seat):
            if v > best_value + EPS:
                best, best_value = [action], v
            elif v > best_value - EPS:
                best.append(action)
        return best[0] if len(best) == 1 else rng.choice(best)

    def rollout(
        self,
        state: S,
        seat: int,
        erratic: Sequence[float],
        depth: int,
        rng: random.Random,
        deadline: float | None,
    ) -> float | None:
        """The strong bot's estimate of ``state`` for ``seat``; None if ``deadline`` (monotonic) cut it short.

        This default plays ``depth`` plies: chance sampled from the engine's probabilities, each seat the
        greedy policy, or with probability ``erratic[seat]`` (when ``erratic`` is not empty) a random
        action; the position reached is valued by ``value``.
        """
        for _ in range(depth):
            if state.is_terminal():
                break
            if deadline is not None and time.monotonic() > deadline:
                return None
            player = state.current_player()
            if player == CHANCE:
                outcomes = state.chance_outcomes()
                state = state.apply(rng.choices([a for a, _ in outcomes], [p for _, p in outcomes])[0])
            elif erratic and rng.random() < erratic[player]:
                state = state.apply(rng.choice(state.legal_actions()))
            else:
                state = state.apply(self.greedy_action(state, rng))
        return self.value(state, seat)

    def new_watch(self) -> OpponentWatch | None:
        """A fresh opponent watch for one match; None: the generic one (``sdk.bots.opponents.ModelWatch``)."""
        return None
