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


def test_the_entry_points_docstring_lists_every_command() -> None:
    """arena/cli/main.py's docstring is the map a reader opens first: every command and sub-command."""
    import argparse

    from arena.cli import main as main_module

    def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(actions[0].choices) if actions else {}

    lines = [line for line in (main_module.__doc__ or "").splitlines() if line.startswith("    arena ")]
    for name, sub in choices(main_module.build_parser()).items():
        if f"``arena {name}`` is an alias" in (main_module.__doc__ or ""):
            continue
        assert any(f" {name}" in line for line in lines), name
        for leaf in choices(sub):
            assert any(f" {name} " in line and leaf in line for line in lines), (name, leaf)
