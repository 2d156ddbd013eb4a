"""``arena tournament``: the tables and seeds it plans, the Elo fit, the scores, and the command end to end
(stdout piped, as a script reads it)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from arena.ladder.elo import ELO_SCALE
from arena.local.play import Player, PlayReport
from arena.local.tournament import PairGame, TournamentReport, fit_elo, games_per_table, labels, plan, tables
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus
from tests.helpers import arena

ROOT = Path(__file__).resolve().parents[1]


def test_tables_of_each_format() -> None:
    assert tables(4, 2, "round-robin") == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert tables(4, 2, "gauntlet") == [(0, 1), (0, 2), (0, 3)]
    assert tables(4, 3, "round-robin") == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert tables(4, 3, "gauntlet") == [(0, 1, 2), (0, 1, 3), (0, 2, 3)]
    assert tables(4, 4, "round-robin") == [(0, 1, 2, 3)] == tables(4, 4, "gauntlet")
    assert len(tables(6, 4, "round-robin")) == 15 and len(tables(6, 4, "gauntlet")) == 10
    with pytest.raises(ValueError, match="at least 3 bots"):
        tables(2, 3, "round-robin")
    with pytest.raises(ValueError, match="at least 2 bots"):
        tables(1, 2, "gauntlet")


def test_every_table_plays_the_same_seeds_in_every_rotation() -> None:
    assert games_per_table(10, 2) == 10 and games_per_table(10, 3) == 12 and games_per_table(1, 4) == 4
    table_list = tables(4, 3, "round-robin")
    matches = plan(table_list, 5, "s")  # rounded up to 6 a table: seeds s:0 and s:1, three rotations each
    assert len(matches) == 4 * 6 and len({m.match_id for m in matches}) == len(matches)
    for t, table in enumerate(table_list):
        mine = [m for m in matches if m.match_id.startswith(f"s-t{t:02d}-")]
        assert {m.seed for m in mine} == {"s:0", "s:1"}
        for seed in ("s:0", "s:1"):
            orders = [m.order for m in mine if m.seed == seed]
            assert sorted(orders[0]) == sorted(table) and all(sorted(o) == sorted(table) for o in orders)
            for bot in table:  # each bot takes every seat once on each seed
                assert sorted(o.index(bot) for o in orders) == [0, 1, 2]
    assert [m.seed for m in matches[:12]] == ["s:0"] * 12  # seed by seed across the tables


def test_labels_tell_copies_apart() -> None:
    assert labels(["random", "greedy", "strong"]) == ["random", "greedy", "strong"]
    assert labels(["random", "x.py:Mine", "random"]) == ["random#0", "Mine", "random#2"]
    # one class name from two files: each says its file (an SPRT of a new version against the old one)
    assert labels(["mybot.py:MyBot", "old/mybot_v1.py:MyBot", "greedy"]) == ["mybot.py:MyBot", "mybot_v1.py:MyBot",
                                                                             "greedy"]  # fmt: skip
    assert labels(["a/mybot.py:MyBot", "b/mybot.py:MyBot"]) == ["a/mybot.py:MyBot", "b/mybot.py:MyBot"]


def test_elo_fit() -> None:
    even = [PairGame(0, 1, 1.0, 1.0), PairGame(0, 1, 0.0, 1.0), PairGame(1, 2, 0.5, 1.0)]
    ratings, errors = fit_elo(3, even)
    assert ratings == pytest.approx([0.0, 0.0, 0.0], abs=1e-6) and all(0 < e < 1000 for e in errors)
    games = [PairGame(0, 1, 1.0, 1.0)] * 750 + [PairGame(0, 1, 0.0, 1.0)] * 250  # 75%: about 191 Elo
    ratings, errors = fit_elo(2, games)
    assert sum(ratings) == pytest.approx(0.0, abs=1e-6)
    assert ratings[0] - ratings[1] == pytest.approx(-400 * math.log10(1 / 0.75 - 1), rel=0.01)
    information = 1000 * 0.75 * 0.25  # of the difference, in natural log-odds units
    half_the_difference = 1.96 * ELO_SCALE / 2 / math.sqrt(information)
    assert errors[0] == pytest.approx(errors[1]) and errors[0] == pytest.approx(half_the_difference, rel=0.01)
    ratings, errors = fit_elo(3, [PairGame(0, 1, 1.0, 1.0), PairGame(0, 2, 1.0, 1.0)] * 5)  # all won: finite
    assert ratings[0] > 0 > ratings[1] and all(math.isfinite(x) for x in ratings + errors)
    assert ratings[1] == pytest.approx(ratings[2])


def _result(
    match_id: str, seats: list[tuple[str, int, SeatStatus]], end: EndReason = EndReason.COMPLETED
) -> MatchResult:
    return MatchResult(match_id, "shangrila-3p", end, tuple(
        SeatResult(seat=i, bot_name=name, bot_version="1", score=10 - rank, rank=rank, status=status,
                   strikes=0, refusals=0)
        for i, (name, rank, status) in enumerate(seats)), "seed", "hash", 10)  # fmt: skip


def test_scores_count_pairs_as_the_ladder_does(tmp_path: Path) -> None:
    players = [Player("random", "a"), Player("random", "b"), Player("random", "c")]
    active, forfeited = SeatStatus.ACTIVE, SeatStatus.FORFEITED
    results = [
        _result("m1", [("a", 1, active), ("b", 2, active), ("c", 3, active)]),
        _result("m2", [("b", 1, active), ("c", 1, active), ("a", 3, active)]),
        _result("m3", [("c", 1, forfeited), ("a", 2, active), ("b", 3, active)]),  # c forfeited: last
        _result("m4", [("a", 1, active), ("b", 2, active), ("c", 3, active)], EndReason.ABORTED),  # not counted
    ]
    run = PlayReport(results, tmp_path, ["a", "b", "c"], games_count=4)
    report = TournamentReport(players, "round-robin", [(0, 1, 2)], 3, "s", run)
    cells = {(c["player"], c["opponent"]): (c["points"], c["games"]) for c in report.cross_table()}
    assert cells[("a", "b")] == (2.0, 3) and cells[("b", "a")] == (1.0, 3)
    assert cells[("a", "c")] == (2.0, 3) and cells[("b", "c")] == (2.5, 3) and cells[("c", "b")] == (0.5, 3)
    rows = {r["player"]: r for r in report.standings()}
    assert (rows["a"]["wins"], rows["a"]["draws"], rows["a"]["losses"], rows["a"]["games"]) == (2, 0, 1, 3)
    assert (rows["b"]["wins"], rows["b"]["draws"], rows["b"]["losses"]) == (0, 1, 2)
    assert rows["a"]["points"] == 4.0 and rows["a"]["pair_games"] == 6 and rows["a"]["score"] == pytest.approx(2 / 3)
    assert [r["rank"] for r in report.standings()] == [1, 2, 3] and report.standings()[0]["player"] == "a"
    assert sum(r["elo"] for r in rows.values()) == pytest.approx(0.0, abs=1e-6)


TOP_KEYS = {"game", "format", "players", "bots", "seed", "transcripts", "games_per_table", "games_requested",
            "games", "tables", "standings", "cross_table", "problems"}  # fmt: skip
ROW_KEYS = {"rank", "player", "bot", "games", "wins", "draws", "losses", "points", "pair_games", "score", "elo",
            "elo_error"}  # fmt: skip


@pytest.mark.parametrize(
    ("game", "fmt", "bots", "tables_", "per_table"),
    [("shanghaien", "gauntlet", ["greedy", "random", "random"], 2, 2),
     ("shangrila-3p", "round-robin", ["greedy", "random", "random", "random"], 4, 3)],
)  # fmt: skip
def test_tournament_command_json(
    game: str, fmt: str, bots: list[str], tables_: int, per_table: int, tmp_path: Path
) -> None:
    out = tmp_path / "t"
    done = arena("tournament", *bots, "--game", game, "--format", fmt, "--games", "2", "--seed", "tt",
                 "--out", str(out), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # stdout holds the JSON and nothing else; the progress bar went to stderr
    assert set(doc) == TOP_KEYS and doc["problems"] == [] and doc["format"] == fmt and doc["game"] == game
    assert len(doc["tables"]) == tables_ and doc["games_per_table"] == per_table
    assert doc["games"] == doc["games_requested"] == tables_ * per_table
    assert len(list(out.glob("*.jsonl"))) == doc["games"]
    assert "matches" in done.stderr or "table" in done.stderr
    assert all(set(row) == ROW_KEYS for row in doc["standings"])
    assert all(set(c) == {"player", "opponent", "points", "games", "score"} for c in doc["cross_table"])
    n = len(bots)
    assert len(doc["cross_table"]) == n * (n - 1) and len(doc["standings"]) == n
    assert all(isinstance(r["elo"], float) and isinstance(r["elo_error"], float) for r in doc["standings"])
    seeds: dict[str, Counter[str]] = {}  # table -> how often each seed was played (footers reveal the seed)
    for path in out.glob("*.jsonl"):
        table = path.stem.split("-")[1]
        seeds.setdefault(table, Counter())[json.loads(path.read_text().splitlines()[-1])["seed"]] += 1
    seats = len(doc["tables"][0])
    expected = Counter({f"tt:{j}": seats for j in range(per_table // seats)})
    assert len(seeds) == tables_ and all(c == expected for c in seeds.values())  # same seeds, every rotation
    if fmt == "gauntlet":  # two players: the others never meet, no score between them
        never = [c for c in doc["cross_table"] if doc["players"][0] not in (c["player"], c["opponent"])]
        assert never and all(c["games"] == 0 and c["score"] is None for c in never)
    greedy = next(r for r in doc["standings"] if r["player"] == "greedy")
    assert greedy["rank"] == 1  # greedy beats random players nearly always


def test_tournament_command_refuses_too_few_bots() -> None:
    done = arena("tournament", "random", "greedy", "--game", "shangrila-4p", "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert "arena: error: shangrila-4p: a 4-seat game needs at least 4 bots, got 2" in done.stderr
