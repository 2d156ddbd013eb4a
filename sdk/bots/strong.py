"""``StrongBot``: a rollout search on top of the greedy policy, under a time or iteration budget.

For the player to move it takes candidate actions (Shanghaien: all legal actions; Shangri-La: the
``candidates`` best by the one-ply evaluation), and estimates each by *rollouts*: from the position the
candidate leads to, every player, itself included, plays the greedy policy (``sdk.bots.greedy``), chance
is sampled from the engine's outcome probabilities, and the position reached is evaluated with
``sdk.heuristics``. The candidate with the best mean wins. This is the rollout algorithm of policy
iteration: it looks at what the greedy policy's one ply cannot see, the other players' answers and its
own follow-ups (a recruit that prepares a journey, a Shanghai called before the opponent catches up).

- Shanghaien: a rollout runs to the end of the current round (the next Shanghai) and is valued by the
  score difference with that round's tavern distributed (plus a bonus for winning, at the game's end).
  Candidates are sampled in turn, and the i-th rollout of every candidate uses the same random numbers
  (common random numbers), so candidates are compared on the same dice.
- Shangri-La: a rollout runs ``depth`` plies (default two rounds of the table: 2 x players) and is valued
  by the seat's margin over its best opponent (``sdk.heuristics.shangrila_value``).

Budget: ``time_per_move`` seconds (at most 80% of the referee's time left for the move), or a fixed
number of rollouts ``iterations`` (reproducible: the result depends on the seed only). Whatever the
budget, each candidate gets at least one rollout unless the time runs out first, in which case the
best candidate by the one-ply evaluation is played.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Final

from referee.games.shanghaien import ShanghaienState
from referee.games.shanghaien.actions import SHANGHAI
from referee.games.shanghaien.deck import DICE_PER_PLAYER
from referee.games.shanghaien.state import Phase
from referee.games.shangrila import ShangriLaState
from sdk.bot import Bot, Turn
from sdk.bots.greedy import action_values, greedy_action
from sdk.heuristics import shanghaien_value, shangrila_value, tavern_margin

WIN_BONUS: Final = 10.0  # Shanghaien: points added to a rollout's value for a won game
STOP_MARGIN: float | None = None
TIME_SHARE: Final = 0.8  # at most this share of the referee's time left for the move


class Search:
    """One move's search: candidates, their rollout statistics, and the choice."""

    def __init__(
        self, state: Any, rng: random.Random, candidates: int, depth: int | None, erratic: float = 0.0
    ) -> None:
        self.state = state
        self.erratic = erratic
        self.rng = rng
        self.seat = state.current_player()
        self.shanghaien = isinstance(state, ShanghaienState)
        n = 2 if self.shanghaien else state.game.num_players
        self.depth = depth if depth is not None else 2 * n
        scored = action_values(state, self.seat)
        rng.shuffle(scored)
        scored.sort(key=lambda x: -x[1])
        if not self.shanghaien:
            scored = scored[:candidates]
        self.actions = [a for a, _ in scored]
        self.children = [state.apply(a) for a in self.actions]
        self.sums = [0.0] * len(self.actions)
        self.counts = [0] * len(self.actions)
        self.seed = rng.getrandbits(32)
        self.done = 0

    def step(self, deadline: float | None) -> bool:
        """One rollout of the next candidate in turn; False if the deadline cut it short."""
        k = len(self.actions)
        i = self.done % k
        crn = random.Random(self.seed + self.done // k)
        if self.shanghaien:
            v = self._round_rollout(self.children[i], crn, deadline)
        else:
            v = self._depth_rollout(self.children[i], crn, deadline)
        if v is None:
            return False
        self.sums[i] += v
        self.counts[i] += 1
        self.done += 1
        return True

    def best(self) -> Any:
        """The candidate with the best mean (unsampled ones last, in one-ply order)."""
        best_i, best_v = 0, -math.inf
        for i, (s, c) in enumerate(zip(self.sums, self.counts, strict=True)):
            if c and s / c > best_v:
                best_i, best_v = i, s / c
        return self.actions[best_i]

    # ----------------------------------------------------------------------- rollouts

    def _round_rollout(self, state: ShanghaienState, rng: random.Random, deadline: float | None) -> float | None:
        seat = self.seat
        erratic = self.erratic
        while state.phase != Phase.DEAL and state.phase != Phase.OVER:
            if deadline is not None and time.monotonic() > deadline:
                return None
            if state.phase == Phase.DICE:
                outcomes = state.chance_outcomes()
                action = rng.choices([a for a, _ in outcomes], [p for _, p in outcomes])[0]
            elif (
                STOP_MARGIN is not None
                and state.phase == Phase.TURN
                and state.player == seat
                and 2 <= state.placed[seat] <= DICE_PER_PLAYER - 2
                and tavern_margin(state, seat) >= STOP_MARGIN
            ):
                action = SHANGHAI
            elif state.player != seat and erratic and rng.random() < erratic:
                action = rng.choice(state.legal_actions())
            else:
                action = greedy_action(state, rng)
            state = state.apply(action)
        v = shanghaien_value(state, seat)
        if state.phase == Phase.OVER and v:
            v += WIN_BONUS if v > 0 else -WIN_BONUS
        return v

    def _depth_rollout(self, state: ShangriLaState, rng: random.Random, deadline: float | None) -> float | None:
        for _ in range(self.depth):
            if state.is_terminal():
                break
            if deadline is not None and time.monotonic() > deadline:
                return None
            state = state.apply(greedy_action(state, rng))
        return shangrila_value(state, self.seat)


def search_action(
    state: Any,
    rng: random.Random,
    *,
    deadline: float | None = None,
    iterations: int | None = None,
    candidates: int = 6,
    depth: int | None = None,
    erratic: float = 0.0,
) -> Any:
    """The strong bot's choice in ``state`` within ``deadline`` (monotonic time) or ``iterations`` rollouts."""
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    search = Search(state, rng, candidates, depth, erratic)
    if len(search.actions) == 1:
        return search.actions[0]
    while iterations is None or search.done < iterations:
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not search.step(deadline):
            break
    return search.best()


class StrongBot(Bot):
    name = "strong"
    version = "1.0.0"

    def __init__(
        self,
        seed: int | str | None = None,
        time_per_move: float = 0.5,
        iterations: int | None = None,
        candidates: int = 6,
        depth: int | None = None,
    ) -> None:
        self.rng = random.Random(seed)
        self.time_per_move = time_per_move
        self.iterations = iterations
        self.candidates = candidates
        self.depth = depth
        self._match: str | None = None
        self._after: Any = None  # the position this bot's last action led to, in match ``_match``
        self._calls = 0  # Shanghaien: the opponent's Shanghai calls when it could have rolled
        self._rolls = 0  # ... and its rolls when it could have called Shanghai

    def budget(self, turn: Turn) -> float:
        """Seconds to search: ``time_per_move``, at most 80% of the referee's time left."""
        return max(0.0, min(self.time_per_move, TIME_SHARE * turn.time_left()))

    def erratic(self) -> float:
        """Shanghaien: how far the opponent is from the greedy policy, judged by its voluntary Shanghai
        calls (greedy rolls whenever a die could still gain; a random player calls half the time):
        the probability with which rollouts let it play a random action instead of the greedy one."""
        return min(1.0, 2 * self._calls / (self._calls + self._rolls + 2))

    def observe(self, turn: Turn) -> None:
        """Note what the opponent did since this bot's last move (Shanghaien only)."""
        state = turn.state
        prev = self._after
        if turn.match_id != self._match:
            self._match = turn.match_id
            self._calls = self._rolls = 0
            return
        if not isinstance(state, ShanghaienState) or not isinstance(prev, ShanghaienState):
            return
        opp = 1 - turn.seat
        if prev.phase == Phase.TURN and prev.player == opp and 2 <= prev.placed[opp] <= DICE_PER_PLAYER - 2:
            if state.round == prev.round:
                self._rolls += 1
            elif state.last_caller == opp:
                self._calls += 1

    def act(self, turn: Turn) -> Any:
        self.observe(turn)
        if self.iterations is not None:
            deadline = time.monotonic() + TIME_SHARE * turn.time_left() if turn.move_ms > 0 else None
        else:
            deadline = time.monotonic() + self.budget(turn)
        action = search_action(
            turn.state,
            self.rng,
            deadline=deadline,
            iterations=self.iterations,
            candidates=self.candidates,
            depth=self.depth,
            erratic=self.erratic(),
        )
        self._after = turn.state.apply(action)
        return action
