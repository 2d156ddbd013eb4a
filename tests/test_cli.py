"""The `arena` command as a person runs it."""

from __future__ import annotations

import pytest

from arena.cli.main import main


@pytest.mark.parametrize("game_id", ["shanghaien", "shangrila-3p", "shangrila-4p"])
def test_demo_plays_a_match_to_the_end(game_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--game", game_id, "--seed", "5", "--players", "random"]) == 0
    out = capsys.readouterr().out
    assert "seed hash" in out and "place 1" in out


def test_demo_is_reproducible_from_its_seed(capsys: pytest.CaptureFixture[str]) -> None:
    main(["demo", "--seed", "9", "-v"])
    first = capsys.readouterr().out
    main(["demo", "--seed", "9", "-v"])
    assert capsys.readouterr().out == first


def test_unknown_player_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--players", "nobody"]) == 2
    assert "unknown player" in capsys.readouterr().err
