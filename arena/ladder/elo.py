"""Elo ratings for the ladder: pure functions over plain values, no Redis, no clock.

One ladder per game id. A row is one (bot name, bot version); a new version starts provisional from
the rating of its predecessor (the latest version seen before it).

- Two players: standard Elo, ``R' = R + K (S - E)`` with ``E = 1 / (1 + 10^((R_opp - R) / 400))``.
- Three or four players: every pair of seats is one Elo game scored from the final places (better
  place 1, shared place 0.5, worse place 0) and each seat's change is ``K / (players - 1)`` times the
  sum of its pair errors (the GGP Tiltyard rule): a match moves a rating about as much as one
  two-player game, whatever the number of players.
- Forfeits: a forfeited seat is last, whatever its rank says; forfeited seats share the last place.
- Aborted or unrated matches change nothing (``arena.results.counts`` says so).

Constants (why these values):

- ``INITIAL_RATING = 1500``: the customary Elo origin; only differences mean anything.
- ``K = 24``: between FIDE's 20 and USCF's 32. Bots do not improve between games (a new version is a
  new row), so the K only trades noise for speed of convergence: at K=24 a settled rating wanders
  with a standard deviation of about 46 points (``sqrt(K * 200 / ln 10)``, see ``noise_floor``),
  small next to the 100-400 point gaps between bots of different strength.
- ``K_PROVISIONAL = 48`` for the first ``PROVISIONAL_GAMES = 15`` games: a new bot reaches its level
  in about a dozen games instead of fifty; after 15 games the 95% bar from the results alone is
  about 175 points, the point where a smaller K stops costing accuracy.

Uncertainty: each row keeps the Fisher information of its results, ``info = sum w E (1 - E)`` over
the pair games it played (``w = 1 / (players - 1)`` per pair, so one match adds at most one game's
worth), plus a prior worth ``PRIOR_SD = 350`` points (the spread of ratings of unknown bots). The
standard error of the rating estimated from those games is ``400 / ln 10 / sqrt(info)``, the usual
binomial error bar ``400/ln10/sqrt(n p (1-p))`` evaluated at the expected scores (not at the observed
score, which would make a bot with all wins infinitely uncertain). An Elo rating is a running
average and never gets better than its own noise floor, so the reported standard deviation is the
larger of the two; the error bar is 1.96 times that (a 95% interval).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from arena.results import HEAD, SEAT, Record, counting_record, counts, forfeited, seat_key
from referee.wire.values import EndReason

INITIAL_RATING: Final = 1500.0
K: Final = 24.0
K_PROVISIONAL: Final = 48.0
PROVISIONAL_GAMES: Final = 15
PRIOR_SD: Final = 350.0
Z95: Final = 1.96
ELO_SCALE: Final = 400.0 / math.log(10)  # rating points per unit of log-odds
PRIOR_INFO: Final = (ELO_SCALE / PRIOR_SD) ** 2


BotKey = tuple[str, str]
"""(bot name, bot version): one ladder row."""


_pow = math.pow
_ABORTED: Final = EndReason.ABORTED
_TWO_SEATS: Final = HEAD + 2 * SEAT  # the length of a two-seat record
_KEY: Final = 7  # a Table's working state: _state(row) + [key, Points or None]
_HISTORY: Final = 8


def expected(rating: float, opponent: float) -> float:
    """The expected score of ``rating`` against ``opponent`` (0..1)."""
    return 1.0 / (1.0 + math.pow(10.0, (opponent - rating) / 400.0))


def k_factor(games: int) -> float:
    """The K of a row that has played ``games`` rated matches before this one."""
    return K_PROVISIONAL if games < PROVISIONAL_GAMES else K


def noise_floor(k: float) -> float:
    """Standard deviation of a settled Elo rating updated with ``k`` (linearised stationary variance)."""
    return math.sqrt(k * ELO_SCALE / 2.0)


@dataclass(frozen=True)
class Row:
    """One bot version's standing in one game's ladder."""

    name: str
    version: str
    rating: float = INITIAL_RATING
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    last_played: float = 0.0
    info: float = 0.0  # Fisher information of the results, in two-player-game units (see module doc)

    @property
    def key(self) -> BotKey:
        return (self.name, self.version)

    @property
    def provisional(self) -> bool:
        return self.games < PROVISIONAL_GAMES

    @property
    def sd(self) -> float:
        """Standard deviation of the rating: the information bound or the Elo noise floor, the larger."""
        return max(ELO_SCALE / math.sqrt(PRIOR_INFO + self.info), noise_floor(k_factor(self.games)))

    @property
    def error(self) -> float:
        """Half-width of the 95% interval around ``rating``."""
        return Z95 * self.sd

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "rating": self.rating, "games": self.games,
            "wins": self.wins, "draws": self.draws, "losses": self.losses, "last_played": self.last_played,
            "info": self.info,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Row:
        return cls(
            name=str(d["name"]), version=str(d["version"]), rating=float(d["rating"]), games=int(d["games"]),
            wins=int(d["wins"]), draws=int(d["draws"]), losses=int(d["losses"]),
            last_played=float(d["last_played"]), info=float(d["info"]),
        )  # fmt: skip


def new_row(name: str, version: str, predecessor: Row | None = None) -> Row:
    """A row for a bot version never rated before: provisional, from its predecessor's rating if any."""
    return Row(name, version, rating=predecessor.rating if predecessor else INITIAL_RATING)


def places(seats: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Comparable places per seat (lower is better): forfeited seats after every active one."""
    return [(1 if forfeited(s) else 0, int(s["rank"])) for s in seats]


def pair_score(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Score of place ``a`` against place ``b``: 1 better, 0.5 shared, 0 worse."""
    return 1.0 if a < b else 0.5 if a == b else 0.0


@dataclass(frozen=True)
class Pair:
    """One pairwise comparison of a match, for the head-to-head counts: ``score`` is a's (1, 0.5, 0)."""

    a: BotKey
    b: BotKey
    score: float


@dataclass(frozen=True)
class Update:
    """What one match does to the ladder: the new rows, the pairwise outcomes, the history points."""

    match_id: str
    finished_at: float
    rows: dict[BotKey, Row] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)


def rate(result: Mapping[str, Any], before: Mapping[BotKey, Row]) -> Update:
    """Apply one counting result to the rows of its seats (``before`` must hold a row for every seat).

    All changes are computed from the ratings before the match. A bot version in two seats of one
    match (possible in requested matches) is not compared with itself; its seats' changes add up.
    """
    seats = list(result["seats"])
    bots = [seat_key(s) for s in seats]
    states = {b: _state(before[b]) for b in bots}
    pairs: list[tuple[BotKey, BotKey, float]] = []
    finished_at = float(result.get("finished_at", 0.0))
    _play(bots, places(seats), [states[b] for b in bots], finished_at, pairs)
    rows = {b: _row(before[b].name, before[b].version, st) for b, st in states.items()}
    return Update(str(result["match_id"]), finished_at, rows, [Pair(a, b, s) for a, b, s in pairs])


# The rating rules below are the one implementation: ``rate`` (one result on Row values) and ``Table`` (a
# whole ladder, the Redis ladder's batches and rebuilds) both run ``_play`` on a row's working state, a list
# ``[rating, games, wins, draws, losses, last_played, info]`` changed in place (no Row object per match).
# Its two-seat case is unrolled (``_play2``, most matches); tests/test_elo_exact.py checks both paths bit for
# bit against the rules written plainly, as the ladder first computed them.


def _state(row: Row) -> list[Any]:
    return [row.rating, row.games, row.wins, row.draws, row.losses, row.last_played, row.info]


def _row(name: str, version: str, st: list[Any]) -> Row:
    return Row(name, version, st[0], st[1], st[2], st[3], st[4], st[5], st[6])


def _play(
    bots: list[BotKey],
    place: list[tuple[int, int]],
    states: list[list[Any]],
    finished_at: float,
    pairs: list[tuple[BotKey, BotKey, float]] | None,
) -> None:
    """One match: update the working state of every seat's row (``states[i]`` is seat i's; a bot version in
    two seats has the same list in both) and append the pairwise outcomes ``(a, b, a's score)`` to ``pairs``.

    Every change is computed from the states before the match. The arithmetic is ``expected`` and
    ``R + K (S - E)`` term by term in seat order, the same floating-point operations in the same order
    whatever the path (ratings must come out bit for bit the same as any earlier run of these rules).
    """
    n = len(bots)
    if n == 2 and bots[0] != bots[1]:
        p0, p1 = place
        s = 1.0 if p0 < p1 else 0.5 if p0 == p1 else 0.0  # pair_score(p0, p1)
        _play2(states[0], states[1], s, finished_at)
        if pairs is not None:
            pairs.append((bots[0], bots[1], s))
        return
    weight = 1.0 / (n - 1)
    ratings = [st[0] for st in states]
    ks = [(K_PROVISIONAL if st[1] < PROVISIONAL_GAMES else K) * weight for st in states]
    top = min(place)
    if len(set(bots)) == n:  # the usual case: every seat a different bot version
        deltas = [0.0] * n
        infos = [0.0] * n
        for i in range(n):
            ri, pi, k = ratings[i], place[i], ks[i]
            d = f = 0.0
            for j in range(n):
                if i == j:
                    continue
                e = 1.0 / (1.0 + _pow(10.0, (ratings[j] - ri) / 400.0))  # expected(ri, ratings[j])
                pj = place[j]
                s = 1.0 if pi < pj else 0.5 if pi == pj else 0.0  # pair_score(pi, pj)
                d += k * (s - e)
                f += weight * e * (1.0 - e)
                if pairs is not None and i < j:
                    pairs.append((bots[i], bots[j], s))
            deltas[i], infos[i] = d, f
        for i in range(n):
            _settle(states[i], deltas[i], infos[i], place[i], place, top, finished_at)
        return
    delta = dict.fromkeys(bots, 0.0)
    info = dict.fromkeys(bots, 0.0)
    for i in range(n):
        k = ks[i]
        for j in range(n):
            if i == j or bots[i] == bots[j]:
                continue
            e = expected(ratings[i], ratings[j])
            s = pair_score(place[i], place[j])
            delta[bots[i]] += k * (s - e)
            info[bots[i]] += weight * e * (1.0 - e)
            if pairs is not None and i < j:
                pairs.append((bots[i], bots[j], s))
    for b in delta:
        best = min(p for p, key in zip(place, bots, strict=True) if key == b)
        _settle(states[bots.index(b)], delta[b], info[b], best, place, top, finished_at)


def _play2(st0: list[Any], st1: list[Any], s0: float, finished_at: float) -> None:
    """``_play`` for two different bot versions (most matches), unrolled, given seat 0's score ``s0``
    (``pair_score`` of the two places): the same operations on the same values in the same order. ``weight``
    is 1.0 and multiplying by it changes no bit, so it is left out; each sum has one term after its 0.0;
    seat 1's score ``1.0 - s0`` is exact (0, 0.5 or 1)."""
    r0, r1 = st0[0], st1[0]
    k0 = K_PROVISIONAL if st0[1] < PROVISIONAL_GAMES else K
    k1 = K_PROVISIONAL if st1[1] < PROVISIONAL_GAMES else K
    e0 = 1.0 / (1.0 + _pow(10.0, (r1 - r0) / 400.0))  # expected(r0, r1)
    e1 = 1.0 / (1.0 + _pow(10.0, (r0 - r1) / 400.0))
    st0[0] = r0 + (0.0 + k0 * (s0 - e0))
    st1[0] = r1 + (0.0 + k1 * ((1.0 - s0) - e1))
    st0[6] = st0[6] + (0.0 + e0 * (1.0 - e0))
    st1[6] = st1[6] + (0.0 + e1 * (1.0 - e1))
    st0[1] += 1
    st1[1] += 1
    if s0 == 0.5:  # shared first place
        st0[3] += 1
        st1[3] += 1
    elif s0 == 1.0:
        st0[2] += 1
        st1[4] += 1
    else:
        st0[4] += 1
        st1[2] += 1
    st0[5] = max(st0[5], finished_at)
    st1[5] = max(st1[5], finished_at)


def _settle(
    st: list[Any], delta: float, info: float, best: tuple[int, int], place: list[tuple[int, int]],
    top: tuple[int, int], finished_at: float,
) -> None:  # fmt: skip
    """A row after its match: rating and information moved, one more game, W/D/L from its best place."""
    st[0] = st[0] + delta
    st[1] += 1
    if best != top:
        st[4] += 1
    elif place.count(best) > 1:
        st[3] += 1
    else:
        st[2] += 1
    st[5] = max(st[5], finished_at)
    st[6] = st[6] + info


class Points:
    """One row's rating history in a Table, compact (no object per point): the rating after each match and
    the match's index in its game's ``Matches``."""

    __slots__ = ("match", "rating")

    def __init__(self) -> None:
        self.rating = array("d")
        self.match = array("q")


class Matches:
    """The matches a Table applied to one game, in order: when each finished and its id."""

    __slots__ = ("finished_at", "match_id")

    def __init__(self) -> None:
        self.finished_at: list[float] = []
        self.match_id: list[str] = []


class _Game:
    """One game's part of a Table (the same dicts as the Table's public ones), found with one lookup."""

    __slots__ = ("h2h", "latest", "matches", "points", "state")

    def __init__(self, table: Table, game_id: str) -> None:
        self.state: dict[BotKey, list[Any]] = table._state.setdefault(game_id, {})
        self.latest: dict[str, str] = table.latest.setdefault(game_id, {})
        self.h2h: dict[tuple[BotKey, BotKey], list[int]] = table.h2h.setdefault(game_id, {})
        self.points: dict[BotKey, Points] = {}
        self.matches = Matches()

    def add_points(self, finished_at: float, match_id: str, states: Iterable[list[Any]]) -> None:
        """A rating history point for each row in ``states`` (their ratings after the match)."""
        m = len(self.matches.match_id)
        self.matches.finished_at.append(finished_at)
        self.matches.match_id.append(match_id)
        for st in states:
            points = st[_HISTORY]
            if points is None:
                points = st[_HISTORY] = self.points[st[_KEY]] = Points()
            points.rating.append(st[0])
            points.match.append(m)


class Table:
    """A whole ladder in memory: rows per game, the latest version per bot name, pair counts, history.

    ``Ladder.rebuild`` replays stored results through one of these, and ``Ladder.sync`` applies each batch of
    the results stream through one seeded with the rows the batch touches (``load``); tests and simulations
    use it directly. ``apply`` does exactly what the Redis ladder does for one result.
    """

    def __init__(self) -> None:
        self._state: dict[str, dict[BotKey, list[Any]]] = {}  # working state of each row (see ``_play``)
        self._games: dict[str, _Game] = {}
        self._rows: dict[str, dict[BotKey, Row]] | None = None  # ``rows``, made when asked for
        self.latest: dict[str, dict[str, str]] = {}
        self.h2h: dict[str, dict[tuple[BotKey, BotKey], list[int]]] = {}
        self.applied: set[str] = set()

    def _game(self, game_id: str) -> _Game:
        g = self._games.get(game_id)
        if g is None:
            g = self._games[game_id] = _Game(self, game_id)
        return g

    @property
    def history(self) -> dict[str, dict[BotKey, list[tuple[float, float, str]]]]:
        """Per game and row, ``(finished_at, rating after, match_id)`` of each match applied here, in order
        (made when asked for; ``points`` and ``matches`` are the compact form)."""
        out: dict[str, dict[BotKey, list[tuple[float, float, str]]]] = {}
        for game_id, g in self._games.items():
            t, ids = g.matches.finished_at, g.matches.match_id
            out[game_id] = {k: [(t[m], r, ids[m]) for r, m in zip(p.rating, p.match, strict=True)]
                            for k, p in g.points.items()}  # fmt: skip
        return out

    def points(self, game_id: str) -> tuple[dict[BotKey, Points], Matches]:
        """The rating history of each row the Table moved in a game (first moved first), and the matches."""
        g = self._games.get(game_id)
        return ({}, Matches()) if g is None else (g.points, g.matches)

    @property
    def rows(self) -> dict[str, dict[BotKey, Row]]:
        """Every row, per game (a snapshot: changing it changes nothing)."""
        if self._rows is None:
            self._rows = {g: {k: _row(k[0], k[1], st) for k, st in rows.items()} for g, rows in self._state.items()}
        return self._rows

    def load(
        self,
        game_id: str,
        rows: Iterable[Row] = (),
        latest: Mapping[str, str] | None = None,
        h2h: Mapping[tuple[BotKey, BotKey], Sequence[int]] | None = None,
        applied: Iterable[str] = (),
    ) -> None:
        """Start from stored values (the Redis ladder loads the part of a game's ladder a batch touches)."""
        self._rows = None
        g = self._game(game_id)
        for row in rows:
            g.state[row.key] = [*_state(row), row.key, None]
        g.latest.update(latest or {})
        g.h2h.update({pair: list(c) for pair, c in (h2h or {}).items()})
        self.applied.update(applied)

    def row(self, game_id: str, key: BotKey) -> Row:
        """The row of ``key``, or the one it would start with."""
        rows = self._state.get(game_id, {})
        if key in rows:
            return _row(key[0], key[1], rows[key])
        prev = self.latest.get(game_id, {}).get(key[0])
        pred = rows.get((key[0], prev)) if prev is not None else None
        return new_row(key[0], key[1], _row(key[0], str(prev), pred) if pred is not None else None)

    def apply(self, result: Mapping[str, Any]) -> Update | None:
        """Apply a stored result (``arena.results``) once; None if it does not count or was applied before."""
        rec = counting_record(result)
        if rec is None:
            return None
        pairs: list[tuple[BotKey, BotKey, float]] = []
        keys = self._apply_record(rec, pairs)
        if keys is None:
            return None
        state = self._state[rec[0]]
        rows = {k: _row(k[0], k[1], state[k]) for k in keys}
        return Update(rec[1], rec[2], rows, [Pair(a, b, s) for a, b, s in pairs])

    def apply_all(self, results: Iterable[Mapping[str, Any]]) -> int:
        """Apply results in order; how many counted (not applied before, rated, not aborted)."""
        return self.apply_records([rec for rec in map(counting_record, results) if rec is not None])

    def apply_records(self, records: Iterable[Record]) -> int:
        """``apply_all`` on the results' records (``arena.results.record``); how many counted and were not
        applied before.

        The loop of rebuilds and batches: a two-seat match of two different bot versions (most matches) is
        applied here with the Table's parts in local variables; any other goes the general way
        (``_apply_record``), which gives the same as this path on two seats (tests/test_elo_exact.py)."""
        applied = self.applied
        general = self._apply_record
        last: str | None = None
        g = None
        n = 0
        for rec in records:
            if len(rec) != _TWO_SEATS:
                if general(rec) is not None:
                    n += 1
                continue
            game_id, match_id, finished_at, rated, end_reason, an, av, ar, af, bn, bv, br, bf = rec
            if not rated or end_reason == _ABORTED or match_id in applied:  # counts(rec), inline
                continue
            ka = (an, av)
            kb = (bn, bv)
            if ka == kb:
                if general(rec) is not None:
                    n += 1
                continue
            if game_id != last or g is None:
                g = self._games.get(game_id) or self._game(game_id)
                state, latest, h2h, points = g.state, g.latest, g.h2h, g.points
                finished, ids = g.matches.finished_at, g.matches.match_id
                last = game_id
            sa = state.get(ka)
            sb = state.get(kb)
            if sa is None:  # new versions start from their predecessors, then become their names' latest
                sa = state[ka] = self._new_state(g, ka)
                if sb is None:  # both new: both predecessors are looked up first; then seat order
                    sb = state[kb] = self._new_state(g, kb)
                    latest[an] = av
                    latest[bn] = bv
                else:
                    latest[an] = av
            elif sb is None:
                sb = state[kb] = self._new_state(g, kb)
                latest[bn] = bv
            if af == bf:  # pair_score((af, ar), (bf, br))
                s = 1.0 if ar < br else 0.5 if ar == br else 0.0
            else:
                s = 1.0 if af < bf else 0.0
            _play2(sa, sb, s, finished_at)
            applied.add(match_id)
            n += 1
            m = len(ids)  # g.add_points(finished_at, match_id, (sa, sb)), inline
            finished.append(finished_at)
            ids.append(match_id)
            ka, kb = sa[_KEY], sb[_KEY]  # the table's own key objects: cheap to hash and compare
            pa = sa[_HISTORY]
            if pa is None:
                pa = sa[_HISTORY] = points[ka] = Points()
            pa.rating.append(sa[0])
            pa.match.append(m)
            pb = sb[_HISTORY]
            if pb is None:
                pb = sb[_HISTORY] = points[kb] = Points()
            pb.rating.append(sb[0])
            pb.match.append(m)
            if kb < ka:
                ka, kb, s = kb, ka, 1.0 - s
            c = h2h.get((ka, kb))
            if c is None:
                c = h2h[(ka, kb)] = [0, 0, 0]
            c[0 if s == 1.0 else 1 if s == 0.5 else 2] += 1
        if n:
            self._rows = None
        return n

    def _apply_record(
        self, rec: Record, pairs: list[tuple[BotKey, BotKey, float]] | None = None
    ) -> list[BotKey] | None:
        """Apply one record, any number of seats: the bot versions it moved (seat order, each once), None if
        it does not count or was applied before."""
        game_id, match_id, finished_at = rec[0], rec[1], rec[2]
        if not counts(rec) or match_id in self.applied:
            return None
        g = self._games.get(game_id) or self._game(game_id)
        state = g.state
        states = []
        new = []
        place = []
        for i in range(HEAD, len(rec), SEAT):
            key = (rec[i], rec[i + 1])
            st = state.get(key)
            if st is None:
                st = state[key] = self._new_state(g, key)
                new.append(key)
            states.append(st)
            place.append((rec[i + 3], rec[i + 2]))  # as places(): (forfeited, rank)
        bots: list[BotKey] = [st[_KEY] for st in states]
        own: list[tuple[BotKey, BotKey, float]] = [] if pairs is None else pairs
        _play(bots, place, states, finished_at, own)
        self._rows = None
        self.applied.add(match_id)
        for key in new:  # a new version becomes its name's latest (in seat order)
            g.latest[key[0]] = key[1]
        if len(bots) != len(set(bots)):
            states = list({id(st): st for st in states}.values())
        g.add_points(finished_at, match_id, states)
        for ka, kb, s in own:
            if kb < ka:
                ka, kb, s = kb, ka, 1.0 - s
            c = g.h2h.get((ka, kb))
            if c is None:
                c = g.h2h[(ka, kb)] = [0, 0, 0]
            c[0 if s == 1.0 else 1 if s == 0.5 else 2] += 1
        return [st[_KEY] for st in states]

    @staticmethod
    def _new_state(g: _Game, key: BotKey) -> list[Any]:
        """A version never rated on this ladder: provisional, from the rating of its name's latest version."""
        prev = g.latest.get(key[0])
        pred = g.state.get((key[0], prev)) if prev is not None else None
        return [pred[0] if pred is not None else INITIAL_RATING, 0, 0, 0, 0, 0.0, 0.0, key, None]

    def leaderboard(self, game_id: str) -> list[Row]:
        """Rows best first; ties by name and version so the order is deterministic."""
        return sorted(self.rows.get(game_id, {}).values(), key=lambda r: (-r.rating, r.name, r.version))
