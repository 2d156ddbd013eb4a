"""Strength of the reference bots: seat-rotated games played directly through the engines.

Run from the project root: ``.venv/bin/python benchmarks/strength.py`` (``--games 40`` for a quick
check, ``--game shanghaien`` for one game id, ``--time-per-move 0.5`` to give ``strong`` a clock instead
of its fixed rollout counts, ``--json FILE`` to keep the figures).

Pairings, per game id: ``strong`` against copies of ``greedy``, ``strong`` against copies of ``random``,
and ``greedy`` against copies of ``random``; for Shangri-La also ``strong-mixed``, the demo ladder's
table: ``strong`` with one ``greedy`` and the rest ``random``, where what counts is how often ``strong``
finishes ahead of ``greedy`` (the pairwise result the Elo ladder scores, a shared place as half). The bot
under test (the *hero*) takes seat ``k mod N`` in game ``k``, so every seat is played equally (in
``mixed`` the others' order alternates too). Every game has its own seed; chance comes from
``referee.chance.sample(state, seed, ply)`` as in a refereed match, and each bot gets its own seed, so a
run with rollout counts (the default) is reproducible. Bots are called as the SDK calls them, with a
``Turn`` (no network, no clock: the move limit is a generous 60 s).

Results: Shanghaien counts wins, draws and losses, and the win rate counts a draw as half a win;
Shangri-La counts first places, a shared first place included (``mixed``: ahead of, level with and behind
``greedy``, level as half). Each rate has a 95% Wilson interval
(for the win rate with draws as halves: the normal interval of the mean). The targets below are the
product requirement; the verdict compares the measured rate (not the interval) with its target.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing import Pool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee import chance, games  # noqa: E402
from sdk.bot import Bot, Turn  # noqa: E402
from sdk.bots import make_bot  # noqa: E402
from sdk.bots.strong import MEASURED  # noqa: E402

ITERATIONS: dict[str, int] = dict(MEASURED)
"""Default rollouts per move of ``strong``: Shanghaien at most 400 (the race usually settles sooner: about
14 ms a move), Shangri-La three per candidate (against greedy-like opponents the rollouts are deterministic
but for tie-breaks and the search stops after one per candidate, 50-100 ms a move; with a random opponent
in the table, about 130 ms)."""

MIXED = "mixed"
"""Not a bot: one ``greedy`` and the rest ``random`` (Shangri-La only)."""

PAIRINGS: tuple[tuple[str, str], ...] = (
    ("strong", "greedy"),
    ("strong", "random"),
    ("greedy", "random"),
    ("strong", MIXED),
)

TARGETS: dict[tuple[str, str, str], float] = {
    ("shanghaien", "strong", "greedy"): 0.70,
    ("shanghaien", "strong", "random"): 0.95,
    ("shangrila-3p", "strong", "greedy"): 2 / 3,
    ("shangrila-3p", "strong", "random"): 0.90,
    ("shangrila-4p", "strong", "greedy"): 2 / 4,
    ("shangrila-4p", "strong", "random"): 0.90,
    ("shangrila-3p", "strong", MIXED): 0.70,
    ("shangrila-4p", "strong", MIXED): 0.70,
}
"""Shanghaien: win rate (draws half); Shangri-La: first places (shared ones included); ``mixed``: ahead of
greedy (level as half). 70% ahead is about 150 Elo points: the demo ladder's order is then reliable."""

MOVE_MS = 60_000


@dataclass(frozen=True)
class Task:
    game_id: str
    hero: str
    opponent: str
    index: int
    iterations: int | None
    time_per_move: float | None

    @property
    def seed(self) -> str:
        return f"strength:{self.game_id}:{self.hero}-{self.opponent}:{self.index}"


@dataclass(frozen=True)
class GameResult:
    game_id: str
    hero: str
    opponent: str
    index: int
    hero_seat: int
    hero_rank: int
    first_places: int  # seats sharing rank 1
    rival_seat: int  # mixed: the greedy seat (-1 otherwise)
    ranks: list[int]
    scores: list[int]
    plies: int
    hero_moves: int
    hero_seconds: float
    hero_max_seconds: float


def seating(task: Task, n: int) -> list[str]:
    """Bot names by seat: the hero at ``index mod n``; copies of the opponent, or (mixed) one greedy and
    randoms, whose order turns every n games."""
    hero_seat = task.index % n
    if task.opponent != MIXED:
        others = [task.opponent] * (n - 1)
    else:
        others = ["greedy"] + ["random"] * (n - 2)
        turn = task.index // n % (n - 1)
        others = others[turn:] + others[:turn]
    return [*others[:hero_seat], task.hero, *others[hero_seat:]]


def build(name: str, seed: str, task: Task) -> Bot:
    if name != "strong":
        return make_bot(name, seed=seed)
    if task.time_per_move is not None:
        return make_bot(name, seed=seed, time_per_move=task.time_per_move)
    return make_bot(name, seed=seed, iterations=task.iterations)


def play(task: Task) -> GameResult:
    """One game of ``task``: the hero in seat ``index mod N``, the opponents elsewhere."""
    game = games.get(task.game_id)
    n = game.num_players
    hero_seat = task.index % n
    names = seating(task, n)
    bots = [build(name, f"{task.seed}:seat{seat}", task) for seat, name in enumerate(names)]
    state: Any = game.new_state()
    ply = 0
    history: list[Any] = []
    moves = 0
    spent = longest = 0.0
    while not state.is_terminal():
        seat = state.current_player()
        if seat == games.CHANCE:
            action = chance.sample(state, task.seed, ply)
        else:
            legal = state.legal_actions()
            turn = Turn(
                task.seed, task.game_id, seat, ply, state, state.view(seat), legal, MOVE_MS, 0, history=tuple(history)
            )
            start = time.perf_counter()
            answer = bots[seat].act(turn)
            elapsed = time.perf_counter() - start
            action = answer if not isinstance(answer, str) else state.parse_action(answer)
            if action not in legal:
                raise RuntimeError(f"{task.seed}: seat {seat} answered {action}, not a legal action")
            if seat == hero_seat:
                moves += 1
                spent += elapsed
                longest = max(longest, elapsed)
        state = state.apply(action)
        history.append(action)
        ply += 1
    ranks = state.ranks()
    return GameResult(
        task.game_id,
        task.hero,
        task.opponent,
        task.index,
        hero_seat,
        ranks[hero_seat],
        ranks.count(1),
        names.index("greedy") if task.opponent == MIXED else -1,
        ranks,
        state.scores(),
        ply,
        moves,
        spent,
        longest,
    )


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: list[float], z: float = 1.96) -> tuple[float, float]:
    n = len(values)
    if n < 2:
        return 0.0, 1.0
    mean = sum(values) / n
    var = sum((x - mean) ** 2 for x in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return max(0.0, mean - half), min(1.0, mean + half)


@dataclass
class Row:
    game_id: str
    hero: str
    opponent: str
    setting: str
    games: int = 0
    firsts: int = 0  # Shangri-La: first places, shared included; Shanghaien: wins + draws
    wins: int = 0  # sole first place
    draws: int = 0  # shared first place
    losses: int = 0
    hero_score: float = 0.0
    opponent_score: float = 0.0
    ms_per_move: float = 0.0
    max_ms: float = 0.0
    points: list[float] = field(default_factory=list)

    @property
    def two_player(self) -> bool:
        return self.game_id == "shanghaien"

    @property
    def pairwise(self) -> bool:
        """Scored as one pairing (draws half): Shanghaien, and strong against greedy in the mixed table."""
        return self.two_player or self.opponent == MIXED

    @property
    def rate(self) -> float:
        """Shanghaien and mixed: wins with draws as half; Shangri-La: first-place rate."""
        if not self.games:
            return 0.0
        return (self.wins + 0.5 * self.draws) / self.games if self.pairwise else self.firsts / self.games

    @property
    def interval(self) -> tuple[float, float]:
        return mean_interval(self.points) if self.pairwise else wilson(self.firsts, self.games)

    @property
    def target(self) -> float | None:
        return TARGETS.get((self.game_id, self.hero, self.opponent))

    def verdict(self) -> str:
        target = self.target
        if target is None:
            fair = 0.5 if self.two_player else 1 / games.get(self.game_id).num_players
            return f"(fair {fair:.0%})"
        return "met" if self.rate >= target else "MISSED"


def summarise(results: list[GameResult], settings: dict[str, str]) -> list[Row]:
    rows: dict[tuple[str, str, str], Row] = {}
    moves: dict[tuple[str, str, str], int] = {}
    for r in results:
        key = (r.game_id, r.hero, r.opponent)
        row = rows.get(key)
        if row is None:
            setting = settings[r.game_id] if r.hero == "strong" else "-"
            row = rows[key] = Row(r.game_id, r.hero, r.opponent, setting)
            moves[key] = 0
        row.games += 1
        if r.rival_seat >= 0:  # mixed: ahead of, level with or behind greedy
            rival = r.ranks[r.rival_seat]
            won, shared, first = r.hero_rank < rival, r.hero_rank == rival, r.hero_rank == 1
            others = [r.scores[r.rival_seat]]
        else:
            shared = r.hero_rank == 1 and r.first_places > 1
            won = first = r.hero_rank == 1
            others = [s for seat, s in enumerate(r.scores) if seat != r.hero_seat]
        row.firsts += first
        if shared:
            row.draws += 1
        elif won:
            row.wins += 1
        else:
            row.losses += 1
        row.points.append(1.0 if won and not shared else 0.5 if shared else 0.0)
        row.hero_score += r.scores[r.hero_seat]
        row.opponent_score += sum(others) / len(others)
        row.ms_per_move += 1000 * r.hero_seconds
        row.max_ms = max(row.max_ms, 1000 * r.hero_max_seconds)
        moves[key] += r.hero_moves
    for key, row in rows.items():
        row.hero_score /= row.games
        row.opponent_score /= row.games
        row.ms_per_move /= max(1, moves[key])
    order = {gid: i for i, gid in enumerate(games.GAME_IDS)}
    pair = {p: i for i, p in enumerate(PAIRINGS)}
    return sorted(rows.values(), key=lambda r: (order[r.game_id], pair[(r.hero, r.opponent)]))


def table(rows: list[Row]) -> str:
    head = (
        f"{'game id':<13} {'hero':<6} {'vs':<7} {'setting':<13} {'games':>5} {'W/D/L':>11} {'rate':>6} "
        f"{'95% CI':>13} {'target':>7}  {'verdict':<10} {'score':>11} {'ms/move':>8} {'max ms':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lo, hi = r.interval
        target = f"{r.target:.0%}" if r.target is not None else "-"
        lines.append(
            f"{r.game_id:<13} {r.hero:<6} {r.opponent:<7} {r.setting:<13} {r.games:>5} "
            f"{f'{r.wins}/{r.draws}/{r.losses}':>11} {r.rate:>6.1%} {f'{lo:.0%}-{hi:.0%}':>13} {target:>7}  "
            f"{r.verdict():<10} {f'{r.hero_score:.1f}:{r.opponent_score:.1f}':>11} {r.ms_per_move:>8.1f} "
            f"{r.max_ms:>7.0f}"
        )
    return "\n".join(lines)


def tasks(
    game_ids: list[str], pairings: list[tuple[str, str]], n_games: int, iterations: dict[str, int], tpm: float | None
) -> Iterator[Task]:
    for gid in game_ids:
        for hero, opponent in pairings:
            if opponent == MIXED and games.get(gid).num_players < 3:
                continue
            for k in range(n_games):
                yield Task(gid, hero, opponent, k, None if tpm is not None else iterations[gid], tpm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=200, help="games per pairing and game id (default: 200)")
    parser.add_argument("--game", choices=games.GAME_IDS, action="append", help="game id (repeatable; default: all)")
    parser.add_argument(
        "--pairing",
        choices=[f"{h}-{o}" for h, o in PAIRINGS],
        action="append",
        help="HERO-OPPONENT (repeatable; default: all)",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument(
        "--iterations",
        action="append",
        default=[],
        metavar="GAME=N",
        help="rollouts per move of strong for a game id (default: "
        + ", ".join(f"{g}={n}" for g, n in ITERATIONS.items())
        + ")",
    )
    parser.add_argument("--time-per-move", type=float, help="give strong this many seconds a move instead")
    parser.add_argument("--json", type=Path, help="write the rows and per-game results to this file")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target is missed")
    args = parser.parse_args(argv)

    game_ids: list[str] = args.game or list(games.GAME_IDS)
    pairings = [tuple(p.split("-")) for p in args.pairing] if args.pairing else list(PAIRINGS)
    iterations = dict(ITERATIONS)
    for item in args.iterations:
        gid, _, n = item.partition("=")
        if gid not in iterations or not n.isdigit():
            parser.error(f"--iterations {item!r}: write GAME=N with GAME one of {', '.join(ITERATIONS)}")
        iterations[gid] = int(n)
    tpm: float | None = args.time_per_move
    settings = {gid: f"{tpm:g} s/move" if tpm is not None else f"{iterations[gid]} rollouts" for gid in game_ids}

    todo = list(tasks(game_ids, pairings, args.games, iterations, tpm))
    # The slow games first, so the workers finish together.
    todo.sort(key=lambda t: (t.hero != "strong", t.opponent != "greedy", -len(t.game_id)))
    print(
        f"{len(todo)} games on {args.workers} worker(s): {', '.join(game_ids)}; "
        f"strong: {', '.join(f'{g} {s}' for g, s in settings.items())}",
        flush=True,
    )
    start = time.perf_counter()
    results: list[GameResult] = []
    with Pool(args.workers) as pool:
        for i, result in enumerate(pool.imap_unordered(play, todo), 1):
            results.append(result)
            if i % max(1, len(todo) // 20) == 0 or i == len(todo):
                print(f"  {i}/{len(todo)} games, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    rows = summarise(results, settings)
    print(table(rows))
    print(
        f"\n{len(results)} games in {elapsed:.0f} s on {args.workers} worker(s). Shanghaien rate: wins + draws/2; "
        "Shangri-La rate: first places, shared ones included. W/D/L: sole first / shared first / other.\n"
        "vs mixed (strong, one greedy, the rest random): rate = ahead of greedy + level/2; W/D/L: ahead / level "
        "/ behind greedy; score: strong's against greedy's."
    )
    if args.json:
        payload = {
            "elapsed_seconds": elapsed,
            "workers": args.workers,
            "settings": settings,
            "rows": [{k: v for k, v in asdict(r).items() if k != "points"} | {"rate": r.rate} for r in rows],
            "games": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    missed = [r for r in rows if r.verdict() == "MISSED"]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
