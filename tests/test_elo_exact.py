"""The ladder's fast paths give, bit for bit, what the rules written plainly give (no Redis).

``arena.ladder.elo`` runs the rating rules on a mutable working state, with the two-seat case unrolled;
``reference_rate`` and ``ReferenceTable`` below are the rules as the ladder first implemented them (one
Row per seat, ``dataclasses.replace``). Same results in the same order must give the same floats, to the
last bit, and the same W/D/L, history and head-to-head counts. The storage encoders of
``arena.ladder.store`` must write exactly what ``json.dumps`` writes (rows written before and after them
are compared as strings)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from arena.ladder import elo
from arena.ladder.elo import BotKey, Row, Table
from arena.ladder.store import _count_lines, _h2h_field, _pair_field, _point, _point_lines, _PointText, member
from arena.results import counts, game_prefix, record_json, seat_key


def counts_plainly(result: Mapping[str, Any]) -> bool:
    """Whether a stored result counts, as the ladder first wrote it (on the result, not its record)."""
    return bool(result.get("rated")) and result.get("end_reason") != "aborted" and len(result.get("seats", ())) >= 2


def reference_rate(result: Mapping[str, Any], before: Mapping[BotKey, Row]) -> elo.Update:
    seats = list(result["seats"])
    n = len(seats)
    bots = [seat_key(s) for s in seats]
    place = elo.places(seats)
    ratings = [before[b].rating for b in bots]
    weight = 1.0 / (n - 1)
    delta = dict.fromkeys(bots, 0.0)
    info = dict.fromkeys(bots, 0.0)
    pairs: list[elo.Pair] = []
    for i in range(n):
        k = elo.k_factor(before[bots[i]].games) * weight
        for j in range(n):
            if i == j or bots[i] == bots[j]:
                continue
            e = elo.expected(ratings[i], ratings[j])
            s = elo.pair_score(place[i], place[j])
            delta[bots[i]] += k * (s - e)
            info[bots[i]] += weight * e * (1.0 - e)
            if i < j:
                pairs.append(elo.Pair(bots[i], bots[j], s))
    finished_at = float(result.get("finished_at", 0.0))
    rows: dict[BotKey, Row] = {}
    for b in dict.fromkeys(bots):
        best = min(p for p, key in zip(place, bots, strict=True) if key == b)
        shared = sum(1 for p in place if p == best) > 1
        first = best == min(place)
        old = before[b]
        rows[b] = replace(
            old,
            rating=old.rating + delta[b],
            games=old.games + 1,
            wins=old.wins + (first and not shared),
            draws=old.draws + (first and shared),
            losses=old.losses + (not first),
            last_played=max(old.last_played, finished_at),
            info=old.info + info[b],
        )
    return elo.Update(str(result["match_id"]), finished_at, rows, pairs)


class ReferenceTable:
    def __init__(self) -> None:
        self.rows: dict[str, dict[BotKey, Row]] = {}
        self.latest: dict[str, dict[str, str]] = {}
        self.h2h: dict[str, dict[tuple[BotKey, BotKey], list[int]]] = {}
        self.history: dict[str, dict[BotKey, list[tuple[float, float, str]]]] = {}
        self.applied: set[str] = set()

    def row(self, game_id: str, key: BotKey) -> Row:
        rows = self.rows.get(game_id, {})
        if key in rows:
            return rows[key]
        prev = self.latest.get(game_id, {}).get(key[0])
        return elo.new_row(key[0], key[1], rows.get((key[0], prev)) if prev is not None else None)

    def apply(self, result: Mapping[str, Any]) -> elo.Update | None:
        match_id = str(result["match_id"])
        if not counts_plainly(result) or match_id in self.applied:
            return None
        game_id = str(result["game_id"])
        before = {seat_key(s): self.row(game_id, seat_key(s)) for s in result["seats"]}
        update = reference_rate(result, before)
        self.applied.add(match_id)
        rows = self.rows.setdefault(game_id, {})
        latest = self.latest.setdefault(game_id, {})
        for key, row in update.rows.items():
            if key not in rows:
                latest[key[0]] = key[1]
            rows[key] = row
            self.history.setdefault(game_id, {}).setdefault(key, []).append(
                (update.finished_at, row.rating, update.match_id)
            )
        h2h = self.h2h.setdefault(game_id, {})
        for pair in update.pairs:
            a, b, s = (pair.a, pair.b, pair.score) if pair.a < pair.b else (pair.b, pair.a, 1.0 - pair.score)
            counts_ = h2h.setdefault((a, b), [0, 0, 0])
            counts_[0 if s == 1.0 else 1 if s == 0.5 else 2] += 1
        return update


def bits(row: Row) -> tuple[Any, ...]:
    """Every field, floats as their exact bits."""
    return (row.name, row.version, row.rating.hex(), row.games, row.wins, row.draws, row.losses,
            row.last_played.hex(), row.info.hex())  # fmt: skip


seat_st = st.fixed_dictionaries(
    {
        "bot_name": st.sampled_from(["a", "b", "c", "d", "e"]),
        "bot_version": st.sampled_from(["1", "1", "1", "2", "3"]),
        "rank": st.integers(1, 4),
        "status": st.sampled_from(["active"] * 6 + ["forfeited"]),
    }
)
result_st = st.fixed_dictionaries(
    {
        "game_id": st.sampled_from(["g2", "g4"]),
        "seats": st.lists(seat_st, min_size=1, max_size=4),
        "rated": st.sampled_from([True] * 9 + [False]),
        "end_reason": st.sampled_from(["completed"] * 9 + ["aborted"]),
        "finished_at": st.floats(1.6e9, 1.8e9),
        "match_id": st.sampled_from([f"m{i}" for i in range(60)]),  # some delivered twice
    }
)


@settings(max_examples=100, deadline=None)
@given(results=st.lists(result_st, max_size=60))
def test_a_table_gives_the_reference_ladder_bit_for_bit(results: list[dict[str, Any]]) -> None:
    fast, ref = Table(), ReferenceTable()
    for res in results:
        got, want = fast.apply(res), ref.apply(res)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert {k: bits(r) for k, r in got.rows.items()} == {k: bits(r) for k, r in want.rows.items()}
            assert got.pairs == want.pairs and got.finished_at == want.finished_at
    assert {g: {k: bits(r) for k, r in rows.items()} for g, rows in fast.rows.items()} == {
        g: {k: bits(r) for k, r in rows.items()} for g, rows in ref.rows.items()
    }
    assert fast.latest == ref.latest and fast.h2h == ref.h2h and fast.applied == ref.applied
    assert fast.history == ref.history  # floats compared with ==: equal values, and repr below for the bits
    assert repr(fast.history) == repr(ref.history)
    again = Table()  # the same results in the same order through apply_all (the rebuild's path)
    again.apply_all(results)
    assert again.rows == fast.rows and repr(again.history) == repr(fast.history) and again.h2h == fast.h2h
    assert again.latest == fast.latest and again.applied == fast.applied


record_result_st = result_st | st.fixed_dictionaries(
    {
        "game_id": st.sampled_from(["g2", 'g"ü,[']),
        "seats": st.lists(seat_st, min_size=2, max_size=4),
        "rated": st.just(True),
        "end_reason": st.just("completed"),
        "finished_at": st.one_of(st.floats(), st.integers(0, 2**53)),  # any float, an int too
        "match_id": st.sampled_from([f"m{i}" for i in range(60)] + ['m"%r\\n', "ünï"]),
    }
)


@settings(max_examples=100, deadline=None)
@given(results=st.lists(record_result_st, max_size=60))
def test_stored_records_give_what_the_results_give_bit_for_bit(results: list[dict[str, Any]]) -> None:
    """The Redis ladder applies the record stored beside each result (``record_json``, decoded by
    ``json.loads``), not the result: the same rows, history, head-to-head counts, latest versions and applied
    matches, to the last bit (the time a match finished goes through JSON text and back)."""
    texts = [record_json(r) for r in results]
    assert [counts(json.loads(t)) for t in texts] == [counts_plainly(r) for r in results]
    for t, r in zip(texts, results, strict=True):
        assert t.startswith(game_prefix(r["game_id"]))  # how a reader picks one game's
    direct, recorded = Table(), Table()
    assert recorded.apply_records([json.loads(t) for t in texts]) == direct.apply_all(results)
    assert {g: {k: bits(r) for k, r in rows.items()} for g, rows in recorded.rows.items()} == {
        g: {k: bits(r) for k, r in rows.items()} for g, rows in direct.rows.items()
    }
    assert repr(recorded.history) == repr(direct.history) and recorded.h2h == direct.h2h
    assert recorded.latest == direct.latest and recorded.applied == direct.applied


@settings(max_examples=100, deadline=None)
@given(
    ratings=st.lists(st.floats(800, 2600), min_size=2, max_size=4),
    games=st.lists(st.integers(0, 40), min_size=4, max_size=4),
    ranks=st.lists(st.integers(1, 4), min_size=4, max_size=4),
    forfeits=st.lists(st.booleans(), min_size=4, max_size=4),
    same=st.booleans(),
)
def test_rate_gives_the_reference_update_bit_for_bit(
    ratings: list[float], games: list[int], ranks: list[int], forfeits: list[bool], same: bool
) -> None:
    names = [f"b{i}" for i in range(len(ratings))]
    if same and len(names) > 2:
        names[2] = names[0]  # a bot version in two seats
    seats = [{"bot_name": n, "bot_version": "1", "rank": ranks[i], "status": "forfeited" if forfeits[i] else "active"}
             for i, n in enumerate(names)]  # fmt: skip
    before = {(n, "1"): Row(n, "1", rating=ratings[i], games=games[i], info=0.5 * i) for i, n in enumerate(names)}
    res = {"match_id": "m", "seats": seats, "finished_at": 1.7e9}
    got, want = elo.rate(res, before), reference_rate(res, before)
    assert {k: bits(r) for k, r in got.rows.items()} == {k: bits(r) for k, r in want.rows.items()}
    assert got.pairs == want.pairs


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(1e9, 2e9), st.integers(0, 3).map(float))


@given(points=st.lists(st.tuples(floats, floats, st.text(max_size=12)), min_size=1, max_size=20))
def test_history_points_are_written_as_json_dumps_writes_them(points: list[tuple[float, float, str]]) -> None:
    assert _point_lines(points).split("\n") == [_point(*p) for p in points]
    for p in points:
        assert "\n" not in _point(*p)


@given(
    matches=st.lists(st.tuples(floats, st.text(max_size=12)), min_size=1, max_size=10),
    ratings=st.lists(st.tuples(floats, st.integers(0, 9)), min_size=1, max_size=30),
    cut=st.integers(0, 30),
)
@example(matches=[(1.7e9, 'a%rb%%"c'), (2.0, "%s\n")], ratings=[(1500.5, 0), (1.5, 1), (-0.0, 0)], cut=1)  # % in ids
def test_a_tables_compact_history_is_written_as_json_dumps_writes_it(
    matches: list[tuple[float, str]], ratings: list[tuple[float, int]], cut: int
) -> None:
    played = elo.Matches()
    for t, m in matches:
        played.finished_at.append(t)
        played.match_id.append(m)
    points = elo.Points()
    for r, i in ratings:
        points.rating.append(r)
        points.match.append(i % len(matches))
    want = [
        _point(played.finished_at[i], r, played.match_id[i]) for r, i in zip(points.rating, points.match, strict=True)
    ]
    encode = _PointText(played)
    assert encode.lines(points).split("\n") == want
    if 0 < cut < len(want):  # a long history goes in parts
        assert encode.lines(points, 0, cut).split("\n") + encode.lines(points, cut).split("\n") == want


@given(a=st.tuples(st.text(), st.text()), b=st.tuples(st.text(), st.text()))
def test_head_to_head_fields_and_counts_are_written_as_json_dumps_writes_them(a: BotKey, b: BotKey) -> None:
    assert _pair_field(member(a), member(b)) == _h2h_field(a, b)
    counts = [[1, 0, 2], [0, 0, 0], [12, 3, 40]]
    assert _count_lines(counts).split("\n") == [json.dumps(c) for c in counts]


def test_json_float_text_is_repr() -> None:
    """What the fast encoders rely on: json.dumps writes a finite float as repr does."""
    for x in (1500.0, 1523.123456789012, 1.7e9 + 0.1, 5e-324, -0.0, math.pi * 1e15):
        assert json.dumps(x) == repr(x)
