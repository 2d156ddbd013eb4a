"""The CLI's tables on a narrow terminal: ids and dates are what a person copies into the next command, so
none is ever cut (rich would shorten them to ``ladder-s…``), and every time shown is UTC and says so.
Each table is printed by a process of its own with ``COLUMNS`` set, as rich reads it from a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LADDER_ID = "ladder-shangrila-3p-1790000000000-0123456789ab"  # the scheduler's ids are this long
WHEN = 1_795_200_180.0  # 2026-11-20 18:43 UTC; 19:43 in Paris

SCRIPT = f"""
import sys
from arena.cli import bots, matches, owners
from arena.cli.common import print_table
from arena.ladder.elo import Row
from arena.ladder.report import BOARD_WHOLE, board_table
from arena.ladder.values import Standing
from referee.wire import arena_pb2, match_pb2

which = sys.argv[1]
if which == "matches":
    seats = [match_pb2.SeatResult(seat=i, bot_name=n, rank=i + 1, score=9 - i)
             for i, n in enumerate(["mybot-experimental", "strong", "greedy"])]
    m = arena_pb2.MatchRecord(match_id="{LADDER_ID}", game_id="shangrila-3p", state=arena_pb2.MATCH_STATE_FINISHED,
                              bot_names=["mybot-experimental", "strong", "greedy"], rated=True, enqueued_at={WHEN},
                              result=match_pb2.MatchResult(end_reason=match_pb2.END_REASON_COMPLETED, seats=seats))
    q = arena_pb2.MatchRecord(match_id="shanghaien-0a1b2c3d", game_id="shanghaien",
                              state=arena_pb2.MATCH_STATE_QUEUED, bot_names=["alpha", "beta"], enqueued_at={WHEN})
    matches._print_matches([m, q])
elif which == "ladder":
    rows = [Standing(1, Row("mybot-experimental", "2026.11.20-rc1", 1612.4, 40, 30, 2, 8, {WHEN})),
            Standing(2, Row("strong", "1.0.0", 1500.0, 3, 1, 0, 2, {WHEN}))]
    print_table(board_table("shangrila-3p", rows), BOARD_WHOLE)
"""


def _printed(which: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TZ": "Europe/Paris"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, which], check=True, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)  # fmt: skip
    assert all(len(line) <= columns for line in done.stdout.splitlines() if LADDER_ID not in line), done.stdout
    return done.stdout


@pytest.mark.parametrize("columns", [80, 60, 200])
def test_match_list_never_cuts_an_id_or_a_date(columns: int) -> None:
    out = _printed("matches", columns)
    for whole in (LADDER_ID, "shanghaien-0a1b2c3d", "shangrila-3p", "2026-11-20 18:43", "mybot-experimental"):
        assert whole in out, (whole, out)
    assert "…" not in out and "19:43" not in out  # UTC, not the local time
    assert "(UTC)" in out


@pytest.mark.parametrize("columns", [80, 50])
def test_ladder_show_never_cuts_a_name_a_version_or_a_date(columns: int) -> None:
    out = _printed("ladder", columns)
    for whole in ("mybot-experimental", "2026.11.20-rc1", "2026-11-20 18:43", "last played (UTC)"):
        assert whole in out, (whole, out)
    assert "…" not in out and "19:43" not in out
