"""`arena play` end to end: a loopback referee, one process per player, transcripts that verify,
and the transcript commands on them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from arena.cli.main import main
from arena.local.play import Player, elo_difference, play
from referee.wire.values import EndReason


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
    assert sum(int(summary[k]) for k in ("wins", "draws", "losses")) == n  # type: ignore[call-overload]
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
