"""What the line protocol's adapter (sdk/stdio.py) costs a move (issue 33; target: under 0.5 ms median).

The adapter's own cost is the CPU time this process spends in one ``StdioBot.act``: writing the turn line
(the view as JSON, the legal actions, what happened since) and reading the reply back into an action.
Waiting for the command costs no CPU here, so the figure leaves out the bot's own time. The turns are
real: every decision of random playouts of each game, handed to the adapter in order as one match. The
command is the C starter (docs/examples/c-bot) compiled into a temporary folder, so the wall time of a
move, printed beside, is mostly the pipe and the operating system's scheduling.

    python benchmarks/stdio_bench.py [--games 20] [--command "./mybot"]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee import games  # noqa: E402
from referee.logs import configure  # noqa: E402
from sdk.bot import MatchInfo, MatchOutcome, SeatOutcome, Turn  # noqa: E402
from sdk.stdio import StdioBot  # noqa: E402

TARGET_MS = 0.5


def playout_turns(game_id: str, match_id: str, rng: random.Random) -> list[Turn]:
    """Every decision of one random playout, as the SDK's client hands them to a bot."""
    state = games.get(game_id).new_state()
    history: list[Any] = []
    turns = []
    while not state.is_terminal():
        seat = state.current_player()
        legal = state.legal_actions()
        if seat >= 0:
            turns.append(Turn(match_id=match_id, game_id=game_id, seat=seat, ply=len(history), state=state,
                              view=state.view(seat), legal_actions=legal, move_ms=1000, time_bank_ms=10_000,
                              history=tuple(history)))  # fmt: skip
            action = rng.choice(legal)
        else:  # chance: the engine's own outcome
            action = rng.choice(legal)
        history.append(action)
        state = state.apply(action)
    return turns


async def measure(bot: StdioBot, game_id: str, match_id: str, turns: list[Turn]) -> tuple[list[float], list[float]]:
    """The adapter's CPU and the wall time of each move, in ms."""
    n = games.get(game_id).num_players
    for seat in range(n):
        bot.on_match_start(MatchInfo(match_id, game_id, seat, tuple(f"b{i}" for i in range(n)), "", False))
    cpu, wall = [], []
    for turn in turns:
        c0, w0 = time.process_time(), time.perf_counter()
        action = await bot.act(turn)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        played = action.action if hasattr(action, "action") else action
        assert str(played) in {str(a) for a in turn.legal_actions}, played
    for seat in range(n):
        seats = tuple(SeatOutcome(s, f"b{s}", 0, 1, False) for s in range(n))
        bot.on_match_end(MatchOutcome(match_id, game_id, seat, "completed", seats, "", len(turns)))
    return cpu, wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="playouts per game id (default 20)")
    parser.add_argument("--command", help="the bot's command (default: the C starter, compiled with gcc)")
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        command = args.command
        if command is None:
            gcc = shutil.which("gcc")
            if gcc is None:
                print("gcc is not installed: give --command", file=sys.stderr)
                return 2
            binary = Path(tmp) / "cbot"
            subprocess.run([gcc, "-O2", "-o", str(binary), str(ROOT / "docs/examples/c-bot/bot.c")], check=True)
            command = str(binary)
        rng = random.Random(33)
        print(f"command: {command}; {args.games} playouts per game; target: adapter CPU median < {TARGET_MS} ms")
        print(f"{'game':14} {'moves':>6} {'CPU p50':>9} {'CPU p90':>9} {'wall p50':>9} {'wall p90':>9}  (ms a move)")
        worst = 0.0
        for game_id in games.GAME_IDS:
            cpu: list[float] = []
            wall: list[float] = []
            for k in range(args.games):
                bot = StdioBot(command)
                match_id = f"bench-{game_id}-{k}"
                c, w = await measure(bot, game_id, match_id, playout_turns(game_id, match_id, rng))
                await bot.aclose()
                cpu += c
                wall += w
            median = statistics.median(cpu)
            worst = max(worst, median)
            print(f"{game_id:14} {len(cpu):>6} {median:>9.3f} {percentile(cpu, 0.9):>9.3f} "
                  f"{statistics.median(wall):>9.3f} {percentile(wall, 0.9):>9.3f}")  # fmt: skip
        print(f"adapter CPU a move, worst median {worst:.3f} ms: {'meets' if worst < TARGET_MS else 'MISSES'} "
              f"the {TARGET_MS} ms target")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
