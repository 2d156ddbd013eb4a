"""What a bot learns of its opponents in a match: how far each plays from the greedy policy.

The strong bot's rollouts play every seat by the greedy policy. That is right against greedy and far off
against a player who does something else: a random player's "threats" never come, and a search that
guards against them wastes its moves. ``OpponentModel`` replays the match's history (``Turn.history``)
and, at every decision of an opponent, ranks the legal actions by the greedy policy's values
(``sdk.bots.greedy.action_values``) and notes the *shortfall* of the action played: the share of the
other actions that greedy values strictly higher (0 for one of greedy's best, 1 for its worst). It also
notes what a uniformly random player's shortfall would be in that position on average (about a half,
less with ties: its *room*). A seat's *erratic* rate is ``shortfall / (room + PRIOR)`` over the match:
0 for greedy, about 1 for a random player, small for a player that deviates from greedy to actions greedy
also rates well (another searching bot); ``PRIOR`` greedy-like pseudo-decisions make every seat start as
greedy. Rollouts play that seat's move at random with that probability.

Only decisions with a choice count (a single legal action says nothing). The model is incremental: each
turn replays only the plies since the last one (one greedy evaluation per opponent decision).

``ModelWatch`` is the strong bot's generic opponent watch (``sdk.strategies.OpponentWatch``): one
``OpponentModel`` per seat the bot plays in a match. A game's strategy may bring its own watch instead
(Shanghaien does).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from sdk.bots.greedy import EPS, action_values

if TYPE_CHECKING:
    from sdk.bot import Turn

PRIOR: Final = 2.0  # greedy-like pseudo-decisions every seat starts with


def shortfall(state: Any, action: Any) -> tuple[float, float]:
    """In ``state``: the share of the other legal actions greedy values strictly higher than ``action``,
    and the same share averaged over all legal actions (a uniformly random player's expectation)."""
    values = action_values(state, state.current_player())
    n = len(values)
    ordered = sorted(v for _, v in values)

    def higher(v: float) -> int:
        return n - bisect_right(ordered, v + EPS)

    played = next(v for a, v in values if a == action)
    return higher(played) / (n - 1), sum(higher(v) for v in ordered) / (n * (n - 1))


class OpponentModel:
    """Per seat of one match: the shortfall of its actions from greedy's best, and a random player's."""

    def __init__(self, state: Any, seat: int) -> None:
        """``state``: the match's initial state; ``seat``: the bot's own seat (never modelled)."""
        self.state = state
        self.seat = seat
        self.ply = 0
        n = state.game.num_players
        self.decisions = [0] * n
        self.shortfall = [0.0] * n
        self.room = [0.0] * n

    def update(self, history: Sequence[Any]) -> None:
        """Account for the actions of ``history`` (the match's whole history) not yet seen."""
        for action in history[self.ply :]:
            state = self.state
            player = state.current_player()
            if 0 <= player != self.seat and len(state.legal_actions()) > 1:
                played, uniform = shortfall(state, action)
                self.decisions[player] += 1
                self.shortfall[player] += played
                self.room[player] += uniform
            self.state = state.apply(action)
            self.ply += 1

    def erratic(self) -> list[float]:
        """Per seat, the estimated probability that it plays at random rather than greedy (0 for the bot)."""
        return [min(1.0, s / (room + PRIOR)) for s, room in zip(self.shortfall, self.room, strict=True)]


class ModelWatch:
    """The generic opponent watch: per seat the bot plays in the match, an ``OpponentModel`` fed with the
    turn's history. A turn without the match's history (a bare ``Turn``) teaches nothing: ``[]``."""

    def __init__(self) -> None:
        self.models: dict[int, OpponentModel] = {}

    def observe(self, turn: Turn) -> None:
        pass  # ``erratic`` reads the turn's history

    def erratic(self, turn: Turn) -> list[float]:
        if len(turn.history) != turn.ply:
            return []  # no history to learn from (a bare Turn)
        model = self.models.get(turn.seat)
        if model is None or model.ply > turn.ply:
            model = self.models[turn.seat] = OpponentModel(turn.state.game.new_state(), turn.seat)
        model.update(turn.history)
        return model.erratic()

    def played(self, turn: Turn, action: Any) -> None:
        pass

    def forget(self, seat: int) -> bool:
        self.models.pop(seat, None)
        return not self.models
