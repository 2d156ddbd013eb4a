"""Shared helpers for playout-based tests: seeded random games and engine invariants.

A playout draws chance outcomes with ``referee.chance.sample(state, seed, ply)`` (``ply`` counts every
ply, chance and player alike) and player actions with a ``random.Random``; either is fully determined by
its seed, so a playout replays exactly.
"""

from __future__ import annotations

import copy
import operator
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from referee import chance, games
from referee.games import State
from referee.games.shanghaien import ShanghaienState
from referee.games.shanghaien.deck import CARD_TYPES, DECK_COUNTS, DECK_SIZE, DICE_PER_PLAYER, TAVERN_SIZE
from referee.games.shangrila import ShangriLaState
from referee.games.shangrila.board import NUM_DISCIPLINES, NUM_VILLAGES, TILES_PER_DISCIPLINE

PLY_BOUND: dict[str, int] = {"shangrila-3p": 2000, "shangrila-4p": 2000, "shanghaien": 1000}
"""Every game must end in fewer plies than this."""

ND = NUM_DISCIPLINES
STUDENT = 4  # a master's code plus this: the master has its student (state.py's encoding)

Chooser = Callable[[State, int], Any]


def random_chooser(rng: random.Random) -> Chooser:
    """Pick uniformly from the legal list, in the engine's order."""

    def choose(state: State, ply: int) -> Any:
        return rng.choice(state.legal_actions())

    return choose


def sorted_text_chooser(rng: random.Random) -> Chooser:
    """Pick by index into the legal actions sorted by canonical text: independent of list order."""

    def choose(state: State, ply: int) -> Any:
        legal = sorted(state.legal_actions(), key=str)
        return legal[rng.randrange(len(legal))]

    return choose


@dataclass
class Playout:
    game_id: str
    seed: str
    states: list[State] = field(default_factory=list)  # states[0] is new_state(); states[-1] the end
    actions: list[Any] = field(default_factory=list)

    @property
    def final(self) -> State:
        return self.states[-1]

    @property
    def texts(self) -> list[str]:
        return [str(a) for a in self.actions]


def play(game_id: str, seed: str, choose: Chooser, *, bound: int | None = None) -> Playout:
    """A whole game; AssertionError if it reaches ``bound`` plies without ending."""
    limit = PLY_BOUND[game_id] if bound is None else bound
    state: State = games.get(game_id).new_state()
    out = Playout(game_id, seed, [state])
    ply = 0
    while state.current_player() != games.TERMINAL:
        assert ply < limit, f"{game_id} seed {seed!r}: no end after {limit} plies"
        if state.current_player() == games.CHANCE:
            action = chance.sample(state, seed, ply)
        else:
            action = choose(state, ply)
        state = state.apply(action)
        out.actions.append(action)
        out.states.append(state)
        ply += 1
    return out


def random_playout(game_id: str, seed: int) -> Playout:
    return play(game_id, str(seed), random_chooser(random.Random(seed)))


def replay(game_id: str, texts: list[str]) -> State:
    """The state reached from ``new_state()`` by parsing and applying ``texts`` in order."""
    state: State = games.get(game_id).new_state()
    for text in texts:
        state = state.apply(state.parse_action(text))
    return state


# ---------------------------------------------------------------------------- snapshots


def snapshot(state: State) -> dict[str, Any]:
    """Every field of ``state`` (deep copies), its legal actions and its chance outcomes, as text."""
    slots: tuple[str, ...] = vars(type(state))["__slots__"]  # the engines' states keep every field in slots
    fields = {name: copy.deepcopy(getattr(state, name)) for name in slots if name not in ("_legal", "game")}
    fields["legal"] = [str(a) for a in state.legal_actions()]
    fields["outcomes"] = [(str(a), p) for a, p in state.chance_outcomes_exact()]
    fields["player"] = state.current_player()
    return fields


# ---------------------------------------------------------------------------- Shangri-La


def shangrila_tile_counts(state: ShangriLaState) -> list[int]:
    """Tiles per (colour, discipline), supply plus board; a master with its student counts 2."""
    n = state.game.num_players
    counts = list(state.supply)
    board = state.board
    for d in range(ND):
        spaces = board[d::ND]
        for c in range(n):
            counts[c * ND + d] += spaces.count(c + 1) + 2 * spaces.count(c + 1 + STUDENT)
    return counts


# The tile counts packed into one integer, a byte per (colour, discipline), for a fast check:
# _WEIGHT[space][code] is what the tile(s) of board code ``code`` on ``space`` add.
def _weight(space: int, code: int) -> int:
    if code == 0:
        return 0
    tiles = 2 if code > STUDENT else 1
    return tiles << (8 * ((code - 1) % STUDENT * ND + space % ND))


_WEIGHT: list[list[int]] = [[_weight(space, code) for code in range(9)] for space in range(NUM_VILLAGES * ND)]
_SHIFT: list[int] = [8 * i for i in range(4 * ND)]
_FULL: dict[int, int] = {n: sum(TILES_PER_DISCIPLINE << (8 * i) for i in range(n * ND)) for n in (3, 4)}


def check_shangrila_conservation(state: ShangriLaState) -> None:
    n = state.game.num_players
    packed = sum(map(list.__getitem__, _WEIGHT, state.board)) + sum(map(operator.lshift, state.supply, _SHIFT))
    if packed == _FULL[n] and min(state.supply) >= 0:
        return
    counts = shangrila_tile_counts(state)
    assert counts == [TILES_PER_DISCIPLINE] * len(counts), f"tiles per colour and discipline: {counts}"
    assert [sum(counts[c * ND : c * ND + ND]) for c in range(n)] == [ND * TILES_PER_DISCIPLINE] * n


def check_shangrila_valid(state: ShangriLaState) -> None:
    g = state.game
    n = g.num_players
    valid_codes = {0, *range(1, n + 1), *range(1 + STUDENT, n + 1 + STUDENT)}
    assert len(state.board) == NUM_VILLAGES * ND
    assert len(state.supply) == n * ND
    assert set(state.board) <= valid_codes, f"invalid board codes: {set(state.board) - valid_codes}"
    assert min(state.supply) >= 0 and max(state.supply) <= TILES_PER_DISCIPLINE, state.supply
    assert state.bridges & ~g.initial_bridges == 0, "a bridge out of play is standing"
    assert state.stones & g.initial_stones == g.initial_stones, "village 2 lost its Stone"
    for v in range(NUM_VILLAGES):
        stone = bool(state.stones >> v & 1)
        if v in g.live_villages:
            all_broken = not state.bridges & g.village_bridges[v]
            assert stone == all_broken, f"village {v}: Stone {stone} but all bridges broken {all_broken}"
        else:
            assert stone and not any(state.board[v * ND : v * ND + ND]), f"closed village {v}: no Stone or a tile"
    assert state.bridges.bit_count() >= 1, "the last bridge is never broken"
    assert 0 <= state.passes <= n
    assert 0 <= state.player < n
    if state.is_terminal():
        assert state.bridges.bit_count() <= 1 or state.passes >= n
    else:
        assert state.bridges.bit_count() >= 2 and state.passes < n
    if state.ply <= g.setup_plies:
        placed = [ND - state.supply[c * ND : c * ND + ND].count(TILES_PER_DISCIPLINE) for c in range(n)]
        # S5: during setup only masters, at most one of each discipline per player, in seat order
        assert max(state.board) <= STUDENT, "a student during setup"
        assert set(state.supply) <= {TILES_PER_DISCIPLINE - 1, TILES_PER_DISCIPLINE}
        assert sum(placed) == state.ply
        assert placed == [state.ply // n + (1 if c < state.ply % n else 0) for c in range(n)]
        assert state.player == state.ply % n


def check_shangrila_step(before: ShangriLaState, action: Any, after: ShangriLaState) -> None:
    """What one legal action may change: Stone villages keep their tiles; only the mover places tiles."""
    for v in range(NUM_VILLAGES):
        if before.stones >> v & 1:
            row_before = before.board[v * ND : v * ND + ND]
            row_after = after.board[v * ND : v * ND + ND]
            assert row_before == row_after, f"{action}: Stone village {v} changed {row_before} -> {row_after}"
    assert after.stones & before.stones == before.stones, f"{action}: a Stone was lost"
    assert after.bridges & ~before.bridges == 0, f"{action}: a bridge was rebuilt"
    assert (before.bridges & ~after.bridges).bit_count() == (1 if str(action).startswith("journey") else 0)
    assert after.ply == before.ply + 1
    assert after.player == (before.player + 1) % before.game.num_players
    if not str(action).startswith("journey"):
        # only the mover's supply may change (it places or recruits); the board only gains tiles
        p = before.player
        for c in range(before.game.num_players):
            if c != p:
                assert before.supply_of(c) == after.supply_of(c), f"{action} moved colour {c}'s tiles"
        assert sum(after.supply) <= sum(before.supply)


# ---------------------------------------------------------------------------- Shanghaien


def shanghaien_card_counts(state: ShanghaienState) -> list[int]:
    """Cards per type: deck + tavern + crews + wild sailors + unplayed tricks + discards."""
    counts = list(state.deck)
    for card in state.tavern:
        counts[card] += 1
    for crew in state.crews:
        for card in crew:
            counts[card] += 1
    trick_type = [next(c.index for c in CARD_TYPES if c.trick == k) for k in range(3)]
    for wilds in state.wilds:
        for trick, _nation in wilds:
            counts[trick_type[trick]] += 1
    for i, held in enumerate(state.tricks):
        counts[trick_type[i % 3]] += held
    for card in state.discards:
        counts[card] += 1
    return counts


def check_shanghaien_conservation(state: ShanghaienState) -> None:
    counts = shanghaien_card_counts(state)
    assert sum(counts) == DECK_SIZE == 48, f"{sum(counts)} cards in all"
    diff = {CARD_TYPES[t].text: c - DECK_COUNTS[t] for t, c in enumerate(counts) if c != DECK_COUNTS[t]}
    assert not diff, f"cards per type off by {diff}"


def check_shanghaien_valid(state: ShanghaienState) -> None:
    assert state.phase in range(5)
    assert 1 <= state.round <= 8
    assert state.player in (0, 1) and state.starter in (0, 1)
    assert all(c >= 0 for c in state.deck) and state.deck_left == sum(state.deck)
    assert state.deck_left == DECK_SIZE - 6 * (state.round - 1) - len(state.tavern) or state.is_terminal()
    assert len(state.tavern) <= TAVERN_SIZE
    assert len(state.dice_on) == 2 * TAVERN_SIZE and all(x >= 0 for x in state.dice_on)
    for seat in (0, 1):
        on_cards = sum(state.dice_on[pos * 2 + seat] for pos in range(TAVERN_SIZE))
        assert 0 <= state.placed[seat] <= DICE_PER_PLAYER, state.placed
        assert on_cards == state.placed[seat], f"seat {seat}: {on_cards} dice on cards, placed {state.placed}"
        supply = DICE_PER_PLAYER - state.placed[seat]
        assert 0 <= supply <= DICE_PER_PLAYER
        assert all(x >= 0 for x in state.tricks[seat * 3 : seat * 3 + 3])
        # nation totals: sailor values plus 2 per wild sailor (H6, H9)
        totals = [0] * 8
        for card in state.crews[seat]:
            ct = CARD_TYPES[card]
            assert not ct.is_trick, "a dirty-tricks card in a crew"
            totals[ct.nation] += ct.value
        for _trick, nation in state.wilds[seat]:
            totals[nation] += 2
            assert any(CARD_TYPES[c].nation == nation for c in state.crews[seat]), "a wild sailor with no sailor"
        assert tuple(totals) == state.nation_total[seat * 8 : seat * 8 + 8]
    assert state.orient in (0, 1, 2)
    assert (state.orient != 0) == (sum(state.placed) > 0)
    if state.phase == 3:  # PLACE
        assert len(state.rolled) == 2 and 1 <= state.rolled[0] <= state.rolled[1] <= 6
    else:
        assert state.rolled == ()
    if state.phase in (1, 2, 3):
        assert len(state.tavern) == TAVERN_SIZE
    if state.phase == 0:
        assert sum(state.placed) == 0 and not any(state.trick_used)
    if state.is_terminal():
        assert state.deck_left == 0


def check_shanghaien_step(before: ShanghaienState, action: Any, after: ShanghaienState) -> None:
    text = str(action)
    tricks_before = sum(before.tricks) + sum(len(w) for w in before.wilds)
    tricks_after = sum(after.tricks) + sum(len(w) for w in after.wilds)
    if text.startswith(("adjust", "both", "reroll")):
        assert tricks_after == tricks_before - 1 and len(after.discards) == len(before.discards) + 1
    if text.startswith("wild"):
        assert sum(after.tricks) == sum(before.tricks) - 1
    if text.startswith(("wild", "adjust", "both", "reroll")):
        p = before.player
        assert not before.trick_used[p] and after.trick_used[p], f"{text}: a second trick in one round"
    if text != "shanghai":
        assert after.crews == before.crews and after.round == before.round
    assert sum(after.placed) >= sum(before.placed) or text == "shanghai"


# ---------------------------------------------------------------------------- both games


def check_conservation(state: State) -> None:
    if isinstance(state, ShangriLaState):
        check_shangrila_conservation(state)
    else:
        assert isinstance(state, ShanghaienState)
        check_shanghaien_conservation(state)


def check_valid(state: State) -> None:
    if isinstance(state, ShangriLaState):
        check_shangrila_valid(state)
    else:
        assert isinstance(state, ShanghaienState)
        check_shanghaien_valid(state)


def check_step(before: State, action: Any, after: State) -> None:
    if isinstance(before, ShangriLaState):
        assert isinstance(after, ShangriLaState)
        check_shangrila_step(before, action, after)
    else:
        assert isinstance(before, ShanghaienState) and isinstance(after, ShanghaienState)
        check_shanghaien_step(before, action, after)


def tie_break(state: State) -> list[int]:
    """The S17 tie-break (villages held) for Shangri-La; all zeros for Shanghaien."""
    if isinstance(state, ShangriLaState):
        return [state.villages_held(c) for c in range(state.game.num_players)]
    return [0] * len(state.scores())


def check_results(state: State, num_players: int) -> None:
    """At the end: no legal action, one score and rank per seat, ranks agreeing with scores."""
    assert state.current_player() == games.TERMINAL and state.is_terminal()
    assert state.legal_actions() == []
    assert state.chance_outcomes() == [] and state.chance_outcomes_exact() == []
    scores, ranks = state.scores(), state.ranks()
    assert len(scores) == len(ranks) == num_players
    assert min(ranks) == 1 and all(1 <= r <= num_players for r in ranks)
    keys = list(zip(scores, tie_break(state), strict=True))
    for i in range(num_players):
        assert ranks[i] == 1 + sum(1 for k in keys if k > keys[i]), (scores, keys, ranks)
        for j in range(num_players):
            if scores[i] > scores[j]:
                assert ranks[i] < ranks[j], f"seat {i} scores more than seat {j} but ranks {ranks}"
            if keys[i] == keys[j]:
                assert ranks[i] == ranks[j], f"seats {i} and {j} are tied but rank {ranks}"


def tally(texts: list[str]) -> Counter[str]:
    """Action kinds played (first word), for coverage reports."""
    return Counter(t.split(" ", 1)[0] for t in texts)
