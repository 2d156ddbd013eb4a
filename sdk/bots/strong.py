"""``StrongBot``: a rollout search on top of the greedy policy, under a time or iteration budget.

For the player to move it takes candidate actions (Shanghaien: all legal actions; Shangri-La: the
``candidates`` best by the one-ply evaluation), and estimates each by *rollouts*: from the position the
candidate leads to, every player, itself included, plays the greedy policy (``sdk.bots.greedy``), chance
is sampled from the engine's outcome probabilities, and the position reached is evaluated with
``sdk.heuristics``. The candidate with the best mean wins. This is the rollout algorithm of policy
iteration: it looks at what the greedy policy's one ply cannot see, the other players' answers and its
own follow-ups (a recruit that prepares a journey, a Shanghai called before the opponent catches up).
What differs between games (which actions are candidates, how a rollout plays and ends, what is learnt
of the opponents) is the game's strategy (``sdk.strategies``), chosen once per search from the game family.

- Shanghaien: a rollout runs to the end of the current round (the next Shanghai) and is valued by the
  score difference with that round's tavern distributed (plus a bonus for winning, at the game's end).
  Rollouts play ``rollout_action``, the greedy policy made cheap (always roll, no ``reroll``): about ten
  times faster than ``greedy_action``, so many more rollouts fit a move. An opponent seen calling
  Shanghai where greedy would roll is played partly at random in the rollouts (``StrongBot.erratic``;
  ``sdk.strategies.shanghaien``).
- Shangri-La: a rollout runs ``depth`` plies (default two rounds of the table: 2 x players) and is valued
  by the seat's margin over its best opponent (the generic ``GameStrategy.rollout``). Each opponent
  plays off the greedy policy, at random, as often as it did so far in the match (``sdk.bots.opponents``):
  a random player's threats are not taken for real ones. Against greedy-like opponents the rollouts are
  deterministic but for tie-breaks, and one pass is all the search does (as in any game without chance).

Rollouts go in passes: each pass gives every candidate still in the race one rollout, and the rollouts of
one pass share their random numbers (common random numbers), so candidates are compared on the same dice
and tie-breaks. After ``MIN_PASSES`` passes, a candidate significantly behind the leader leaves the race
(see ``Search``), and the search stops once a single candidate is left.

Budget: ``time_per_move`` seconds (at most 80% of the referee's time left for the move), or a fixed
number of rollouts ``iterations`` (reproducible: the result depends on the seed only). Whatever the
budget, each candidate gets at least one rollout unless the time runs out first, in which case only
the candidates sampled so far (they go in one-ply order) are compared, and with none sampled the best
candidate by the one-ply evaluation is played. The race may end the search before ``iterations``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sdk.bot import Bot, MatchOutcome, Turn
from sdk.bots.opponents import ModelWatch
from sdk.strategies import OpponentWatch, strategy_of
from sdk.strategies.shanghaien import rollout_action  # re-exported: where it lived before sdk.strategies

MIN_PASSES: Final = 10  # rollouts per candidate before the race may drop one
RACE_Z: Final = 2.0  # standard errors behind the leader that drop a candidate
TIME_SHARE: Final = 0.8  # at most this share of the referee's time left for the move
MEASURED: Final[Mapping[str, int]] = {"shanghaien": 400, "shangrila-3p": 18, "shangrila-4p": 18}
"""Rollouts per move with which benchmarks/strength.py measured the bot (``iterations=MEASURED``)."""

__all__ = ["MEASURED", "Search", "StrongBot", "rollout_action", "search_action"]


class Search:
    """One move's search: candidates, their rollouts in passes, and the choice.

    Every pass gives each candidate still in the race one rollout; rollouts of one pass share their
    random numbers. From ``MIN_PASSES`` passes on, a candidate whose paired differences to the leader
    are significantly negative (mean below ``-RACE_Z`` standard errors) leaves the race; the search
    ends early when one candidate is left.
    """

    def __init__(
        self, state: Any, rng: random.Random, candidates: int, depth: int | None, erratic: Sequence[float] = ()
    ) -> None:
        """``erratic``: per seat, the probability that rollouts play that seat's move at random."""
        self.state = state
        self.strategy = strategy_of(state)
        self.erratic = list(erratic) if any(erratic) else []
        self.rng = rng
        self.seat = state.current_player()
        game = state.game
        self.depth = depth if depth is not None else 2 * game.num_players
        # Without chance, rollouts from the same position repeat themselves but for tie-breaks and erratic seats.
        self.repeatable = not game.has_chance
        scored = self.strategy.action_values(state, self.seat)
        rng.shuffle(scored)
        scored.sort(key=lambda x: -x[1])
        if not self.strategy.every_action_a_candidate:
            scored = scored[:candidates]
        self.actions = [a for a, _ in scored]
        self.children = [state.apply(a) for a in self.actions]
        self.values: list[list[float]] = [[] for _ in self.actions]
        self.alive = list(range(len(self.actions)))
        self.next = 0  # position in ``alive`` of the next rollout of this pass
        self.passes = 0
        self.seed = rng.getrandbits(32)
        self.done = 0

    @property
    def settled(self) -> bool:
        """One candidate left, or (Shangri-La) one pass of rollouts that chance and erratic seats leave out."""
        return len(self.alive) == 1 or (self.repeatable and not self.erratic and self.passes >= 1)

    def step(self, deadline: float | None) -> bool:
        """One rollout of the next candidate; False if the deadline cut it short."""
        i = self.alive[self.next]
        crn = random.Random(self.seed + self.passes)
        v = self.strategy.rollout(self.children[i], self.seat, self.erratic, self.depth, crn, deadline)
        if v is None:
            return False
        self.values[i].append(v)
        self.done += 1
        self.next += 1
        if self.next == len(self.alive):
            self.next = 0
            self.passes += 1
            if self.passes >= MIN_PASSES:
                self._race()
        return True

    def _race(self) -> None:
        n = self.passes
        lead = max(self.alive, key=lambda i: sum(self.values[i][:n]))
        lead_values = self.values[lead]
        keep = []
        for i in self.alive:
            if i != lead:
                diffs = [x - y for x, y in zip(lead_values[:n], self.values[i][:n], strict=True)]
                mean = sum(diffs) / n
                var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
                if mean > 0 and mean * mean * n > RACE_Z * RACE_Z * var:
                    continue
                if var == 0 and mean == 0:
                    continue  # identical so far: keep the leader only
            keep.append(i)
        self.alive = keep

    def best(self) -> Any:
        """The candidate with the best mean (unsampled ones last, in one-ply order)."""
        best_i, best_v = self.alive[0], -math.inf
        for i in self.alive:
            vals = self.values[i]
            if vals and sum(vals) / len(vals) > best_v:
                best_i, best_v = i, sum(vals) / len(vals)
        return self.actions[best_i]


def search_action(
    state: Any,
    rng: random.Random,
    *,
    deadline: float | None = None,
    iterations: int | None = None,
    candidates: int = 6,
    depth: int | None = None,
    erratic: Sequence[float] = (),
) -> Any:
    """The strong bot's choice in ``state`` within ``deadline`` (monotonic time) or ``iterations`` rollouts."""
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    search = Search(state, rng, candidates, depth, erratic)
    if len(search.actions) == 1:
        return search.actions[0]
    while (iterations is None or search.done < iterations) and not search.settled:
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
        iterations: int | Mapping[str, int] | None = None,
        candidates: int = 6,
        depth: int | None = None,
    ) -> None:
        """``iterations``: a fixed number of rollouts per move instead of ``time_per_move`` (one number, or one
        per game id, e.g. ``MEASURED``)."""
        self.rng = random.Random(seed)
        self.time_per_move = time_per_move
        self.iterations = iterations
        self.candidates = candidates
        self.depth = depth
        # Per match (a bot may play several at once, even several seats of one): what it learns of the opponents.
        self._watches: dict[str, OpponentWatch] = {}

    def budget(self, turn: Turn) -> float:
        """Seconds to search: ``time_per_move``, at most 80% of the referee's time left."""
        return max(0.0, min(self.time_per_move, TIME_SHARE * turn.time_left()))

    def watch(self, turn: Turn) -> OpponentWatch:
        """What this bot learns of the opponents in the turn's match: the game strategy's watch (Shanghaien:
        the opponent's voluntary Shanghai calls), else the generic one (``sdk.bots.opponents.ModelWatch``)."""
        watch = self._watches.get(turn.match_id)
        if watch is None:
            watch = self._watches[turn.match_id] = strategy_of(turn.state).new_watch() or ModelWatch()
        return watch

    def erratic(self, turn: Turn) -> list[float]:
        """Per seat, the probability with which rollouts play that seat's move at random instead of greedy.

        Shanghaien: judged by the opponent's voluntary Shanghai calls (greedy rolls whenever a die could
        still gain; a random player calls half the time). Shangri-La: by how far down greedy's ranking each
        opponent's actions fell, against a random player's (``OpponentModel``), from the turn's history;
        none without it."""
        return self.watch(turn).erratic(turn)

    def observe(self, turn: Turn) -> None:
        """Note what the opponents did since this bot's last move in this match (Shanghaien: its calls)."""
        self.watch(turn).observe(turn)

    def on_match_end(self, outcome: MatchOutcome) -> None:
        watch = self._watches.get(outcome.match_id)
        if watch is not None and watch.forget(outcome.seat):
            del self._watches[outcome.match_id]

    def act(self, turn: Turn) -> Any:
        self.observe(turn)
        iterations = self.iterations.get(turn.game_id) if isinstance(self.iterations, Mapping) else self.iterations
        if iterations is not None:
            deadline = time.monotonic() + TIME_SHARE * turn.time_left() if turn.move_ms > 0 else None
        else:
            deadline = time.monotonic() + self.budget(turn)
        action = search_action(
            turn.state,
            self.rng,
            deadline=deadline,
            iterations=iterations,
            candidates=self.candidates,
            depth=self.depth,
            erratic=self.erratic(turn),
        )
        self.watch(turn).played(turn, action)
        return action
