"""The Bridges of Shangri-La rules engine (RULINGS S1-S18).

Encoding, chosen for speed of copying and scanning:
- ``board``: a list of 91 ints, one per space (``village * 7 + discipline``): 0 empty,
  ``colour + 1`` a master alone, ``colour + 5`` a master with its student (always one colour, S3).
- ``supply``: ``num_players * 7`` ints, the tiles of each colour and discipline not on the board.
- ``bridges``: bit mask of the standing bridges (indices into ``board.BRIDGES``).
- ``stones``: bit mask of the villages holding a Stone.
- ``masks``: what legal-action listing needs, kept up to date by ``apply`` so it never rescans
  the board. One 7-bit mask (bit d: discipline d) per village and kind, ``13 * kind + village``:
  kind 0 the occupied spaces, kind ``1 + c`` the masters of colour c without a student, kind
  ``1 + n + c`` those with their student (``n`` players). It is derived from ``board`` alone.
  A bytearray: ten times cheaper to copy than a list, and a tenth of the memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from itertools import combinations
from typing import Final, Self

from referee.games.core import CHANCE, TERMINAL, IllegalActionError, TimeControl, shared_ranks
from referee.games.shangrila import actions as A
from referee.games.shangrila.actions import Kind, ShangriLaAction
from referee.games.shangrila.board import (
    BRIDGES,
    COLOURS,
    DISCIPLINES,
    NUM_DISCIPLINES,
    NUM_SPACES,
    NUM_VILLAGES,
    RED_WALLED_VILLAGE,
    SETUP_LIMITS,
    TILES_PER_DISCIPLINE,
)
from referee.games.shangrila.render import render as render_state
from referee.games.shangrila.view import ShangriLaView

__all__ = ["CHANCE", "TERMINAL", "ShangriLaGame", "ShangriLaState"]

ND: Final = NUM_DISCIPLINES
NV: Final = NUM_VILLAGES
STUDENT: Final = 4  # added to a master's code when it has a student
TILES: Final = (0, 1, 1, 1, 1, 2, 2, 2, 2)  # tiles on a space, by its board code

_PLACE: Final = Kind.PLACE
_RECRUIT: Final = Kind.RECRUIT
_JOURNEY: Final = Kind.JOURNEY

# Per village and 7-bit discipline mask: the spaces, and the ``place`` actions onto them, in
# canonical (space) order. Legal-action listing reads these instead of looping over disciplines.
SPACES_BY_MASK: Final[tuple[tuple[tuple[int, ...], ...], ...]] = tuple(
    tuple(tuple(v * ND + d for d in range(ND) if m >> d & 1) for m in range(1 << ND)) for v in range(NV)
)
PLACE_BY_MASK: Final[tuple[tuple[tuple[ShangriLaAction, ...], ...], ...]] = tuple(
    tuple(tuple(A.PLACE[s] for s in spaces) for spaces in row) for row in SPACES_BY_MASK
)


def _index_village(board: list[int], masks: bytearray, v: int, n: int) -> None:
    """Recompute village ``v``'s entries of ``masks`` (see the module docstring) from ``board``."""
    for kind in range(1 + 2 * n):
        masks[kind * NV + v] = 0
    base = v * ND
    for d in range(ND):
        x = board[base + d]
        if not x:
            continue
        bit = 1 << d
        masks[v] |= bit
        if x <= n:  # a master alone, x = c + 1: kind 1 + c = x
            masks[x * NV + v] |= bit
        elif STUDENT < x <= STUDENT + n:  # with its student, x = c + 5: kind 1 + n + c
            masks[(x - STUDENT + n) * NV + v] |= bit
        # any other code is no tile of this game (a corrupted board, as tests build): no kind


def _submasks(mask: int) -> list[int]:
    """Every subset of the bits of ``mask``, as masks (``mask`` itself and 0 included)."""
    subsets = [0]
    sub = mask
    while sub:
        subsets.append(sub)
        sub = (sub - 1) & mask
    return subsets


def board_masks(board: list[int], n: int) -> bytearray:
    """The ``masks`` of a position with ``board`` and ``n`` players (see the module docstring)."""
    masks = bytearray((1 + 2 * n) * NV)
    for v in range(NV):
        _index_village(board, masks, v, n)
    return masks


class ShangriLaGame:
    """Static facts of ``shangrila-3p`` or ``shangrila-4p`` and the factory of the initial state."""

    family: Final = "shangrila"
    has_chance: Final = False
    perfect_information: Final = True
    # Larger branching (hundreds of recruits), ~35-60 decisions per seat.
    time_control: Final = TimeControl(first_move_ms=10_000, move_ms=2_000, bank_ms=20_000)

    def __init__(self, num_players: int) -> None:
        if num_players not in (3, 4):
            raise ValueError("The Bridges of Shangri-La is played by 3 or 4 players")
        self.num_players = num_players
        self.game_id = f"shangrila-{num_players}p"
        self.colours = COLOURS[:num_players]
        closed = {RED_WALLED_VILLAGE} if num_players == 3 else set()
        self.initial_stones = sum(1 << v for v in closed)
        self.bridge_ids = tuple(i for i, (a, b) in enumerate(BRIDGES) if a not in closed and b not in closed)
        self.initial_bridges = sum(1 << i for i in self.bridge_ids)
        self.live_villages = tuple(v for v in range(NUM_VILLAGES) if v not in closed)
        # village -> mask of its bridges in play; village -> (bridge bit, journey action) per exit
        self.village_bridges = [0] * NUM_VILLAGES
        exits: list[list[tuple[int, ShangriLaAction]]] = [[] for _ in range(NUM_VILLAGES)]
        for i in self.bridge_ids:
            a, b = BRIDGES[i]
            self.village_bridges[a] |= 1 << i
            self.village_bridges[b] |= 1 << i
            exits[a].append((1 << i, A.JOURNEY[(a, b)]))
            exits[b].append((1 << i, A.JOURNEY[(b, a)]))
        self.exits = tuple(tuple(sorted(e, key=lambda x: x[1].dest)) for e in exits)
        # village -> {its standing bridges (a subset of village_bridges[v]) -> the journeys out, by dest}
        self.journeys: tuple[dict[int, tuple[ShangriLaAction, ...]], ...] = tuple(
            {
                standing: tuple(action for bit, action in self.exits[v] if standing & bit)
                for standing in _submasks(self.village_bridges[v])
            }
            for v in range(NUM_VILLAGES)
        )
        self.per_colour_limit, self.total_limit = SETUP_LIMITS[num_players]
        self.setup_plies = ND * num_players
        self.max_game_length = self._max_length()
        self._open_villages: dict[int, tuple[int, ...]] = {}

    def open_villages(self, stones: int) -> tuple[int, ...]:
        """The villages in play without a Stone, given the Stone mask (memoised: at most 2**13 masks)."""
        villages = self._open_villages.get(stones)
        if villages is None:
            villages = tuple(v for v in self.live_villages if not stones >> v & 1)
            self._open_villages[stones] = villages
        return villages

    def _max_length(self) -> int:
        # Every non-pass ply after setup puts a tile on the board or breaks a bridge; tiles leave
        # the board only by journeys. A loose but finite bound, used by tests and the referee.
        return self.setup_plies + 2000

    def new_state(self) -> ShangriLaState:
        return ShangriLaState(
            self,
            [0] * NUM_SPACES,
            [TILES_PER_DISCIPLINE] * (ND * self.num_players),
            self.initial_bridges,
            self.initial_stones,
            player=0,
            ply=0,
            passes=0,
            over=False,
        )

    def action_from_text(self, text: str) -> ShangriLaAction:
        return A.parse(text)

    def position(
        self,
        tiles: Mapping[tuple[int, str], str],
        *,
        player: int = 0,
        broken: Iterable[tuple[int, int]] = (),
        ply: int | None = None,
        passes: int = 0,
    ) -> ShangriLaState:
        """A hand-built position, for tests, puzzles and bots' analysis.

        ``tiles`` maps (village, discipline name) to a colour letter (``R``, ``B``, ``Y``, ``V``) for
        a master, or letter + ``+`` for a master with its student. Supplies hold whatever is not on
        the board; Stones stand where every bridge is broken. ``ply`` defaults to the first ply
        after setup.
        """
        board = [0] * NUM_SPACES
        supply = [TILES_PER_DISCIPLINE] * (ND * self.num_players)
        for (village, discipline), code in tiles.items():
            colour = "RBYV".index(code[0])
            if colour >= self.num_players or code not in (code[0], code[0] + "+"):
                raise ValueError(f"bad tile code {code!r} for {self.game_id}")
            if village not in self.live_villages:
                raise ValueError(f"village {village} is not in play in {self.game_id}")
            d = DISCIPLINES.index(discipline)
            board[village * ND + d] = colour + 1 + (STUDENT if code.endswith("+") else 0)
            supply[colour * ND + d] -= 2 if code.endswith("+") else 1
            if supply[colour * ND + d] < 0:
                raise ValueError(f"more than {TILES_PER_DISCIPLINE} {discipline} tiles of {code[0]}")
        bridges = self.initial_bridges
        for a, b in broken:
            i = BRIDGES.index((min(a, b), max(a, b)))
            bridges &= ~(1 << i)
        stones = self.initial_stones
        for v in self.live_villages:
            if not bridges & self.village_bridges[v]:
                stones |= 1 << v
        return ShangriLaState(
            self,
            board,
            supply,
            bridges,
            stones,
            player=player,
            ply=self.setup_plies if ply is None else ply,
            passes=passes,
            over=bridges.bit_count() <= 1 or passes >= self.num_players,
        )

    def __repr__(self) -> str:
        return f"ShangriLaGame({self.game_id!r})"


class ShangriLaState:
    """A position. ``apply`` returns a new state; a state is never changed after it is built."""

    __slots__ = (
        "_legal",
        "board",
        "bridges",
        "game",
        "masks",
        "over",
        "passes",
        "player",
        "ply",
        "stones",
        "supply",
    )

    def __init__(
        self,
        game: ShangriLaGame,
        board: list[int],
        supply: list[int],
        bridges: int,
        stones: int,
        *,
        player: int,
        ply: int,
        passes: int,
        over: bool,
    ) -> None:
        self.game = game
        self.board = board
        self.supply = supply
        self.bridges = bridges
        self.stones = stones
        self.player = player
        self.ply = ply
        self.passes = passes
        self.over = over
        self.masks = board_masks(board, game.num_players)
        self._legal: list[ShangriLaAction] | None = None

    # ----------------------------------------------------------------- the engine surface

    def current_player(self) -> int:
        return TERMINAL if self.over else self.player

    def is_terminal(self) -> bool:
        return self.over

    def in_setup(self) -> bool:
        return self.ply < self.game.setup_plies

    def legal_actions(self) -> list[ShangriLaAction]:
        return self._legal_actions().copy()  # the caller's own list: the cached one stays intact

    def chance_outcomes(self) -> list[tuple[ShangriLaAction, float]]:
        return []

    def chance_outcomes_exact(self) -> list[tuple[ShangriLaAction, Fraction]]:
        return []

    def chance_weights(self) -> list[tuple[ShangriLaAction, int]]:
        return []  # no chance node in this game

    def parse_action(self, text: str) -> ShangriLaAction:
        """The legal action written ``text``: ActionSyntaxError or IllegalActionError otherwise."""
        action = A.parse(text)
        if action not in self._legal_actions():
            raise IllegalActionError(f"{text!r}: {self.why_illegal(action)}")
        return action

    def apply(self, action: ShangriLaAction) -> Self:
        legal = self._legal
        if action not in (self._legal_actions() if legal is None else legal):
            raise IllegalActionError(f"{action}: {self.why_illegal(action)}")
        g = self.game
        n = g.num_players
        board = self.board.copy()
        supply = self.supply.copy()
        masks = self.masks.copy()
        bridges = self.bridges
        stones = self.stones
        passes = 0
        over = False
        p = self.player
        kind = action.kind
        if kind is _PLACE:
            s = action.spaces[0]
            v, d = divmod(s, ND)
            bit = 1 << d
            board[s] = p + 1
            supply[p * ND + d] -= 1
            masks[v] |= bit
            masks[(1 + p) * NV + v] |= bit
        elif kind is _RECRUIT:
            for s in action.spaces:
                v, d = divmod(s, ND)
                bit = 1 << d
                board[s] += STUDENT
                supply[p * ND + d] -= 1
                masks[(1 + p) * NV + v] &= ~bit
                masks[(1 + n + p) * NV + v] |= bit
        elif kind is _JOURNEY:
            v, w = action.source, action.dest
            self._journey(v, w, board, supply, masks)
            bridges = self.bridges & ~(g.village_bridges[v] & g.village_bridges[w])
            for u in (v, w):
                if not bridges & g.village_bridges[u]:
                    stones |= 1 << u
            over = bridges.bit_count() <= 1  # S16: one bridge left
        else:
            passes = self.passes + 1
            over = passes >= n
        # Built field by field rather than through __init__, which would recompute ``masks``.
        new = object.__new__(type(self))
        new.game = g
        new.board = board
        new.supply = supply
        new.masks = masks
        new.bridges = bridges
        new.stones = stones
        new.player = (p + 1) % n
        new.ply = self.ply + 1
        new.passes = passes
        new.over = over
        new._legal = None
        return new

    def _journey(self, v: int, w: int, board: list[int], supply: list[int], masks: bytearray) -> None:
        """Move every student of ``v`` to ``w`` (S11-S13) in ``board``, ``supply`` and ``masks``.

        ``apply`` then breaks the bridge (S14). ``masks`` follows each tile that changes, with its
        kind index ``x`` for a master alone (code x = colour + 1) or ``x - STUDENT + n`` for a master
        with its student (see the module docstring).
        """
        n = self.game.num_players
        vs, ws = v * ND, w * ND
        src, dst = board[vs : vs + ND], board[ws : ws + ND]
        # S12: strength counted before any tile moves: all tiles; then masters; then the destination.
        src_tiles = sum(map(TILES.__getitem__, src))
        dst_tiles = sum(map(TILES.__getitem__, dst))
        src_masters = masks[v].bit_count()
        dst_masters = masks[w].bit_count()
        source_stronger = src_tiles > dst_tiles or (src_tiles == dst_tiles and src_masters > dst_masters)
        for d in range(ND):
            x = src[d]
            if x <= STUDENT:
                continue
            bit = 1 << d
            colour = x - STUDENT - 1
            board[vs + d] = x - STUDENT  # the student leaves; its master stays
            masks[(x - STUDENT + n) * NV + v] &= ~bit
            masks[(x - STUDENT) * NV + v] |= bit
            y = dst[d]
            if y == 0:
                board[ws + d] = colour + 1
                masks[w] |= bit
                masks[(colour + 1) * NV + w] |= bit
            elif not source_stronger:
                supply[colour * ND + d] += 1
            else:
                owner = (y - 1) % STUDENT
                if owner == colour:
                    if y <= STUDENT:
                        board[ws + d] = y + STUDENT
                        masks[y * NV + w] &= ~bit
                        masks[(y + n) * NV + w] |= bit
                    else:
                        supply[colour * ND + d] += 1
                else:
                    supply[owner * ND + d] += 1 if y <= STUDENT else 2
                    board[ws + d] = colour + 1
                    masks[(y if y <= STUDENT else y - STUDENT + n) * NV + w] &= ~bit
                    masks[(colour + 1) * NV + w] |= bit

    # ------------------------------------------------------------------ legal actions

    def _legal_actions(self) -> list[ShangriLaAction]:
        legal = self._legal
        if legal is None:
            if self.over:
                legal = []
            elif self.ply < self.game.setup_plies:
                legal = self._setup_actions()
            else:
                legal = self._play_actions() or [A.PASS]
            self._legal = legal
        return legal

    def _setup_actions(self, relaxed: bool = False) -> list[ShangriLaAction]:
        """S5-S7: one master of each discipline, within the village limits unless none fits."""
        g = self.game
        p = self.player
        supply = self.supply
        todo = 0  # the disciplines p has not placed yet
        for d in range(ND):
            if supply[p * ND + d] == TILES_PER_DISCIPLINE:
                todo |= 1 << d
        max_own, max_total = g.per_colour_limit, g.total_limit
        masks = self.masks
        own = (1 + p) * NV  # p's masters without a student (the only kind of tile in setup)
        out: list[ShangriLaAction] = []
        for v in g.live_villages:
            occupied = masks[v]
            if not relaxed and (occupied.bit_count() >= max_total or masks[own + v].bit_count() >= max_own):
                continue
            out += PLACE_BY_MASK[v][todo & ~occupied]
        if not out and not relaxed:
            return self._setup_actions(relaxed=True)
        return out

    def _play_actions(self) -> list[ShangriLaAction]:
        """S9-S11 in canonical list order: places, single recruits, recruit pairs, journeys.

        Reads the per-village ``masks`` rather than the board: a village without a master of the
        player costs two list reads, one with costs a few table look-ups.
        """
        g = self.game
        p = self.player
        masks = self.masks
        bridges = self.bridges
        village_bridges = g.village_bridges
        journeys_from = g.journeys
        sup = self.supply[p * ND : p * ND + ND]
        avail = 0  # the disciplines p still has tiles of
        for d in range(ND):
            if sup[d]:
                avail |= 1 << d
        alone = (1 + p) * NV
        taught = (1 + g.num_players + p) * NV
        out: list[ShangriLaAction] = []
        eligible: list[int] = []  # spaces of p's masters without a student, p having that tile
        seen = repeated = 0  # disciplines among ``eligible``; those found more than once
        journeys: list[ShangriLaAction] = []
        for v in g.open_villages(self.stones):
            masters = masks[alone + v]
            students = masks[taught + v]
            if not (masters or students):
                continue  # S9-S11 all need a master (or student) of p in the village
            free = avail & ~masks[v]
            if free:
                out += PLACE_BY_MASK[v][free]
            ready = masters & avail
            if ready:
                eligible += SPACES_BY_MASK[v][ready]
                repeated |= seen & ready
                seen |= ready
            if students:
                journeys += journeys_from[v][bridges & village_bridges[v]]
        if eligible:
            out += map(A.RECRUIT_ONE.__getitem__, eligible)
            two = A.RECRUIT_TWO
            pairs = combinations(eligible, 2)  # (s, t) with s < t: the canonical order
            if repeated:  # a pair on two masters of one discipline needs two tiles of it
                out += [two[s][t] for s, t in pairs if (t - s) % ND or sup[s % ND] > 1]  # type: ignore[misc]
            else:
                out += [two[s][t] for s, t in pairs]  # type: ignore[misc]
        out += journeys
        return out

    def why_illegal(self, action: ShangriLaAction) -> str:
        """A person-readable reason ``action`` is not legal here (for refusals)."""
        if self.over:
            return "the game is over"
        if action in self._legal_actions():
            return "it is legal"
        if action.kind is Kind.PASS:
            return "pass is only legal when no other action is"
        p = self.player
        setup = self.in_setup()
        if setup and action.kind is not Kind.PLACE:
            return "during setup every action is 'place V D' (S5)"
        for s in action.spaces:
            v, d = divmod(s, ND)
            name = f"village {v} {DISCIPLINES[d]}"
            if self.stones >> v & 1:
                return f"village {v} has a Stone: no action may start in or put a tile into it (S14)"
            if action.kind is Kind.PLACE:
                if self.board[s]:
                    return f"the {name} space is occupied"
                if setup:
                    if self.supply[p * ND + d] < TILES_PER_DISCIPLINE:
                        return f"you already placed a {DISCIPLINES[d]} in setup (S5)"
                    return f"village {v} is at a setup limit (S6)"
                if self.supply[p * ND + d] == 0:
                    return f"no {DISCIPLINES[d]} left in your supply"
                row = self.board[v * ND : v * ND + ND]
                if p + 1 not in row and p + 1 + STUDENT not in row:
                    return f"you have no master in village {v} (S9)"
            else:
                if self.board[s] != p + 1:
                    return f"the {name} space does not hold a master of yours without a student (S10)"
                need = sum(1 for t in action.spaces if t % ND == d)
                if self.supply[p * ND + d] < need:
                    return f"not enough {DISCIPLINES[d]} tiles in your supply"
        if action.kind is Kind.JOURNEY:
            v, w = action.source, action.dest
            if self.stones >> v & 1:
                return f"village {v} has a Stone (S14)"
            if p + 1 + STUDENT not in self.board[v * ND : v * ND + ND]:
                return f"you have no student in village {v} (S11)"
            if not any(a.dest == w for bit, a in self.game.exits[v]):
                return f"no bridge joins villages {v} and {w}"
            return f"the bridge {min(v, w)}-{max(v, w)} is broken"
        return "not a legal action here"

    # --------------------------------------------------------------------- results

    def masters(self, colour: int) -> int:
        """Masters of ``colour`` on the board, Stone villages included (S17)."""
        return self.board.count(colour + 1) + self.board.count(colour + 1 + STUDENT)

    def villages_held(self, colour: int) -> int:
        """Villages holding at least one master of ``colour``: the S17 tie-break."""
        held = 0
        for v in range(NUM_VILLAGES):
            row = self.board[v * ND : v * ND + ND]
            if colour + 1 in row or colour + 1 + STUDENT in row:
                held += 1
        return held

    def scores(self) -> list[int]:
        return [self.masters(c) for c in range(self.game.num_players)]

    def ranks(self) -> list[int]:
        return shared_ranks([(self.masters(c), self.villages_held(c)) for c in range(self.game.num_players)])

    # -------------------------------------------------------------------- inspection

    def standing_bridges(self) -> list[tuple[int, int]]:
        return [BRIDGES[i] for i in self.game.bridge_ids if self.bridges >> i & 1]

    def stone_villages(self) -> list[int]:
        return [v for v in range(NUM_VILLAGES) if self.stones >> v & 1]

    def space(self, village: int, discipline: int) -> tuple[int, bool] | None:
        """(colour, has student) of the master on a space, or None when empty."""
        x = self.board[village * ND + discipline]
        if not x:
            return None
        return (x - 1) % STUDENT, x > STUDENT

    def supply_of(self, colour: int) -> list[int]:
        return self.supply[colour * ND : colour * ND + ND]

    def view(self, seat: int) -> ShangriLaView:
        return ShangriLaView.of(self, seat)

    def render(self) -> str:
        return render_state(self)

    def is_milestone(self, before: Self) -> bool:
        """A picture helps at the end of setup and after each journey (a bridge broke)."""
        return (before.in_setup() and not self.in_setup()) or self.bridges != before.bridges

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"<ShangriLaState {self.game.game_id} ply={self.ply} to_move={self.current_player()}>"
