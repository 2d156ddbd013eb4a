"""The engines reproduce seeds/perft/<game_id>.json: fixed games move by move, their results, perft counts.

The files are made by benchmarks/make_perft.py (its docstring gives the recipe). A change here means the
engine's rules, its legal-move generation or the seeded chance changed: regenerate only on purpose.
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from referee import chance, games
from referee.games import State
from tests.playout import replay

PERFT_DIR = Path(__file__).resolve().parent.parent / "seeds" / "perft"
GAME_IDS = ["shangrila-3p", "shangrila-4p", "shanghaien"]


@cache
def load(game_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PERFT_DIR / f"{game_id}.json").read_text())
    return data


def perft(state: State, depth: int) -> int:
    """Leaf nodes ``depth`` moves below ``state``; every chance outcome counts as one move."""
    legal = state.legal_actions()
    if depth <= 1:
        return len(legal) if depth == 1 else 1
    return sum(perft(state.apply(action), depth - 1) for action in legal)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_files_are_complete_and_small(game_id: str) -> None:
    path = PERFT_DIR / f"{game_id}.json"
    assert path.stat().st_size < 300_000
    data = load(game_id)
    assert data["game_id"] == game_id
    assert [s["seed"] for s in data["sequences"]] == ["perft-1", "perft-2", "perft-3"]
    assert data["perft"] and all({"1", "2", "3"} <= set(p["leaves"]) for p in data["perft"])


@pytest.mark.parametrize("seed_index", [0, 1, 2])
@pytest.mark.parametrize("game_id", GAME_IDS)
def test_sequence_is_reproduced(game_id: str, seed_index: int) -> None:
    game = games.get(game_id)
    recorded = load(game_id)["sequences"][seed_index]
    seed = recorded["seed"]
    rng = random.Random(f"perft:{seed}")
    state: State = game.new_state()
    for ply, (text, count) in enumerate(recorded["plies"]):
        player = state.current_player()
        assert player != games.TERMINAL, f"ply {ply}: the game ended early"
        legal = state.legal_actions()
        assert len(legal) == count, f"ply {ply} ({text}): {len(legal)} legal actions, recorded {count}"
        if player == games.CHANCE:
            assert len(state.chance_outcomes_exact()) == count
            expected = chance.sample(state, seed, ply)
        else:
            ordered = sorted(legal, key=str)
            expected = ordered[rng.randrange(len(ordered))]
        assert str(expected) == text, f"ply {ply}: the recipe picks {expected}, recorded {text}"
        state = state.apply(state.parse_action(text))
    assert state.current_player() == games.TERMINAL
    assert state.legal_actions() == []
    assert state.scores() == recorded["scores"]
    assert state.ranks() == recorded["ranks"]


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_perft_counts(game_id: str) -> None:
    for entry in load(game_id)["perft"]:
        start = replay(game_id, entry["start"])
        if game_id == "shanghaien":
            assert start.current_player() in (0, 1), "Shanghaien perft starts at a player decision"
        for depth, leaves in entry["leaves"].items():
            assert perft(start, int(depth)) == leaves, f"{game_id} perft({depth}) from {len(entry['start'])} plies"


def test_hand_counted_setup_perft() -> None:
    """The Shangri-La setup counts follow from S5-S6 by hand, independent of the stored files."""
    # 3 players: 12 live villages x 7 spaces; a village may hold 2 tiles, 1 per colour.
    same_village, other_village = 84 * 6, 84 * 77
    assert load("shangrila-3p")["perft"][0]["leaves"] == {
        "1": 84,
        "2": 84 * 83,
        "3": same_village * 77 + other_village * 82,
    }
    # 4 players: 13 x 7 spaces; nobody can reach a setup limit (3 tiles, 2 per colour) in 3 placements.
    assert load("shangrila-4p")["perft"][0]["leaves"] == {"1": 91, "2": 91 * 90, "3": 91 * 90 * 89}
    # Shanghaien after a deal, round 1: roll; 21 dice outcomes; place either distinct die with an orientation.
    leaves = load("shanghaien")["perft"][0]["leaves"]
    first_place = 15 * 4 + 6 * 2
    assert [leaves[str(d)] for d in range(1, 7)] == [1, 21, first_place, first_place, first_place * 21, 72 * 36]
