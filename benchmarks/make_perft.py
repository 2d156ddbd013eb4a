"""Generate seeds/perft/<game_id>.json: fixed games and perft counts that pin the engines' behaviour.

Run from the project root: ``.venv/bin/python benchmarks/make_perft.py`` (``--check`` compares instead of
writing). tests/test_perft.py checks that the engines reproduce every count, action and result.

Each file holds:
- ``sequences``: for seeds ``perft-1``..``perft-3``, a whole game. Chance outcomes come from
  ``referee.chance.sample(state, seed, ply)``; a player's action is ``legal[rng.randrange(len(legal))]``
  with ``legal`` sorted by canonical text and ``rng = random.Random(f"perft:{seed}")`` (so the choice does
  not depend on the engine's list order). Every ply records [action text, number of legal actions (at a
  chance node: of outcomes)]; the end records scores and ranks.
- ``perft``: leaf counts at depths 1.. from a start position (the actions from ``new_state()`` that reach
  it), counting player and chance moves alike (each chance outcome is one move, whatever its probability).
  Shangri-La starts at the initial state (setup); Shanghaien at the first player decision after a fixed
  deal, and again at a decision where a player holds dirty-tricks cards.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee import chance, games  # noqa: E402
from referee.games import State  # noqa: E402
from referee.games.shanghaien import ShanghaienState  # noqa: E402

OUT_DIR = ROOT / "seeds" / "perft"
SEEDS = ("perft-1", "perft-2", "perft-3")
GAME_IDS = ("shangrila-3p", "shangrila-4p", "shanghaien")
PERFT_DEPTH = {"shangrila-3p": 3, "shangrila-4p": 3, "shanghaien": 6}
FIXED_DEAL = (
    "deal german-3",
    "deal trick-both",
    "deal french-1",
    "deal chinese-4",
    "deal german-1",
    "deal italian-2",
)
TRICKS_PERFT_DEPTH = 5


def choose(state: State, rng: random.Random) -> Any:
    legal = sorted(state.legal_actions(), key=str)
    return legal[rng.randrange(len(legal))]


def sequence(game_id: str, seed: str) -> dict[str, Any]:
    state: State = games.get(game_id).new_state()
    rng = random.Random(f"perft:{seed}")
    plies: list[list[Any]] = []
    while state.current_player() != games.TERMINAL:
        legal = state.legal_actions()
        if state.current_player() == games.CHANCE:
            action = chance.sample(state, seed, len(plies))
        else:
            action = choose(state, rng)
        plies.append([str(action), len(legal)])
        state = state.apply(action)
    return {"seed": seed, "plies": plies, "scores": state.scores(), "ranks": state.ranks()}


def perft(state: State, depth: int) -> int:
    """Leaf nodes ``depth`` moves (player or chance) below ``state``; a game that ends sooner adds none."""
    legal = state.legal_actions()
    if depth <= 1:
        return len(legal) if depth == 1 else 1
    return sum(perft(state.apply(action), depth - 1) for action in legal)


def play_texts(game_id: str, texts: list[str]) -> State:
    state: State = games.get(game_id).new_state()
    for text in texts:
        state = state.apply(state.parse_action(text))
    return state


def tricks_start(plies_of: list[list[list[Any]]]) -> list[str]:
    """Shanghaien: the texts reaching the first roll decision where the mover holds a dirty-tricks card."""
    for plies in plies_of:
        state = cast(ShanghaienState, games.get("shanghaien").new_state())
        for ply, (text, _count) in enumerate(plies):
            p = state.current_player()
            if p >= 0 and text == "roll" and sum(state.tricks[p * 3 : p * 3 + 3]) > 0:
                return [t for t, _ in plies[:ply]]
            state = state.apply(state.parse_action(text))
    raise RuntimeError("no sequence reaches a decision with a dirty-tricks card in hand")


def perft_entry(game_id: str, start: list[str], depth: int) -> dict[str, Any]:
    state = play_texts(game_id, start)
    return {"start": start, "leaves": {str(d): perft(state, d) for d in range(1, depth + 1)}}


def build(game_id: str) -> dict[str, Any]:
    sequences = [sequence(game_id, seed) for seed in SEEDS]
    perfts = [perft_entry(game_id, list(FIXED_DEAL) if game_id == "shanghaien" else [], PERFT_DEPTH[game_id])]
    if game_id == "shanghaien":
        start = tricks_start([s["plies"] for s in sequences])
        perfts.append(perft_entry(game_id, start, TRICKS_PERFT_DEPTH))
    return {
        "game_id": game_id,
        "about": "Made by benchmarks/make_perft.py (its docstring gives the recipe); checked by tests/test_perft.py.",
        "player_choice": "legal actions sorted by text, index rng.randrange(len), rng = random.Random('perft:' + seed)",
        "chance": "referee.chance.sample(state, seed, ply), ply counting every ply from 0",
        "sequences": sequences,
        "perft": perfts,
    }


def dumps(data: dict[str, Any]) -> str:
    """JSON with every innermost list of scalars on one line (a ply per line)."""
    text = json.dumps(data, indent=1)
    return re.sub(r"\[\n\s*([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s*", ", ", m[1]) + "]", text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare with the stored files instead of writing")
    parser.add_argument("game_ids", nargs="*", default=list(GAME_IDS))
    args = parser.parse_args(argv)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    status = 0
    for game_id in args.game_ids:
        text = dumps(build(game_id))
        path = OUT_DIR / f"{game_id}.json"
        if args.check:
            same = path.exists() and path.read_text() == text
            print(f"{path.relative_to(ROOT)}: {'up to date' if same else 'DIFFERS'}")
            status |= not same
        else:
            path.write_text(text)
            print(f"{path.relative_to(ROOT)}: {len(text.encode()) // 1024} KB")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
