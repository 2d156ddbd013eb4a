"""The Shanghaien rules engine (RULINGS H1-H10).

A round: six ``deal`` chance events fill the tavern; then the players alternate, each either
rolling (``roll``, a ``dice A B`` chance event, then a placement or a dirty trick) or calling
``shanghai``, which distributes the tavern (H8) and opens the next round. Fields are tuples, so a
new state shares whatever the action did not change.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import compress
from typing import Final, Self

from referee.games.core import CHANCE, TERMINAL, IllegalActionError, TimeControl, shared_ranks
from referee.games.shanghaien import actions as A
from referee.games.shanghaien.actions import Kind, ShanghaienAction
from referee.games.shanghaien.deck import (
    ADJUST,
    BOTH,
    CARD_TYPES,
    DECK_COUNTS,
    DECK_SIZE,
    DICE_PER_PLAYER,
    NATIONS,
    REROLL,
    ROUNDS,
    TAVERN_SIZE,
    TRICKS,
    WILD_VALUE,
)
from referee.games.shanghaien.render import render as render_state
from referee.games.shanghaien.view import NationScore, ScoreSheet, ShanghaienView


class Phase:
    DEAL: Final = 0  # chance: the next tavern card
    TURN: Final = 1  # the player to move rolls or calls Shanghai
    DICE: Final = 2  # chance: two dice (after roll or reroll)
    PLACE: Final = 3  # the player places a rolled die, or first plays a dirty trick
    OVER: Final = 4


NT: Final = len(TRICKS)
NN: Final = len(NATIONS)
_DICE_OUTCOMES: Final = tuple((action, Fraction(1 if a == b else 2, 36)) for (a, b), action in sorted(A.DICE.items()))
_DICE_FLOAT: Final = tuple((action, float(p)) for action, p in _DICE_OUTCOMES)
_DICE_ACTIONS: Final = tuple(action for action, _ in _DICE_OUTCOMES)
_DICE_WEIGHTS: Final = tuple((action, int(p * 36)) for action, p in _DICE_OUTCOMES)

# Action kinds as module constants: the hot paths compare with ``is`` and skip the enum class look-up.
_DEAL: Final = Kind.DEAL
_DICE: Final = Kind.DICE
_ROLL: Final = Kind.ROLL
_PLACE: Final = Kind.PLACE
_SHANGHAI: Final = Kind.SHANGHAI


class ShanghaienGame:
    """Static facts of ``shanghaien`` and the factory of its initial state."""

    game_id: Final = "shanghaien"
    family: Final = "shanghaien"
    num_players: Final = 2
    has_chance: Final = True
    perfect_information: Final = True  # everything dealt or rolled is public (H10)
    colours: Final = ("seat 0", "seat 1")
    # Short decisions, many of them: a game is ~70 player decisions per seat.
    time_control: Final = TimeControl(first_move_ms=5_000, move_ms=1_000, bank_ms=10_000)

    def new_state(self) -> ShanghaienState:
        return ShanghaienState(self)

    def action_from_text(self, text: str) -> ShanghaienAction:
        return A.parse(text)

    def __repr__(self) -> str:
        return "ShanghaienGame('shanghaien')"


class ShanghaienState:
    """A position. ``apply`` returns a new state; a state is never changed after it is built."""

    __slots__ = (
        "_legal",
        "crews",
        "deck",
        "deck_left",
        "dice_on",
        "discards",
        "game",
        "last_caller",
        "nation_total",
        "orient",
        "phase",
        "placed",
        "player",
        "rolled",
        "round",
        "starter",
        "tavern",
        "trick_used",
        "tricks",
        "wilds",
    )

    game: ShanghaienGame
    phase: int
    round: int
    starter: int  # who opens the current round (H3)
    player: int  # who moves next at a player node; at DEAL, who will open the round
    deck: tuple[int, ...]  # copies left undealt, per card type
    deck_left: int
    tavern: tuple[int, ...]  # card types at positions 1..6, in the order dealt
    dice_on: tuple[int, ...]  # dice per tavern position and seat: [position * 2 + seat]
    orient: int  # 0 not chosen, 1 fwd, 2 rev (H4)
    placed: tuple[int, ...]  # dice each seat placed this round
    rolled: tuple[int, ...]  # the two dice just rolled, sorted, while phase is PLACE
    trick_used: tuple[bool, ...]  # a dirty trick played this round, per seat (H6)
    tricks: tuple[int, ...]  # dirty-tricks cards held unplayed: [seat * 3 + trick]
    nation_total: tuple[int, ...]  # crew strength: [seat * 8 + nation], wild sailors count 2
    crews: tuple[tuple[int, ...], ...]  # sailor card types won, per seat
    wilds: tuple[tuple[tuple[int, int], ...], ...]  # (trick, nation) played as wild sailors, per seat
    discards: tuple[int, ...]  # card types out of the game: undistributed, or tricks played for action
    last_caller: int  # who called the last Shanghai, -1 before any

    def __init__(self, game: ShanghaienGame) -> None:
        self.game = game
        self.phase = Phase.DEAL
        self.round = 1
        self.starter = 0
        self.player = 0
        self.deck = DECK_COUNTS
        self.deck_left = DECK_SIZE
        self.tavern = ()
        self.dice_on = (0,) * (2 * TAVERN_SIZE)
        self.orient = 0
        self.placed = (0, 0)
        self.rolled = ()
        self.trick_used = (False, False)
        self.tricks = (0,) * (2 * NT)
        self.nation_total = (0,) * (2 * NN)
        self.crews = ((), ())
        self.wilds = ((), ())
        self.discards = ()
        self.last_caller = -1
        self._legal: list[ShanghaienAction] | None = None

    def _copy(self) -> Self:
        new = object.__new__(type(self))
        new.game = self.game
        new.phase = self.phase
        new.round = self.round
        new.starter = self.starter
        new.player = self.player
        new.deck = self.deck
        new.deck_left = self.deck_left
        new.tavern = self.tavern
        new.dice_on = self.dice_on
        new.orient = self.orient
        new.placed = self.placed
        new.rolled = self.rolled
        new.trick_used = self.trick_used
        new.tricks = self.tricks
        new.nation_total = self.nation_total
        new.crews = self.crews
        new.wilds = self.wilds
        new.discards = self.discards
        new.last_caller = self.last_caller
        new._legal = None
        return new

    # ----------------------------------------------------------------- the engine surface

    def current_player(self) -> int:
        phase = self.phase
        if phase == Phase.DEAL or phase == Phase.DICE:
            return CHANCE
        if phase == Phase.OVER:
            return TERMINAL
        return self.player

    def is_terminal(self) -> bool:
        return self.phase == Phase.OVER

    def is_chance_node(self) -> bool:
        return self.phase == Phase.DEAL or self.phase == Phase.DICE

    def legal_actions(self) -> list[ShanghaienAction]:
        return self._legal_actions().copy()  # the caller's own list: the cached one stays intact

    def chance_outcomes(self) -> list[tuple[ShanghaienAction, float]]:
        """(outcome, probability) at a chance node; empty at a player node or at the end."""
        if self.phase == Phase.DICE:
            return list(_DICE_FLOAT)
        if self.phase == Phase.DEAL:
            left = self.deck_left
            deal = A.DEAL
            return [(deal[t], c / left) for t, c in enumerate(self.deck) if c]
        return []

    def chance_weights(self) -> list[tuple[ShanghaienAction, int]]:
        """Chance outcomes with integer weights (probability = weight / sum of weights): copies
        left for a deal, 1 or 2 for dice. Exact like ``chance_outcomes_exact``, and cheap."""
        if self.phase == Phase.DICE:
            return list(_DICE_WEIGHTS)
        if self.phase == Phase.DEAL:
            deal = A.DEAL
            return [(deal[t], c) for t, c in enumerate(self.deck) if c]
        return []

    def chance_outcomes_exact(self) -> list[tuple[ShanghaienAction, Fraction]]:
        """As ``chance_outcomes``, with exact rational probabilities."""
        if self.phase == Phase.DICE:
            return list(_DICE_OUTCOMES)
        if self.phase == Phase.DEAL:
            return [(A.DEAL[t], Fraction(c, self.deck_left)) for t, c in enumerate(self.deck) if c]
        return []

    def parse_action(self, text: str) -> ShanghaienAction:
        """The legal action written ``text``: ActionSyntaxError or IllegalActionError otherwise."""
        action = A.parse(text)
        if action not in self._legal_actions():
            raise IllegalActionError(f"{text!r}: {self.why_illegal(action)}")
        return action

    def apply(self, action: ShanghaienAction) -> Self:
        legal = self._legal
        if action not in (self._legal_actions() if legal is None else legal):
            raise IllegalActionError(f"{action}: {self.why_illegal(action)}")
        new = self._copy()
        kind = action.kind
        p = self.player
        if kind is _DEAL:
            t = action.a
            deck = list(self.deck)
            deck[t] -= 1
            new.deck = tuple(deck)
            new.deck_left = self.deck_left - 1
            new.tavern = (*self.tavern, t)
            if len(new.tavern) == TAVERN_SIZE:
                new.phase = Phase.TURN
        elif kind is _DICE:
            new.rolled = (action.a, action.b)
            new.phase = Phase.PLACE
        elif kind is _ROLL:
            new.phase = Phase.DICE
        elif kind is _PLACE:
            new._put_dice(p, (action.a,), action.orient)
            new._end_turn(p)
        elif kind is _SHANGHAI:
            new._shanghai(p)
        else:
            new._play_trick(p, action)
        return new

    # ----------------------------------------------------------------- transitions

    def _put_dice(self, p: int, values: tuple[int, ...], orient: int) -> None:
        if orient:
            self.orient = orient  # H4: chosen with the round's first placement
        dice_on = list(self.dice_on)
        rev = self.orient == 2
        for v in values:
            position = 7 - v if rev else v  # 1..6
            dice_on[(position - 1) * 2 + p] += 1
        self.dice_on = tuple(dice_on)
        placed = list(self.placed)
        placed[p] += len(values)
        self.placed = tuple(placed)

    def _end_turn(self, p: int) -> None:
        self.rolled = ()
        self.player = 1 - p
        self.phase = Phase.TURN

    def _use_trick(self, p: int, trick: int) -> None:
        tricks = list(self.tricks)
        tricks[p * NT + trick] -= 1
        self.tricks = tuple(tricks)
        used = list(self.trick_used)
        used[p] = True
        self.trick_used = tuple(used)

    def _play_trick(self, p: int, action: ShanghaienAction) -> None:
        kind = action.kind
        if kind is Kind.WILD:
            trick, nation = action.a, action.b
            self._use_trick(p, trick)
            totals = list(self.nation_total)
            totals[p * NN + nation] += WILD_VALUE
            self.nation_total = tuple(totals)
            wilds = list(self.wilds)
            wilds[p] = (*wilds[p], (trick, nation))
            self.wilds = tuple(wilds)
            return  # the dice stay as rolled; the player places one
        if kind is Kind.ADJUST:
            self._use_trick(p, ADJUST)
            a, b = self.rolled
            changed = (action.b, b) if a == action.a else (a, action.b)
            self.rolled = (min(changed), max(changed))
        elif kind is Kind.BOTH:
            self._use_trick(p, BOTH)
            self._put_dice(p, self.rolled, action.orient)
            self._end_turn(p)
        else:  # REROLL
            self._use_trick(p, REROLL)
            self.rolled = ()
            self.phase = Phase.DICE
        trick = {Kind.ADJUST: ADJUST, Kind.BOTH: BOTH, Kind.REROLL: REROLL}[kind]
        self.discards = (*self.discards, _TRICK_TYPE[trick])

    def _shanghai(self, caller: int) -> None:
        """H8: distribute the tavern; then open the next round, or end the game after round 8."""
        totals = list(self.nation_total)
        tricks = list(self.tricks)
        crews = [list(c) for c in self.crews]
        discards = list(self.discards)
        for position, card in enumerate(self.tavern):
            taker = self.taker(position)
            if taker < 0:
                discards.append(card)
                continue
            ct = CARD_TYPES[card]
            if ct.trick >= 0:
                tricks[taker * NT + ct.trick] += 1
            else:
                totals[taker * NN + ct.nation] += ct.value
                crews[taker].append(card)
        self.nation_total = tuple(totals)
        self.tricks = tuple(tricks)
        self.crews = (tuple(crews[0]), tuple(crews[1]))
        self.discards = tuple(discards)
        self.last_caller = caller
        self.rolled = ()
        self.tavern = ()  # every card is now in a crew, among the tricks held, or out of the game
        self.dice_on = (0,) * (2 * TAVERN_SIZE)
        self.orient = 0
        self.placed = (0, 0)
        self.trick_used = (False, False)
        if self.round == ROUNDS:
            self.phase = Phase.OVER
            return
        self.round += 1
        self.starter = self.player = 1 - caller  # H3
        self.phase = Phase.DEAL

    def position_value(self, position: int) -> int:
        """The die value that goes on tavern position ``position`` (0-based) this round."""
        return 6 - position if self.orient == 2 else position + 1

    def taker(self, position: int) -> int:
        """H8: who takes the card at ``position`` (0-based) if the round ended now; -1: out of the game."""
        c0, c1 = self.dice_on[position * 2], self.dice_on[position * 2 + 1]
        if c0 != c1:
            return 0 if c0 > c1 else 1
        if c0 == 0:
            return -1
        pips = [0, 0]
        for nb in (position - 1, position + 1):
            if 0 <= nb < TAVERN_SIZE:
                value = self.position_value(nb)
                pips[0] += self.dice_on[nb * 2] * value
                pips[1] += self.dice_on[nb * 2 + 1] * value
        if pips[0] == pips[1]:
            return -1
        return 0 if pips[0] > pips[1] else 1

    # ------------------------------------------------------------------ legal actions

    def _legal_actions(self) -> list[ShanghaienAction]:
        legal = self._legal
        if legal is None:
            phase = self.phase
            if phase == Phase.DEAL:
                legal = list(compress(A.DEAL, self.deck))  # the card types with copies left
            elif phase == Phase.DICE:
                legal = list(_DICE_ACTIONS)
            elif phase == Phase.TURN:
                p = self.player
                placed = self.placed[p]
                if DICE_PER_PLAYER - placed < 2:
                    legal = [A.SHANGHAI]  # H5: fewer than 2 dice in supply
                elif placed >= 2:
                    legal = [A.ROLL, A.SHANGHAI]
                else:
                    legal = [A.ROLL]
            elif phase == Phase.PLACE:
                legal = self._place_actions()
            else:
                legal = []
            self._legal = legal
        return legal

    def _place_actions(self) -> list[ShanghaienAction]:
        p = self.player
        a, b = self.rolled
        values = (a,) if a == b else (a, b)
        place = A.PLACE
        if self.orient:
            out = [place[(v, 0)] for v in values]
        else:
            out = [place[(v, o)] for v in values for o in (1, 2)]
        if self.trick_used[p]:
            return out
        held = self.tricks[p * NT : p * NT + NT]
        if not any(held):
            return out
        totals = self.nation_total[p * NN : p * NN + NN]
        for trick in range(NT):
            if held[trick]:
                out.extend([A.WILD[(trick, n)] for n in range(NN) if totals[n]])
        if held[ADJUST]:
            for v in values:
                if v > 1:
                    out.append(A.ADJUST[(v, v - 1)])
                if v < 6:
                    out.append(A.ADJUST[(v, v + 1)])
        if held[BOTH]:
            out.extend((A.BOTH[1], A.BOTH[2]) if not self.orient else (A.BOTH[0],))
        if held[REROLL]:
            out.append(A.REROLL)
        return out

    def why_illegal(self, action: ShanghaienAction) -> str:
        """A person-readable reason ``action`` is not legal here (for refusals)."""
        if self.phase == Phase.OVER:
            return "the game is over"
        if action in self._legal_actions():
            return "it is legal"
        kind = action.kind
        p = self.player
        if self.is_chance_node():
            if kind not in A.CHANCE_KINDS:
                return "a chance event is due: the referee deals or rolls"
            if kind is Kind.DEAL:
                return "that card is not left in the deck" if self.phase == Phase.DEAL else "dice are due"
            return "a card is due to be dealt"
        if kind in A.CHANCE_KINDS:
            return "chance events are the referee's, not a player's"
        if self.phase == Phase.TURN:
            if kind is Kind.SHANGHAI:
                return "Shanghai needs at least 2 dice placed by you this round (H5)"
            if kind is Kind.ROLL:
                return "you have fewer than 2 dice left: you must call Shanghai (H5)"
            return "roll first: you may only roll or call Shanghai now"
        # Phase.PLACE
        if kind in (Kind.ROLL, Kind.SHANGHAI):
            return f"you rolled {self.rolled[0]} and {self.rolled[1]}: place a die (or play a dirty trick)"
        if kind is Kind.PLACE or (kind is Kind.BOTH and self.trick_used[p] is False and self._holds(p, BOTH)):
            if action.orient and self.orient:
                return "the orientation is already set for this round: write the action without fwd/rev"
            if not action.orient and not self.orient:
                return "the first placement of the round must choose the orientation: add fwd or rev (H4)"
            if kind is Kind.PLACE:
                return f"no die shows {action.a}: you rolled {self.rolled[0]} and {self.rolled[1]}"
        if self.trick_used[p]:
            return "you already played a dirty trick this round (H6)"
        trick = {Kind.WILD: action.a, Kind.ADJUST: ADJUST, Kind.BOTH: BOTH, Kind.REROLL: REROLL}[kind]
        if not self._holds(p, trick):
            return f"you hold no unplayed trick-{TRICKS[trick]} card"
        if kind is Kind.WILD:
            return f"a wild sailor joins a nationality you already hold; you hold no {NATIONS[action.b]} sailor"
        if kind is Kind.ADJUST:
            return f"no die shows {action.a}: you rolled {self.rolled[0]} and {self.rolled[1]}"
        return "not a legal action here"

    def _holds(self, p: int, trick: int) -> bool:
        return self.tricks[p * NT + trick] > 0

    # --------------------------------------------------------------------- results

    def crew_totals(self, seat: int) -> tuple[int, ...]:
        return self.nation_total[seat * NN : seat * NN + NN]

    def points(self) -> list[int]:
        """H9 scoring of the crews as they stand (the final score once the game is over)."""
        s = [0, 0]
        for n in range(NN):
            seat, won = nation_award(self.nation_total[n], self.nation_total[NN + n])
            if seat >= 0:
                s[seat] += won
        for seat in (0, 1):
            s[seat] += sum(self.tricks[seat * NT : seat * NT + NT])
        return s

    def score_sheet(self) -> ScoreSheet:
        """``points()`` line by line, for a person checking a result: each nationality's totals and who
        scores it for how much, and the unplayed dirty tricks each seat holds (one point each)."""
        nations = []
        for n in range(NN):
            t0, t1 = self.nation_total[n], self.nation_total[NN + n]
            seat, won = nation_award(t0, t1)
            nations.append(NationScore(NATIONS[n], (t0, t1), seat, won))
        tricks = (sum(self.tricks[:NT]), sum(self.tricks[NT : 2 * NT]))
        p0, p1 = self.points()
        return ScoreSheet(tuple(nations), tricks, (p0, p1))

    def scores(self) -> list[int]:
        return self.points()

    def ranks(self) -> list[int]:
        return shared_ranks(self.points())

    # -------------------------------------------------------------------- inspection

    def view(self, seat: int) -> ShanghaienView:
        return ShanghaienView.of(self, seat)

    def render(self) -> str:
        return render_state(self)

    def is_milestone(self, before: Self) -> bool:
        """A picture helps when a round ends (the Shanghai that distributed the tavern)."""
        return self.round != before.round

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"<ShanghaienState round={self.round} phase={self.phase} to_move={self.current_player()}>"


def nation_award(t0: int, t1: int) -> tuple[int, int]:
    """H9 for one nationality, from seat 0's and seat 1's totals: (the seat that scores it, the points),
    ``(-1, 0)`` when nobody does (neither holds any, or the totals are equal). The one place the rule is
    written: ``points`` adds these up and ``score_sheet`` lists them."""
    if t0 and t1:  # both hold some: the higher total scores the lower one
        if t0 == t1:
            return -1, 0
        return (0, t1) if t0 > t1 else (1, t0)
    if t0 or t1:  # one holds some: its own total
        return (0, t0) if t0 else (1, t1)
    return -1, 0


_TRICK_TYPE: Final = tuple(next(c.index for c in CARD_TYPES if c.trick == k) for k in range(NT))
