"""What the reference bots know of Shanghaien (H1-H10): evaluation, one-ply values, round rollouts.

Evaluation (H9): a seat's value is its score if the tavern were distributed now (H8).

Greedy's one ply, chance included: ``roll`` is valued as the expectation, over the 21 dice outcomes, of
the best direct placement (``place`` or ``both``); ``reroll`` likewise; ``wild``/``adjust`` as the best
placement that follows them. On equal values ``shanghai`` is preferred to ``roll`` (it denies the
opponent's dice).

Strong: every legal action is a candidate; a rollout runs to the end of the current round (the next
Shanghai) and is valued by the score difference with that round's tavern distributed (plus a bonus for
winning, at the game's end). Rollouts play ``rollout_action``, the greedy policy made cheap (always roll,
no ``reroll``). An opponent seen calling Shanghai where greedy would roll is played partly at random in
the rollouts (``CallWatch``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from referee.games.shanghaien import ShanghaienState
from referee.games.shanghaien.actions import Kind
from referee.games.shanghaien.deck import CARD_TYPES, DICE_PER_PLAYER, NATIONS, TRICKS
from referee.games.shanghaien.state import Phase
from sdk.strategies.base import EPS, GameStrategy

if TYPE_CHECKING:
    from sdk.bot import Turn

NN: Final = len(NATIONS)
NT: Final = len(TRICKS)

SHANGHAI_BONUS: Final = 1e-6  # prefer calling Shanghai to rolling when they are worth the same
WIN_BONUS: Final = 10.0  # points added to a rollout's value for a won game
_DIRECT: Final = (Kind.PLACE, Kind.BOTH)

_CARD_NATION: Final = tuple(c.nation for c in CARD_TYPES)
_CARD_VALUE: Final = tuple(c.value for c in CARD_TYPES)


# ------------------------------------------------------------------------------- evaluation


def shanghaien_points_now(state: ShanghaienState, tavern: bool = True) -> list[float]:
    """Each seat's H9 score if the tavern were distributed now (the final score at the end); with
    ``tavern`` False, the score of the crews won so far, the tavern left out."""
    if state.is_terminal():
        return [float(p) for p in state.points()]
    totals = list(state.nation_total)
    tricks = state.tricks
    held = [sum(tricks[:NT]), sum(tricks[NT:])]
    if tavern:
        dice_on = state.dice_on
        for position, card in enumerate(state.tavern):
            c0 = dice_on[2 * position]
            c1 = dice_on[2 * position + 1]
            if c0 > c1:
                taker = 0
            elif c1 > c0:
                taker = 1
            elif c0:
                taker = state.taker(position)
                if taker < 0:
                    continue
            else:
                continue
            nation = _CARD_NATION[card]
            if nation < 0:
                held[taker] += 1
            else:
                totals[taker * NN + nation] += _CARD_VALUE[card]
    p0 = float(held[0])
    p1 = float(held[1])
    for nation in range(NN):
        t0 = totals[nation]
        t1 = totals[NN + nation]
        if t0 > t1:
            p0 += t1 if t1 else t0
        elif t1 > t0:
            p1 += t0 if t0 else t1
    return [p0, p1]


def shanghaien_value(state: ShanghaienState, seat: int) -> float:
    """The H9 score difference if the current tavern were distributed now."""
    pts = shanghaien_points_now(state)
    return pts[seat] - pts[1 - seat]


def tavern_margin(state: ShanghaienState, seat: int) -> float:
    """What distributing the tavern now would add to the seat's score difference."""
    now = shanghaien_points_now(state)
    before = shanghaien_points_now(state, tavern=False)
    return now[seat] - now[1 - seat] - before[seat] + before[1 - seat]


# ------------------------------------------------------------------------------ greedy's ply


def best_direct_placement(state: ShanghaienState, seat: int) -> float:
    """At a PLACE node: the best value of a ``place`` or ``both`` (no other trick)."""
    return max(shanghaien_value(state.apply(a), seat) for a in state.legal_actions() if a.kind in _DIRECT)


def expected_after_dice(state: ShanghaienState, seat: int) -> float:
    """At a DICE node: the expectation over the dice of the best direct placement."""
    return sum(p * best_direct_placement(state.apply(d), seat) for d, p in state.chance_outcomes())


def shanghaien_action_value(state: ShanghaienState, action: Any, seat: int) -> float:
    after = state.apply(action)
    kind = action.kind
    if kind is Kind.ROLL or kind is Kind.REROLL:
        return expected_after_dice(after, seat)
    if kind is Kind.WILD or kind is Kind.ADJUST:
        return best_direct_placement(after, seat)
    bonus = SHANGHAI_BONUS if kind is Kind.SHANGHAI else 0.0
    return shanghaien_value(after, seat) + bonus


# --------------------------------------------------------------------------- strong's search


def rollout_action(state: ShanghaienState, rng: random.Random) -> Any:
    """The greedy policy made cheap for rollouts: roll whenever allowed (greedy does, but when no die
    could gain), and place by the one-ply value, ``reroll`` left out (greedy values it by expectation)."""
    legal = state.legal_actions()
    if state.phase == Phase.TURN:
        return legal[0]  # roll when legal: the engine lists it first
    seat = state.player
    best: list[Any] = []
    best_value = -math.inf
    for a in legal:
        kind = a.kind
        if kind is Kind.PLACE or kind is Kind.BOTH:
            v = shanghaien_value(state.apply(a), seat)
        elif kind is Kind.REROLL:
            continue
        else:
            v = best_direct_placement(state.apply(a), seat)
        if v > best_value + EPS:
            best, best_value = [a], v
        elif v > best_value - EPS:
            best.append(a)
    return best[0] if len(best) == 1 else rng.choice(best)


class CallWatch:
    """The opponent's voluntary Shanghai calls (where it could have rolled) and its rolls where it could
    have called, noted between this bot's moves. Greedy rolls whenever a die could still gain; a random
    player calls half the time: the rate ``2 * calls / (calls + rolls + 2)`` is how often rollouts play
    the opponent at random."""

    def __init__(self) -> None:
        self.prev: ShanghaienState | None = None  # the position this bot's last action led to
        self.calls = 0
        self.rolls = 0

    def observe(self, turn: Turn) -> None:
        """Note what the opponent did since this bot's last move."""
        state = turn.state
        prev = self.prev
        if prev is None:
            return
        opp = 1 - turn.seat
        if prev.phase == Phase.TURN and prev.player == opp and 2 <= prev.placed[opp] <= DICE_PER_PLAYER - 2:
            if state.round == prev.round:
                self.rolls += 1
            elif state.last_caller == opp:
                self.calls += 1

    def erratic(self, turn: Turn) -> list[float]:
        rate = min(1.0, 2 * self.calls / (self.calls + self.rolls + 2))
        return [rate if seat != turn.seat else 0.0 for seat in range(2)]

    def played(self, turn: Turn, action: Any) -> None:
        self.prev = turn.state.apply(action)

    def forget(self, seat: int) -> bool:
        return True  # one record per match, whichever seat it served


class ShanghaienStrategy(GameStrategy[ShanghaienState]):
    family = "shanghaien"
    every_action_a_candidate = True

    def seat_values(self, state: ShanghaienState) -> list[float]:
        return shanghaien_points_now(state)

    def action_values(self, state: ShanghaienState, seat: int) -> list[tuple[Any, float]]:
        return [(a, shanghaien_action_value(state, a, seat)) for a in state.legal_actions()]

    def rollout(
        self,
        state: ShanghaienState,
        seat: int,
        erratic: Sequence[float],
        depth: int,
        rng: random.Random,
        deadline: float | None,
    ) -> float | None:
        """To the end of the round (``depth`` is not used): the opponent plays at random with probability
        ``erratic[opponent]``, otherwise both play ``rollout_action``; valued by ``shanghaien_value``
        plus ``WIN_BONUS`` for a game won (less for one lost)."""
        opponent_erratic = erratic[1 - seat] if erratic else 0.0
        while state.phase != Phase.DEAL and state.phase != Phase.OVER:
            if deadline is not None and time.monotonic() > deadline:
                return None
            if state.phase == Phase.DICE:
                outcomes = state.chance_outcomes()
                action = rng.choices([a for a, _ in outcomes], [p for _, p in outcomes])[0]
            elif state.player != seat and opponent_erratic and rng.random() < opponent_erratic:
                action = rng.choice(state.legal_actions())
            else:
                action = rollout_action(state, rng)
            state = state.apply(action)
        v = shanghaien_value(state, seat)
        if state.phase == Phase.OVER and v:
            v += WIN_BONUS if v > 0 else -WIN_BONUS
        return v

    def new_watch(self) -> CallWatch:
        return CallWatch()


STRATEGY: Final = ShanghaienStrategy()
