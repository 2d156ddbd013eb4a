"""Engine speed: random playouts with the full legal-action listing at every ply, on one core.

Run from the project root: ``.venv/bin/python benchmarks/engine.py`` (``--seconds 5`` per game id,
``--game shanghaien`` to measure one game id, ``--seed`` to change the playouts).

Every ply does what a referee or a search bot does at least once: at a player's node it lists the
legal actions (``state.legal_actions()``) and picks one with ``rng.choice``; at a chance node it
lists the outcomes (``state.chance_outcomes()``) and samples one with ``rng.choices`` by their
probabilities. Then ``state.apply(action)``, which checks legality, gives the next state. All the
randomness comes from one local ``random.Random``, so a run is reproducible.

It prints plies/s, games/s and mean plies per game against the targets below, and the memory one
mid-game state holds (measured with tracemalloc while a state is rebuilt by replaying a game).
Rates are per CPU-second of this process (``time.process_time``), so other busy processes on the
machine do not count against the engine; the wall-clock time is shown beside it when they differ.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee import games  # noqa: E402
from referee.games import CHANCE, TERMINAL, State  # noqa: E402

TARGETS: dict[str, int | None] = {"shangrila-3p": None, "shangrila-4p": 50_000, "shanghaien": 100_000}
"""Plies per second each engine must reach on one core; None: measured for information only."""


@dataclass
class Result:
    game_id: str
    seconds: float  # CPU time of this process
    wall: float
    games: int
    plies: int

    @property
    def plies_per_second(self) -> float:
        return self.plies / self.seconds

    @property
    def games_per_second(self) -> float:
        return self.games / self.seconds

    @property
    def mean_plies(self) -> float:
        return self.plies / self.games if self.games else 0.0


def playout(state: State, rng: random.Random) -> tuple[State, int]:
    """Play ``state`` to the end at random; the final state and the number of plies played."""
    plies = 0
    choice = rng.choice
    choices = rng.choices
    while True:
        player = state.current_player()
        if player == TERMINAL:
            return state, plies
        action: Any
        if player == CHANCE:
            outcomes = state.chance_outcomes()
            action = choices([a for a, _ in outcomes], weights=[p for _, p in outcomes])[0]
        else:
            action = choice(state.legal_actions())
        state = state.apply(action)
        plies += 1


def measure(game_id: str, seconds: float, seed: int) -> Result:
    """Whole random games of ``game_id`` for about ``seconds`` of CPU time (the last game is finished)."""
    game = games.get(game_id)
    rng = random.Random(seed)
    playout(game.new_state(), rng)  # warm up: first-use imports and caches
    total_games = total_plies = 0
    wall_start = time.perf_counter()
    start = time.process_time()
    deadline = start + seconds
    while True:
        _, plies = playout(game.new_state(), rng)
        total_games += 1
        total_plies += plies
        now = time.process_time()
        if now >= deadline:
            return Result(game_id, now - start, time.perf_counter() - wall_start, total_games, total_plies)


def state_memory(game_id: str, seed: int) -> tuple[int, int]:
    """(bytes, ply) of one mid-game state: what tracemalloc sees still allocated once only it is kept.

    A seeded game is played once to learn its length; it is then replayed up to its middle with
    tracemalloc on, keeping only the latest state, so what remains allocated is that state (and the
    legal-action list it caches) plus whatever it shares with nothing else.
    """
    game = games.get(game_id)
    _, length = playout(game.new_state(), random.Random(seed))
    middle = length // 2
    rng = random.Random(seed)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        state: State = game.new_state()
        for _ in range(middle):
            player = state.current_player()
            if player == CHANCE:
                outcomes = state.chance_outcomes()
                action = rng.choices([a for a, _ in outcomes], weights=[p for _, p in outcomes])[0]
            else:
                action = rng.choice(state.legal_actions())
            state = state.apply(action)
        state.legal_actions()  # as a referee would: the state then caches its list
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if stat.size_diff > 0)
    return grown, middle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0, help="time per game id (default: 5)")
    parser.add_argument("--game", choices=games.GAME_IDS, action="append", help="game id (repeatable; default: all)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the playouts' random.Random (default: 1)")
    parser.add_argument("--no-memory", action="store_true", help="skip the per-state memory measurement")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target is missed")
    args = parser.parse_args(argv)
    game_ids: list[str] = args.game or list(games.GAME_IDS)

    print(f"Python {sys.version.split()[0]}, one core, {args.seconds:g} CPU-seconds per game id, seed {args.seed}")
    header = f"{'game id':<14} {'plies/s':>10} {'games/s':>9} {'plies/game':>11} {'target':>10}  verdict"
    if not args.no_memory:
        header += "   state memory (mid-game)"
    print(header)
    missed = False
    for game_id in game_ids:
        r = measure(game_id, args.seconds, args.seed)
        target = TARGETS.get(game_id)
        if target is None:
            target_text, verdict = "-", "(information)"
        else:
            ok = r.plies_per_second >= target
            missed |= not ok
            target_text, verdict = f">={target:,}", "met" if ok else "MISSED"
        line = (
            f"{game_id:<14} {r.plies_per_second:>10,.0f} {r.games_per_second:>9,.1f} {r.mean_plies:>11.1f}"
            f" {target_text:>10}  {verdict:<13}"
        )
        if not args.no_memory:
            size, ply = state_memory(game_id, args.seed)
            line += f"   {size:,} B at ply {ply}"
        if r.wall > 1.2 * r.seconds:
            line += f"   (busy machine: {r.wall:.1f} s wall for {r.seconds:.1f} s CPU)"
        print(line, flush=True)
    print("targets: shanghaien >= 100,000 plies/s; shangrila-4p >= 50,000 plies/s; shangrila-3p for information")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
