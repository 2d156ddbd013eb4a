"""The reference bots' per-game dispatch (``sdk.strategies``): every game family has its strategy, and a new
game (``tests.dicerace``) is played by random, greedy and strong, and replayed on a page, once its engine,
strategy and drawing exist and its one registration (``GameEntry``) names them."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.cli.main import main
from arena.replay import replay_data
from arena.replay.frames import frames_of
from referee import chance, games
from referee.games import CHANCE
from sdk import heuristics
from sdk.bots import make_bot
from sdk.players import turn_for
from sdk.strategies import strategy_for, strategy_of
from tests import dicerace
from tests.dicerace import DiceRaceGame, DiceRaceState, DiceRaceStrategy

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_every_game_has_a_strategy(game_id: str) -> None:
    game = games.get(game_id)
    strategy = strategy_for(game)
    assert strategy.family == game.family
    assert strategy_of(game.new_state()) is strategy is games.load(games.entry_of(game).strategy)


# -------------------------------------------------------------------------- a third game


@pytest.fixture
def registered() -> Iterator[games.GameEntry]:
    with dicerace.registered() as entry:
        yield entry


def play(bots: list[Any], seed: str) -> DiceRaceState:
    state = DiceRaceGame().new_state()
    ply = 0
    while not state.is_terminal():
        if state.current_player() == CHANCE:
            action = chance.sample(state, seed, ply)
        else:
            action = bots[state.current_player()].act(turn_for(state))
            assert action in state.legal_actions()
        state = state.apply(action)
        ply += 1
    return state


def test_an_unknown_family_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="know no game family 'dicerace'"):
        strategy_of(DiceRaceGame().new_state())


def test_a_new_game_needs_its_engine_and_one_registration(registered: games.GameEntry) -> None:
    game, state = dicerace.protocols(DiceRaceGame())
    assert games.get("dicerace") is registered.games[0] and "dicerace" in games.GAME_IDS
    assert heuristics.value(state, 0) == 0.0
    for seed in range(5):
        greedy = play([make_bot("greedy", seed=seed), make_bot("greedy", seed=seed + 1)], f"race:{seed}")
        assert all(6 <= t <= 9 for t in greedy.totals)  # greedy adds 2 every turn, then 0-3 from the coins
        strong = play([make_bot("strong", seed=seed, iterations=40), make_bot("random", seed=seed)], f"race:{seed}")
        assert strong.is_terminal()
    rng = random.Random(3)
    bot = make_bot("strong", seed=1, iterations=20)
    assert bot.act(turn_for(game.new_state())) == "add 2"
    assert DiceRaceStrategy().greedy_action(DiceRaceGame().new_state(), rng) == "add 2"


def test_the_registration_is_undone_and_not_taken_twice(registered: games.GameEntry) -> None:
    with pytest.raises(ValueError, match="already registered: dicerace dicerace"):
        games.register(registered)
    games.unregister("dicerace")
    assert "dicerace" not in games.GAME_IDS and "dicerace" not in games.FAMILIES
    games.register(registered)  # for the fixture to undo


def test_a_new_game_gets_a_replay_page_without_a_change_in_arena_replay(
    registered: games.GameEntry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``arena transcript html`` draws the toy game with the script part its registration names; nothing under
    ``arena/replay/`` knows it (the page's own script draws it through the hooks)."""
    lines = dicerace.transcript([make_bot("greedy", seed=1), make_bot("random", seed=2)], "race:page")
    source = tmp_path / "race.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = tmp_path / "race.html"
    assert main(["transcript", "html", str(source), "-o", str(page), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["html"] == str(page)
    html = page.read_text(encoding="utf-8")
    assert dicerace.DRAWING.script in html and 'id: "race"' in html
    data = replay_data(lines)
    assert data["game"] == {"game_id": "dicerace", "family": "dicerace", "num_players": 2}
    assert data["verified"]["ok"] is True
    frames = frames_of(data)
    assert len(frames) == len(lines) - 1 and frames[-1]["view"]["totals"] == data["footer"]["scores"]
    assert not [p for p in (ROOT / "arena" / "replay").rglob("*") if p.is_file() and b"dicerace" in p.read_bytes()]


def test_the_sdk_still_exports_the_engines_as_games_after_the_bots_are_imported() -> None:
    """``from sdk import games`` is the engines, whatever SDK subpackages were imported before."""
    import referee.games
    import sdk.bots.strong  # noqa: F401 - imports the strategies
    from sdk import games

    assert games is referee.games
