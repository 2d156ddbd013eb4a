"""What the reference bots know of The Bridges of Shangri-La (S1-S18): evaluation and one-ply values.

Evaluation (S17 counts masters): a seat's value is

    masters + 0.1 * villages held (the tie-break) + 0.05 * students outside Stone villages
    + 0.5 * options - 0.5 * threats

where, for every village without a Stone that holds students, the seat's *option* is the most masters
it would gain from a journey out of that village that it may start itself (it has a student there),
and its *threat* the most masters it would lose to a journey out of it that another colour may start
and would gain from. ``shangrila_action_values`` values every legal action of a position this way,
recomputing only what an action touches, so a greedy move is cheap (``Analysis`` keeps what a position's
values are built from):

- a place or a one-student recruit in village ``v`` changes the journey terms of ``v`` and of its
  neighbours only, and of each neighbour only its journey to ``v`` (its other journeys are kept);
  actions that change a village alike share that work (every place of ``v`` makes it as strong, every
  recruit too, and a neighbour sees a place only on the disciplines of its students);
- a two-student recruit is valued as the sum of its two one-student recruits' gains (they are
  independent but for supply);
- a journey ``v>x`` moves tiles of ``v`` and ``x`` only (S11-S13, modelled here as in ``journey_deltas``:
  the masters that change hands are its deltas) and breaks their bridge: every student leaves ``v``, so
  only ``x``, the journeys of the neighbours of ``v`` and ``x`` into them and the colours whose counts
  change are re-evaluated; the journey that ends the game is applied and scored (S16, S17);
- a pass changes nothing but, with the last pass, the end of the game.

Every value is the same float, bit for bit, as before these shortcuts (strong 1.0.0, kept in
``benchmarks/strong_v1.py``): journeys and passes are the full evaluation of the position reached, with
every sum taken in the same order (per colour: masters, the villages' static weights, the villages'
journey terms), places and recruits swap the changed villages' terms in the same order as before. The
shortcuts skip work, never change a result, so the greedy and strong bots decide exactly as before.
What depends on a village's row alone, and a village's contribution given its journeys' deltas, are
remembered across positions (``_VILLAGES``, ``_CONTRIBS``), and ``ShangriLaStrategy`` remembers the
one-ply margins of recent positions (``POSITIONS_CACHED``).

Strong: the generic ``GameStrategy`` search (its ``candidates`` best actions, rollouts of ``depth``
plies valued by the seat's margin, opponents modelled by ``sdk.bots.opponents``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from functools import cache, reduce
from itertools import chain
from operator import add, itemgetter
from typing import Any, Final, NamedTuple

from referee.games.shangrila import ShangriLaState
from referee.games.shangrila.actions import Kind, ShangriLaAction
from referee.games.shangrila.board import NUM_DISCIPLINES
from sdk.strategies.base import GameStrategy, margin

ND: Final = NUM_DISCIPLINES
STUDENT: Final = 4  # the engine's board code: a master's code plus 4 when it has its student

_PLACE: Final = Kind.PLACE
_RECRUIT: Final = Kind.RECRUIT
_JOURNEY: Final = Kind.JOURNEY


class Weights(NamedTuple):
    """Weights of the Shangri-La seat value (masters count 1)."""

    held: float = 0.1  # per village holding a master of the seat (the S17 tie-break)
    student: float = 0.05  # per student outside Stone villages
    option: float = 0.5  # per master the seat's best journey out of a village would win it
    threat: float = 0.5  # per master another colour's attractive journey out of a village would take


DEFAULT: Final = Weights()


# ------------------------------------------------------------------------------ Shangri-La


Strength = tuple[int, int]
"""(tiles, masters) of a village: S12 compares them in this order, so tuple order is S12's."""

Students = Sequence[tuple[int, int]]
"""(discipline, colour) of each student in a village."""

Delta = tuple[int, ...]
"""Change in each colour's masters from one journey."""

Terms = tuple[list[int], list[int]]
"""(best, worst) per colour from the journeys out of one village: the option and the threat."""

Contrib = tuple[float, ...]
"""Per colour, ``option * best + threat * worst`` of one village's terms: what it adds to the seat values."""

Change = tuple[Contrib | None, Contrib | None]
"""(old, new) contribution of one village whose journeys an action changes (None: no student there)."""

Static = tuple[tuple[float, ...], ...]
"""Per colour, what one village adds to the colour's static value, in the order it is added."""

Village = tuple[Static, Static, Strength, Students]
"""What a village's row alone gives: its static part open and with a Stone, its strength, its students."""

_VILLAGES: dict[tuple[Weights, int], dict[bytes, Village]] = {}
"""Per weights and number of players, what each village row gives (``Analysis``), remembered across
positions."""

Source = tuple[Static, dict[int, Delta], dict[int, Contrib]]
"""What a journey's source village becomes, whatever the destination: its static part, per neighbour with
students the masters its journey there would then move, and the contributions of the villages with
students, in village order (see ``Analysis._source``)."""


_HAS_STUDENT: Final = STUDENT.__lt__  # code -> it holds a student


def strength(row: list[int]) -> Strength:
    masters = ND - row.count(0)
    return masters + sum(map(_HAS_STUDENT, row)), masters


def students(row: list[int]) -> list[tuple[int, int]]:
    return [(d, x - STUDENT - 1) for d, x in enumerate(row) if x > STUDENT]


def journey_deltas(studs: Students, src: Strength, dst_row: list[int], dst: Strength, n: int) -> list[int]:
    """Change in each colour's masters if the students ``studs`` of a village of strength ``src``
    travelled to a village with ``dst_row`` of strength ``dst`` (S12, S13)."""
    return list(_delta(studs, src > dst, dst_row, n))


def _delta(studs: Students, stronger: bool, dst_row: list[int], n: int) -> Delta:
    """``journey_deltas`` as a tuple, the source's S12 comparison already made."""
    delta = [0] * n
    for d, c in studs:
        y = dst_row[d]
        if not y:
            delta[c] += 1
        elif stronger:
            owner = (y - 1) & 3
            if owner != c:
                delta[c] += 1
                delta[owner] -= 1
    return tuple(delta)


def _terms(deltas: Iterable[Sequence[int]], n: int) -> Terms:
    """The option (best gain) and threat (worst loss) per colour over the journeys ``deltas`` out of one
    village. A journey counts when it is attractive, some colour gaining from it; a colour gains only
    from its own students, so the colours that gain are colours that may start it (S11). Every colour
    but the one that gains alone may then lose by it, and that one does not lose, so the threat is the
    least change over the attractive journeys and the option the greatest (neither past 0)."""
    best = [0] * n
    worst = [0] * n
    for delta in deltas:
        if max(delta) > 0:
            best = list(map(max, best, delta))
            worst = list(map(min, worst, delta))
    return best, worst


def _contrib(terms: Terms, w: Weights) -> Contrib:
    best, worst = terms
    return tuple([w.option * b + w.threat * x for b, x in zip(best, worst, strict=True)])


Deltas = tuple[Delta, ...]
"""The masters each journey out of one village would move, in exit order."""

_CONTRIBS: dict[Weights, dict[Deltas, Contrib]] = {}
"""Per weights, the contribution of a village whose journeys move these deltas: a pure function of them,
remembered across positions (a few thousand keys in a game)."""

CONTRIB_CACHE_SIZE: Final = 1 << 16
"""Entries the cache of contributions keeps per weights before it starts afresh."""


def deltas_contrib(deltas: Deltas, n: int, w: Weights = DEFAULT) -> Contrib:
    """The contribution of a village whose journeys move ``deltas``."""
    cache = _CONTRIBS.get(w)
    if cache is None:
        cache = _CONTRIBS[w] = {}
    contrib = cache.get(deltas)
    if contrib is None:
        if len(cache) >= CONTRIB_CACHE_SIZE:
            cache.clear()
        contrib = cache[deltas] = _contrib(_terms(deltas, n), w)
    return contrib


def _village_static(row: list[int], live: bool, n: int, w: Weights) -> Static:
    """Per colour, what village ``row`` adds to the colour's static value, in the order it is added: the
    tie-break weight if the colour holds the village, then its students' weight (not in a Stone village)."""
    out: list[tuple[float, ...]] = []
    for c in range(n):
        m = c + 1
        k = row.count(m + STUDENT)
        if k and live:
            out.append((w.held, w.student * k))
        elif k or m in row:
            out.append((w.held,))
        else:
            out.append(())
    return tuple(out)


def _static_totals(masters: list[int], statics: Sequence[Static]) -> list[float]:
    """Per colour: its masters, plus village by village its static weights, added one at a time in that
    order (``reduce``: the same float as a loop)."""
    return [
        reduce(add, chain.from_iterable(adds), float(m))
        for m, adds in zip(masters, zip(*statics, strict=True), strict=True)
    ]


def _add_contribs(totals: list[float], contribs: Sequence[Contrib]) -> list[float]:
    """``totals`` plus village by village the journey contributions, one at a time in that order."""
    if not contribs:
        return totals
    return [reduce(add, column, x) for x, column in zip(totals, zip(*contribs, strict=True), strict=True)]


_EXITS: dict[tuple[str, int, int], tuple[int, ...]] = {}
"""Per game id, village and standing bridges of the village: the villages across them (a few hundred keys)."""


@cache
def _index(live: tuple[int, ...]) -> dict[int, int]:
    """Each village's place in ``live`` (never change the dict returned)."""
    return {v: i for i, v in enumerate(live)}


class Memo:
    """The work one position's actions share (see ``Analysis.single_changes`` and ``after_journey``)."""

    __slots__ = ("across", "changes", "places", "sources")

    def __init__(self) -> None:
        self.changes: dict[tuple[int, int], list[Change]] = {}  # per place key, or (v, -2): every recruit of v
        # (u, v, k): u's new contribution after a place in v on discipline k (-1: one u has no student of),
        # or a recruit in v (k = -2)
        self.across: dict[tuple[int, int, int], Contrib] = {}
        self.places: dict[int, Contrib] = {}  # v's own contribution after a place in it
        self.sources: dict[int, Source] = {}  # per journey source

    def own_place(self, analysis: Analysis, v: int, sv: Strength) -> Contrib:
        """``v``'s contribution once a place made it ``sv`` strong (the same for every place of ``v``)."""
        own = self.places.get(v)
        if own is None:
            own = self.places[v] = analysis._own(analysis.studs[v], sv, analysis.exits[v])
        return own


class Analysis:
    """What the seat values of a position are built from, kept so that one action's change can be
    re-evaluated village by village: each open village's row, strength and students, its exits (the
    villages across its standing bridges), the masters each of its journeys would move (``deltas``, in
    exit order), its journey terms and their contribution; per village in play, its static part.

    ``values()`` is ``shangrila_seat_values`` of the position, bit for bit: every sum is taken in the
    same order (per colour: masters, then village by village the static weights, then village by
    village the journey contributions)."""

    __slots__ = (
        "board",
        "contrib",
        "deltas",
        "discs",
        "exits",
        "index",
        "live",
        "masters",
        "n",
        "near",
        "rows",
        "static",
        "strengths",
        "studs",
        "totals",
        "villages",
        "w",
    )

    def __init__(self, state: ShangriLaState, w: Weights = DEFAULT) -> None:
        g = state.game
        board = state.board
        bridges = state.bridges
        stones = state.stones
        self.n = n = g.num_players
        self.w = w
        self.board = board
        self.live = g.live_villages
        self.index = _index(self.live)
        self.masters = [board.count(c + 1) + board.count(c + 1 + STUDENT) for c in range(n)]
        self.rows: dict[int, list[int]] = {}
        self.strengths: list[Strength] = [(0, 0)] * len(g.exits)
        self.studs: dict[int, Students] = {}
        self.exits: dict[int, tuple[int, ...]] = {}
        self.static: list[Static] = []
        villages = _VILLAGES.get((w, n))
        if villages is None:
            villages = _VILLAGES[w, n] = {}
        self.villages = villages
        village_bridges = g.village_bridges
        journeys = g.journeys
        game_id = g.game_id
        for v in self.live:
            row = board[v * ND : v * ND + ND]
            village = villages.get(bytes(row)) or self._village(row)
            if stones >> v & 1:
                self.static.append(village[1])
                continue
            self.static.append(village[0])
            self.rows[v] = row
            self.strengths[v] = village[2]
            standing = bridges & village_bridges[v]
            exits = _EXITS.get((game_id, v, standing))
            if exits is None:
                exits = _EXITS[game_id, v, standing] = tuple(a.dest for a in journeys[v][standing])
            self.exits[v] = exits
            if village[3]:
                self.studs[v] = village[3]
        # near[v]: the disciplines of the students in v's neighbours (a place there changes their journeys)
        self.near = dict.fromkeys(self.rows, 0)
        self.deltas: dict[int, Deltas] = {}
        self.contrib: dict[int, Contrib] = {}
        self.discs: dict[int, int] = {}  # the disciplines of each village's students
        for v, studs in self.studs.items():
            sv = self.strengths[v]
            discs = 0
            for d, _ in studs:
                discs |= 1 << d
            self.discs[v] = discs
            for x in self.exits[v]:
                self.near[x] |= discs
            self.deltas[v] = deltas = tuple(
                _delta(studs, sv > self.strengths[x], self.rows[x], n) for x in self.exits[v]
            )
            self.contrib[v] = deltas_contrib(deltas, n, w)
        self.totals = _static_totals(self.masters, self.static)  # the static part of the values, per colour

    @property
    def terms(self) -> dict[int, Terms]:
        """The journey terms of each village with students, in village order."""
        return {v: _terms(deltas, self.n) for v, deltas in self.deltas.items()}

    # ------------------------------------------------------------------ the position itself

    def values(self) -> list[float]:
        """The position's seat values (``shangrila_seat_values``, not at the end of the game)."""
        return _add_contribs(self.totals, list(self.contrib.values()))

    def _own(self, studs: Students, sv: Strength, exits: Sequence[int]) -> Contrib:
        """The contribution of a village with students ``studs``, strength ``sv`` and ``exits``."""
        n = self.n
        rows, strengths = self.rows, self.strengths
        return deltas_contrib(tuple(_delta(studs, sv > strengths[x], rows[x], n) for x in exits), n, self.w)

    def _across(self, u: int, v: int, row: list[int], sv: Strength) -> Contrib:
        """The new contribution of ``u`` (a neighbour of ``v`` with students) when village ``v`` becomes
        ``row`` of strength ``sv``: only its journey to ``v`` is recomputed."""
        delta = _delta(self.studs[u], self.strengths[u] > sv, row, self.n)
        i = self.exits[u].index(v)
        deltas = self.deltas[u]
        if delta == deltas[i]:
            return self.contrib[u]
        return deltas_contrib((*deltas[:i], delta, *deltas[i + 1 :]), self.n, self.w)

    # --------------------------------------------------------------- one action's change

    def changed(self, v: int, row: list[int]) -> list[tuple[Terms | None, Terms | None]]:
        """(old, new) terms of each village whose journeys change when village ``v`` becomes ``row``:
        ``v`` first, then its neighbours with students in exit order."""
        n = self.n
        sv = strength(row)
        studs = students(row)
        new: Terms | None = None
        if studs:
            new = _terms([_delta(studs, sv > self.strengths[x], self.rows[x], n) for x in self.exits[v]], n)
        old = self.deltas.get(v)
        out: list[tuple[Terms | None, Terms | None]] = [(None if old is None else _terms(old, n), new)]
        for u in self.exits[v]:
            su = self.studs.get(u)
            if su is None:
                continue
            i = self.exits[u].index(v)
            delta = _delta(su, self.strengths[u] > sv, row, n)
            deltas = self.deltas[u]
            out.append((_terms(deltas, n), _terms((*deltas[:i], delta, *deltas[i + 1 :]), n)))
        return out

    def place_key(self, v: int, d: int) -> tuple[int, int]:
        """Places of ``v`` with one key change the seat values alike: those on a discipline some neighbour
        has students of change their journeys each in its own way, every other place of ``v`` does not."""
        return (v, d) if self.near[v] >> d & 1 else (v, -1)

    def single_changes(self, s: int, code: int, memo: Memo) -> list[Change]:
        """What ``changed`` says, as contributions, of putting board code ``code`` on the space ``s``
        (a place: a master, ``code <= STUDENT``; a one-student recruit: ``code > STUDENT`` on a master of
        that colour). ``memo`` (one per position) shares the work of actions that change a village alike:
        every place of ``v`` makes it as strong, every recruit too, and a neighbour sees a difference in
        the row only on the disciplines of its students."""
        v, d = divmod(s, ND)
        recruit = code > STUDENT
        old = self.contrib.get(v)
        key = (v, -2) if recruit else self.place_key(v, d)  # every recruit of v looks the same from outside
        shared = memo.changes.get(key)
        if shared is None:
            row = self.rows[v].copy()
            row[d] = code
            sv = strength(row)
            own = None if recruit or v not in self.studs else memo.own_place(self, v, sv)
            shared = [(old, own)]
            contrib = self.contrib
            discs = self.discs
            across = memo.across
            for u in self.exits[v]:
                if u not in discs:
                    continue
                k = (u, v, -2 if recruit else d if discs[u] >> d & 1 else -1)
                new = across.get(k)
                if new is None:
                    new = across[k] = self._across(u, v, row, sv)
                shared.append((contrib[u], new))
            memo.changes[key] = shared
        if not recruit:
            return shared
        row = self.rows[v].copy()
        row[d] = code
        own = self._own([*self.studs.get(v, ()), (d, code - STUDENT - 1)], strength(row), self.exits[v])
        return [(old, own), *shared[1:]]

    def after_journey(self, state: ShangriLaState, action: ShangriLaAction, memo: Memo) -> list[float]:
        """The seat values of the position the journey ``action`` (``v>x``) leads to from ``state``.

        The journey moves tiles of ``v`` and ``x`` only (S11-S13) and breaks the bridge between them (S14):
        every student leaves ``v``, ``x`` is re-evaluated, and of the other villages only the journeys into
        ``v`` or ``x``; the masters that change hands are the journey's ``deltas``. What ``v`` becomes is
        the same whatever ``x``: ``memo`` (one per position) keeps it. The journey that ends the game (S16)
        is applied and scored."""
        n = self.n
        v, x = action.source, action.dest
        village_bridges = state.game.village_bridges
        bridges = state.bridges & ~(village_bridges[v] & village_bridges[x])
        if bridges.bit_count() <= 1:
            return shangrila_final_values(state.apply(action))
        source = memo.sources.get(v)
        if source is None:
            source = memo.sources[v] = self._source(v)
        static_v, across, slots = source
        exits_of = self.exits
        delta = self.deltas[v][exits_of[v].index(x)]
        # S12, S13: each student of v goes to x; as strong or weaker, a student meeting a master goes home.
        row_x = self.rows[x].copy()
        if self.strengths[v] > self.strengths[x]:
            for d, c in self.studs[v]:
                y = row_x[d]
                if not y or (y - 1) & 3 != c:
                    row_x[d] = c + 1
                elif y <= STUDENT:
                    row_x[d] = y + STUDENT
        else:
            for d, c in self.studs[v]:
                if not row_x[d]:
                    row_x[d] = c + 1
        open_x = bridges & village_bridges[x]
        static_x, stone_x, sx, studs = self._village(row_x)
        if not open_x:
            static_x = stone_x
        # The static part changes for a colour whose masters, or whose weights in v or x, change.
        iv, ix = self.index[v], self.index[x]
        old_v, old_x = self.static[iv], self.static[ix]
        totals = self.totals.copy()
        static: list[Static] | None = None
        for c, d in enumerate(delta):
            if d or static_v[c] != old_v[c] or static_x[c] != old_x[c]:
                if static is None:
                    static = self.static.copy()
                    static[iv] = static_v
                    static[ix] = static_x
                x_c = float(self.masters[c] + d)
                for adds in static:
                    for a in adds[c]:
                        x_c += a
                totals[c] = x_c
        slots = slots.copy()
        studs_of = self.studs
        w = self.w
        for u in exits_of[x]:
            su = studs_of.get(u)
            if su is None or u == v:
                continue
            new_x = _delta(su, self.strengths[u] > sx, row_x, n)
            new_v = across.get(u)
            deltas = tuple(
                new_x if y == x else d if y != v or new_v is None else new_v
                for y, d in zip(exits_of[u], self.deltas[u], strict=True)
            )
            slots[u] = deltas_contrib(deltas, n, w)
        if not studs or not open_x:
            slots.pop(x, None)
            contribs = list(slots.values())
        elif x in slots:
            slots[x] = self._own(studs, sx, [y for y in exits_of[x] if y != v])
            contribs = list(slots.values())
        else:  # x's contribution goes in its place in village order
            slots[x] = self._own(studs, sx, [y for y in exits_of[x] if y != v])
            contribs = [slots[u] for u in sorted(slots)]
        return _add_contribs(totals, contribs)

    def _village(self, row: list[int]) -> Village:
        """What ``row`` gives, from the cache of rows (``_VILLAGES``)."""
        key = bytes(row)
        village = self.villages.get(key)
        if village is None:
            if len(self.villages) >= CONTRIB_CACHE_SIZE:
                self.villages.clear()
            n, w = self.n, self.w
            village = self.villages[key] = (
                _village_static(row, True, n, w),
                _village_static(row, False, n, w),
                strength(row),
                tuple(students(row)),
            )
        return village

    def _source(self, v: int) -> Source:
        """What the source ``v`` of a journey becomes, its students gone (S11): its static part, the new
        delta of each neighbour's journey to it, and the contributions of the villages with students but
        ``v`` (in village order) with those neighbours' changed."""
        n = self.n
        row = [y - STUDENT if y > STUDENT else y for y in self.rows[v]]
        static, _, sv, _ = self._village(row)
        across: dict[int, Delta] = {}
        slots = self.contrib.copy()
        del slots[v]
        for u in self.exits[v]:
            su = self.studs.get(u)
            if su is None:
                continue
            delta = across[u] = _delta(su, self.strengths[u] > sv, row, n)
            i = self.exits[u].index(v)
            deltas = self.deltas[u]
            if delta != deltas[i]:
                slots[u] = deltas_contrib((*deltas[:i], delta, *deltas[i + 1 :]), n, self.w)
        return static, across, slots


def shangrila_seat_values(state: ShangriLaState, w: Weights = DEFAULT) -> list[float]:
    """One value per seat: masters + tie-break + students + journey options - journey threats."""
    if state.is_terminal():
        return shangrila_final_values(state)
    return Analysis(state, w).values()


def shangrila_final_values(state: ShangriLaState) -> list[float]:
    """Masters plus a twentieth of villages held: orders seats exactly as S17 ranks them."""
    return [state.masters(c) + 0.05 * state.villages_held(c) for c in range(state.game.num_players)]


def shangrila_value(state: ShangriLaState, seat: int, w: Weights = DEFAULT) -> float:
    """Own value against the best opponent's (at the end: the S17 score and tie-break margin)."""
    return margin(shangrila_seat_values(state, w), seat)


def _apply_changes(vals: list[float], changes: list[Change]) -> list[float]:
    """``vals`` less each changed village's old contribution and plus its new one, in turn."""
    for old, new in changes:
        if old is None:
            if new is not None:
                vals = [x + z for x, z in zip(vals, new, strict=True)]
        elif new is None:
            vals = [x - y for x, y in zip(vals, old, strict=True)]
        else:
            vals = [x - y + z for x, y, z in zip(vals, old, new, strict=True)]  # (x - y) + z: the same floats
    return vals


def shangrila_action_values(state: ShangriLaState, w: Weights = DEFAULT) -> list[tuple[Any, list[float]]]:
    """Every legal action with the seat values of the position it leads to (see the module docstring):
    the legal actions in the engine's order, but two-student recruits last."""
    if state.over:
        return []
    legal = state.legal_actions()
    board = state.board
    p = state.player
    analysis = Analysis(state, w)
    base = analysis.values()
    out: list[tuple[Any, list[float]]] = []
    single: dict[int, list[float]] = {}
    pairs: list[Any] = []
    memo = Memo()
    places: dict[tuple[int, int], list[float]] = {}
    own, own_student = p + 1, p + 1 + STUDENT
    held_add, student_add = w.held, w.student
    for a in legal:
        kind = a.kind
        if kind is _JOURNEY:
            out.append((a, analysis.after_journey(state, a, memo)))
            continue
        spaces = a.spaces
        if kind is _RECRUIT:
            if len(spaces) == 2:
                pairs.append(a)
                continue
            s = spaces[0]
            vals = base.copy()
            vals[p] += student_add
            vals = _apply_changes(vals, analysis.single_changes(s, own_student, memo))
            single[s] = vals
        elif kind is _PLACE:
            s = spaces[0]
            v, d = divmod(s, ND)
            key = analysis.place_key(v, d)
            placed = places.get(key)
            if placed is None:
                row = board[v * ND : v * ND + ND]
                vals = base.copy()
                if own not in row and own_student not in row:
                    vals[p] += held_add
                vals[p] += 1.0
                placed = places[key] = _apply_changes(vals, analysis.single_changes(s, own, memo))
            vals = placed.copy()
        else:  # pass: nothing moves
            child = state.apply(a)
            vals = shangrila_final_values(child) if child.over else base.copy()
        out.append((a, vals))
    for a in pairs:
        s, t = a.spaces
        out.append((a, [x + y - z for x, y, z in zip(single[s], single[t], base, strict=True)]))
    return out


def shangrila_action_margins(state: ShangriLaState, seat: int, w: Weights = DEFAULT) -> list[tuple[Any, float]]:
    """Each legal action with the seat's margin in the position it leads to."""
    others = itemgetter(*(c for c in range(state.game.num_players) if c != seat))  # a tuple: 3 or 4 players
    return [(a, vals[seat] - max(others(vals))) for a, vals in shangrila_action_values(state, w)]


PositionKey = tuple[bytes, bytes, int, int, int, int, bool]

POSITIONS_CACHED: Final = 4096
"""Positions whose one-ply margins ``ShangriLaStrategy`` remembers (the oldest are forgotten first)."""


def position_key(state: ShangriLaState) -> PositionKey:
    """What the legal actions and their values depend on: board, supplies, bridges, Stones, the player to
    move, the passes in a row, and whether it is setup."""
    return (
        bytes(state.board),
        bytes(state.supply),
        state.bridges,
        state.stones,
        state.player,
        state.passes,
        state.ply < state.game.setup_plies,
    )


class ShangriLaStrategy(GameStrategy[ShangriLaState]):
    """``action_values`` for the player to move are remembered per position (``POSITIONS_CACHED``): a
    search meets a position again in later passes of its rollouts, when it models an opponent's decision it
    foresaw, and at its next move's root. A value is a pure function of the position, so remembering it
    changes no decision. An entry is two tuples (the actions, their margins), not a list of pairs: a full
    garbage collection then has two objects to visit rather than a hundred."""

    family = "shangrila"

    def __init__(self) -> None:
        self._cache: OrderedDict[PositionKey, tuple[tuple[Any, ...], tuple[float, ...]]] = OrderedDict()
        self.hits = self.misses = 0

    def seat_values(self, state: ShangriLaState) -> list[float]:
        return shangrila_seat_values(state)

    def action_values(self, state: ShangriLaState, seat: int) -> list[tuple[Any, float]]:
        if seat != state.player or state.over:
            return shangrila_action_margins(state, seat)
        key = position_key(state)
        cache = self._cache
        entry = cache.get(key)
        if entry is not None:
            self.hits += 1
            return list(zip(*entry, strict=True))  # the caller's own list (a search shuffles it)
        self.misses += 1
        values = shangrila_action_margins(state, seat)
        cache[key] = (tuple([a for a, _ in values]), tuple([v for _, v in values]))
        if len(cache) > POSITIONS_CACHED:
            cache.popitem(last=False)  # one C call: safe with bots in several threads
        return values


STRATEGY: Final = ShangriLaStrategy()
