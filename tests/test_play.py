"""`arena play` end to end: a loopback referee, one process per player, transcripts that verify,
and the transcript commands on them; its SPRT (units, stopping) and its ``--json`` as a script reads it."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from arena.cli.main import main
from arena.local.play import Player, SprtMonitor, elo_difference, play, record, rotation_plan
from arena.local.sprt import SprtConfig
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus
from tests.helpers import arena

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("game_id", "n"), [("shanghaien", 2), ("shangrila-3p", 3)])
def test_local_play_runs_rotated_matches_with_verifiable_transcripts(game_id: str, n: int, tmp_path: Path) -> None:
    players = [Player("random", "first"), *(Player("random", f"other{i}") for i in range(1, n))]
    report = asyncio.run(play(game_id, players, games_count=n, seed="t", concurrency=2, rotate=True, out_dir=tmp_path))
    assert len(report.results) == n
    assert all(r.end_reason is EndReason.COMPLETED for r in report.results)
    seat_of_first = sorted(next(s.seat for s in r.seats if s.bot_name == "first") for r in report.results)
    assert seat_of_first == list(range(n))  # seats rotate
    summary = report.summary()
    assert summary["games"] == n
    assert sum(int(summary[k]) for k in ("wins", "draws", "losses")) == n
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == n
    assert main(["transcript", "verify", *map(str, files)]) == 0


def test_transcript_commands_show_and_reject_tampering(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    players = [Player("random", "a"), Player("random", "b")]
    asyncio.run(play("shanghaien", players, games_count=1, seed="s", concurrency=1, rotate=False, out_dir=tmp_path))
    path = next(tmp_path.glob("*.jsonl"))
    assert main(["transcript", "show", str(path), "--boards"]) == 0
    out = capsys.readouterr().out
    assert "shanghaien" in out and "round" in out and "end: completed" in out
    lines = path.read_text().splitlines()
    footer = json.loads(lines[-1])
    footer["scores"] = [99, 0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:-1], json.dumps(footer)]) + "\n")
    assert main(["transcript", "verify", str(bad)]) == 1
    assert f"line {len(lines)}" in capsys.readouterr().err


def test_elo_difference() -> None:
    assert elo_difference(0.5, 100)[0] == pytest.approx(0.0)
    elo, err = elo_difference(0.76, 100)
    assert elo == pytest.approx(200, abs=1) and 50 < err < 120
    assert elo_difference(1.0, 10)[0] > 0  # clamped, finite


def test_rotation_plan_pairs_seeds_with_swapped_seats() -> None:
    plain = rotation_plan(2, 4, "s")
    assert [m.seed for m in plain] == ["s:0", "s:1", "s:2", "s:3"] and plain[0].match_id == "s-0000"
    paired = rotation_plan(2, 4, "s", seed_group=2)
    assert [(m.seed, m.order) for m in paired] == [("s:0", (0, 1)), ("s:0", (1, 0)), ("s:1", (0, 1)), ("s:1", (1, 0))]
    table = rotation_plan(3, 6, "s", seed_group=3)
    assert [m.seed for m in table] == ["s:0"] * 3 + ["s:1"] * 3
    assert sorted(m.order.index(0) for m in table[:3]) == [0, 1, 2]  # the hero takes every seat on a seed
    assert all(m.order == (0, 1, 2) for m in rotation_plan(3, 3, "s", rotate=False))


def _result(match_id: str, ranks: list[tuple[str, int]], forfeited: str = "", aborted: bool = False) -> MatchResult:
    seats = tuple(SeatResult(i, name, "1", 10 - rank, rank, SeatStatus.FORFEITED if name == forfeited
                             else SeatStatus.ACTIVE, 0, 0) for i, (name, rank) in enumerate(ranks))  # fmt: skip
    end = EndReason.ABORTED if aborted else EndReason.COMPLETED
    return MatchResult(match_id, "shanghaien", end, seats, "seed", "hash", 10)


def test_sprt_units_are_pairs_scored_as_the_ladder_scores() -> None:
    plan = rotation_plan(2, 8, "s", seed_group=2)
    monitor = SprtMonitor.for_plan(SprtConfig(elo0=0, elo1=10), plan, "me", 2, 2)
    ids = [m.match_id for m in plan]
    monitor.add(_result(ids[1], [("you", 1), ("me", 2)]))  # results come in any order
    assert monitor.tally.units == 0 and monitor.pending
    monitor.add(_result(ids[0], [("me", 1), ("you", 1)]))  # a draw and a loss: 0.5 of 2 points
    monitor.add(_result(ids[2], [("me", 1), ("you", 2)]))
    monitor.add(_result(ids[3], [("you", 1), ("me", 1)], forfeited="you"))  # a forfeited seat is last
    monitor.add(_result(ids[4], [("me", 1), ("you", 2)], aborted=True))  # spoils its pair
    monitor.add(_result(ids[5], [("you", 1), ("me", 2)]))
    assert monitor.tally.counts == [0, 1, 0, 0, 1] and monitor.tally.units == 2 and not monitor.decided
    assert monitor.tally.llr == pytest.approx(0.0, abs=0.2)
    three = SprtMonitor.for_plan(SprtConfig(), rotation_plan(3, 3, "t", seed_group=3), "me", 3, 3)
    assert three.tally.grid == 12  # three tables of two pairwise games each, in half points
    for m in rotation_plan(3, 3, "t", seed_group=3):
        three.add(_result(m.match_id, [("me", 1), ("a", 2), ("b", 2)]))
    assert three.tally.counts[12] == 1


def test_a_record_without_a_counted_game_has_no_infinite_numbers(tmp_path: Path) -> None:
    summary = record([_result("m", [("me", 1), ("you", 2)], aborted=True)], "me")
    assert summary["games"] == 0 and summary["aborted"] == 1
    assert summary["elo"] is None and summary["elo_error"] is None and summary["mean_score"] is None
    json.dumps(summary, allow_nan=False)
    won = record([_result("m", [("me", 1), ("you", 2)]), _result("n", [("you", 1), ("me", 1)], forfeited="you")], "me")
    assert (won["wins"], won["draws"], won["losses"], won["pairwise_score"]) == (2, 0, 0, 1.0)


PLAY_KEYS = {"game", "players", "seed", "transcripts", "games_requested", "games", "aborted", "wins", "draws",
             "losses", "mean_score", "pairwise_score", "elo", "elo_error", "sprt", "replays", "problems"}  # fmt: skip
SPRT_KEYS = {"elo0", "elo1", "alpha", "beta", "elo_model", "model", "games_per_unit", "lower", "upper", "llr",
             "decision", "units", "counts"}  # fmt: skip


def finite_numbers(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite_numbers(v) for v in value.values())
    if isinstance(value, list):
        return all(finite_numbers(v) for v in value)
    return True


def test_play_json_is_all_stdout_holds(tmp_path: Path) -> None:
    done = arena("play", "random", "--vs", "random", "--games", "2", "--out", str(tmp_path / "t"), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout: the progress bar went to stderr
    assert set(doc) == PLAY_KEYS and doc["sprt"] is None and doc["games"] == 2 and doc["problems"] == []
    assert "shanghaien matches" in done.stderr and finite_numbers(doc)
    assert doc["players"] == ["random", "random#1"] and len(list((tmp_path / "t").glob("*.jsonl"))) == 2


def test_play_names_each_version_of_a_bot_by_its_file(tmp_path: Path) -> None:
    """``arena play mybot.py:MyBot --vs mybot_v1.py:MyBot`` (the README's loop: is the new version better?)
    showed ``MyBot vs MyBot#1``, which says neither which side is which."""
    example = (ROOT / "docs" / "examples" / "mybot.py").read_text(encoding="utf-8")
    (tmp_path / "mybot.py").write_text(example, encoding="utf-8")
    (tmp_path / "mybot_v1.py").write_text(example, encoding="utf-8")
    done = arena("play", f"{tmp_path / 'mybot.py'}:MyBot", "--vs", f"{tmp_path / 'mybot_v1.py'}:MyBot", "--games", "2",
                 "--seed", "v", "--out", str(tmp_path / "t"), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["players"] == ["mybot.py:MyBot", "mybot_v1.py:MyBot"]


def test_play_sprt_stops_once_a_hypothesis_is_accepted(tmp_path: Path) -> None:
    """greedy beats random at Shanghaien almost every game: against elo1=200 a handful of pairs decide."""
    out = tmp_path / "t"
    done = arena("play", "greedy", "--vs", "random", "--games", "60", "--sprt", "elo0=0", "elo1=200",
                 "--seed", "sp", "--out", str(out), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    sprt = doc["sprt"]
    assert set(doc) == PLAY_KEYS and set(sprt) == SPRT_KEYS and finite_numbers(doc)
    assert sprt["decision"] == "h1" and sprt["llr"] >= sprt["upper"] and sprt["model"] == "pentanomial"
    assert sprt["elo_model"] == "logistic" and sprt["games_per_unit"] == 2 and len(sprt["counts"]) == 5
    assert doc["games"] < 60 and 2 * sprt["units"] <= doc["games"]  # stopped early, on whole pairs
    assert len(list(out.glob("*.jsonl"))) == doc["games"]
    assert "LLR" in done.stderr and "(-2.94, +2.94)" in done.stderr
    # the run stops quietly: the matches called off and the bots stopped before the referee went away
    assert "seat disconnected" not in done.stderr and "connection lost" not in done.stderr, done.stderr
    human = arena("play", "random", "--vs", "random", "--games", "2", "--sprt", "elo1=20", "--sprt-model",
                  "trinomial", "--out", str(tmp_path / "h"))  # fmt: skip
    assert human.returncode == 0, human.stderr
    assert "SPRT elo0=0 elo1=20 (logistic Elo, trinomial)" in human.stdout and "after 2 games" in human.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--games", "0"], "argument --games: must be at least 1, not 0"),
     (["--sprt", "elo0=5", "elo1=1"], "arena: error: --sprt: elo0 must be below elo1"),
     (["--sprt", "alpha=2"], "arena: error: --sprt: alpha and beta must lie between 0 and 1"),
     (["--sprt-model", "heptanomial"], "argument --sprt-model: invalid choice")],
)  # fmt: skip
def test_play_refuses_a_bad_command_line_with_nothing_on_stdout(argv: list[str], message: str) -> None:
    done = arena("play", "random", *argv, "--json", timeout=60)
    assert done.returncode == 2 and done.stdout == "" and message in done.stderr


HANGS = """
import random, threading, time
from sdk.bot import Bot

class HangOnExit(Bot):
    name = "hang-on-exit"
    version = "1.0.0"

    def __init__(self):
        self.rng = random.Random(1)
        threading.Thread(target=time.sleep, args=(3600,)).start()  # never ends, not a daemon

    def act(self, turn):
        return self.rng.choice(turn.legal_actions)


class Broken(Bot):
    name = "broken"
    version = "1.0.0"

    def __init__(self):
        raise RuntimeError("no model file")
"""


def test_play_and_tournament_exit_although_the_bot_starts_a_thread_that_never_ends(tmp_path: Path) -> None:
    """The bot's module and constructor run only in its own processes: checking the players before the
    run once loaded the bot here, and its thread kept ``arena play`` alive for an hour after its report."""
    (tmp_path / "hangs.py").write_text(HANGS)
    done = arena("play", "hangs.py:HangOnExit", "--vs", "random", "--games", "2", "--out", "t", "--json",
                 cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["games"] == 2
    done = arena("tournament", "hangs.py:HangOnExit", "random", "--games", "2", "--out", "u", "--json",
                 cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_play_names_the_bot_that_cannot_be_loaded(tmp_path: Path) -> None:
    (tmp_path / "hangs.py").write_text(HANGS)
    done = arena("play", "hangs.py:HangOnExit", "--vs", "hangs.py:Broken", "--json", cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert "cannot load bot 'hangs.py:Broken': RuntimeError: no model file" in done.stderr


DATACLASS_BOT = """
from dataclasses import dataclass, field

from helper_weights import WEIGHT  # a module beside the bot's file, as ``python mybot.py`` would find it
from sdk import Bot, Turn


@dataclass
class Memory:
    seen: list[str] = field(default_factory=list)


class Remembers(Bot):
    name, version = "remembers", "1"

    def __init__(self) -> None:
        self.memory = Memory()

    def act(self, turn: Turn):
        self.memory.seen.append(turn.match_id)
        return turn.legal_actions[WEIGHT % len(turn.legal_actions)]
"""


def test_a_bot_file_may_use_dataclasses_and_import_its_neighbours(tmp_path: Path) -> None:
    """A bot file is loaded as an import is: it is in ``sys.modules`` while it runs (``@dataclass`` looks
    its module up there; loading one once failed with "'NoneType' object has no attribute '__dict__'") and
    its folder is importable."""
    from sdk.client import load_bot

    (tmp_path / "remembers.py").write_text(DATACLASS_BOT)
    (tmp_path / "helper_weights.py").write_text("WEIGHT = 3\n")
    bot = load_bot(f"{tmp_path / 'remembers.py'}:Remembers")
    assert bot.name == "remembers" and type(bot).__name__ == "Remembers"
