"""Strength of the reference bots: seat-rotated games played directly through the engines.

Run from the project root: ``.venv/bin/python benchmarks/strength.py`` (``--games 40`` for a quick
check, ``--game shanghaien`` for one game id, ``--time-per-move 0.5`` to give ``strong`` a clock instead
of its fixed rollout counts, ``--json FILE`` to keep the figures).

Against the previous version (Shangri-La only): ``--pairing strong-strong_v1`` seats ``strong`` with copies
of ``strong_v1``, the strong bot as it was before its Shangri-La evaluation was made incremental (issue 16;
a frozen copy, ``benchmarks/strong_v1.py``, at its 18 rollouts). Its rate is strong's pairwise score
against each ``strong_v1`` seat (ahead 1, level 1/2, behind 0; 50% is equal strength), with the normal
95% interval of the per-game mean; ms/move is printed for both. ``--shadow`` asks ``strong_v1``, seeded as
the hero, every turn the hero gets in every Shangri-La game, times it and counts the turns on which both
chose the same action: the two versions' speed on identical positions, and whether they decide alike.

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
import statistics
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

from strong_v1 import StrongV1Bot  # noqa: E402

from referee import chance, games  # noqa: E402
from sdk.bot import Bot, Turn  # noqa: E402
from sdk.bots import make_bot  # noqa: E402
from sdk.bots.strong import MEASURED  # noqa: E402

ITERATIONS: dict[str, int] = dict(MEASURED)
"""Default rollouts per move of ``strong``: Shanghaien at most 400 (the race usually settles sooner: about
14 ms a move), Shangri-La three per candidate (against greedy-like opponents the rollouts are deterministic
but for tie-breaks and the search stops after one per candidate, 15-27 ms a move; with a random opponent
in the table, 32-38 ms; strong_v1 took 46-115 ms on the same turns, measured with ``--shadow``)."""

MIXED = "mixed"
"""Not a bot: one ``greedy`` and the rest ``random`` (Shangri-La only)."""

PREVIOUS = "strong_v1"
"""``strong`` before issue 16 (``benchmarks/strong_v1.py``; Shangri-La only)."""

PAIRINGS: tuple[tuple[str, str], ...] = (
    ("strong", "greedy"),
    ("strong", "random"),
    ("greedy", "random"),
    ("strong", MIXED),
)
"""The pairings played by default."""

EXTRA_PAIRINGS: tuple[tuple[str, str], ...] = (("strong", PREVIOUS),)
"""Played when asked for (``--pairing``)."""

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
    shadow: bool = False  # ask strong_v1 every hero turn too (Shangri-La, hero strong)

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
    hero_times: list[float] = field(default_factory=list)  # seconds of each hero move
    other_times: list[float] = field(default_factory=list)  # seconds of each move of the other seats
    shadow_times: list[float] = field(default_factory=list)  # seconds of strong_v1 on each hero turn (--shadow)
    shadow_same: int = 0  # hero turns on which strong_v1 chose the hero's action
    hero_cpu: list[float] = field(default_factory=list)  # CPU seconds (this thread's) of each hero move
    other_cpu: list[float] = field(default_factory=list)
    shadow_cpu: list[float] = field(default_factory=list)


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
    if name == PREVIOUS:
        return StrongV1Bot(seed=seed, iterations=task.iterations) if task.iterations else StrongV1Bot(seed=seed)
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
    shadow: Bot | None = None
    if task.shadow and task.hero == "strong" and game.family == "shangrila":
        shadow = build(PREVIOUS, f"{task.seed}:seat{hero_seat}", task)  # seeded as the hero
    state: Any = game.new_state()
    ply = 0
    history: list[Any] = []
    moves = 0
    spent = longest = 0.0
    hero_times: list[float] = []
    other_times: list[float] = []
    shadow_times: list[float] = []
    same = 0
    cpu: dict[str, list[float]] = {"hero": [], "other": [], "shadow": []}
    while not state.is_terminal():
        seat = state.current_player()
        if seat == games.CHANCE:
            action = chance.sample(state, task.seed, ply)
        else:
            legal = state.legal_actions()
            turn = Turn(
                task.seed, task.game_id, seat, ply, state, state.view(seat), legal, MOVE_MS, 0, history=tuple(history)
            )
            start, start_cpu = time.perf_counter(), time.thread_time()
            answer = bots[seat].act(turn)
            elapsed, elapsed_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
            action = answer if not isinstance(answer, str) else state.parse_action(answer)
            if action not in legal:
                raise RuntimeError(f"{task.seed}: seat {seat} answered {action}, not a legal action")
            if seat == hero_seat:
                moves += 1
                spent += elapsed
                longest = max(longest, elapsed)
                hero_times.append(elapsed)
                cpu["hero"].append(elapsed_cpu)
                if shadow is not None:
                    turn = Turn(task.seed, task.game_id, seat, ply, state, state.view(seat), legal, MOVE_MS, 0,
                                history=tuple(history))  # fmt: skip
                    start, start_cpu = time.perf_counter(), time.thread_time()
                    other = shadow.act(turn)
                    shadow_times.append(time.perf_counter() - start)
                    cpu["shadow"].append(time.thread_time() - start_cpu)
                    same += other is action
            else:
                other_times.append(elapsed)
                cpu["other"].append(elapsed_cpu)
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
        hero_times,
        other_times,
        shadow_times,
        same,
        cpu["hero"],
        cpu["other"],
        cpu["shadow"],
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
    hero_ms: list[float] = field(default_factory=list)  # every hero move
    other_ms: list[float] = field(default_factory=list)  # every move of the other seats
    shadow_ms: list[float] = field(default_factory=list)  # strong_v1 on the hero's turns (--shadow)
    shadow_same: int = 0
    hero_cpu_ms: list[float] = field(default_factory=list)  # the same, CPU time of the bot's thread
    other_cpu_ms: list[float] = field(default_factory=list)
    shadow_cpu_ms: list[float] = field(default_factory=list)

    @property
    def previous(self) -> bool:
        """strong against copies of strong_v1: scored pairwise against each of them."""
        return self.opponent == PREVIOUS

    @property
    def two_player(self) -> bool:
        return self.game_id == "shanghaien"

    @property
    def pairwise(self) -> bool:
        """Scored as one pairing (draws half): Shanghaien, strong against greedy in the mixed table, strong
        against each strong_v1."""
        return self.two_player or self.opponent in (MIXED, PREVIOUS)

    @property
    def rate(self) -> float:
        """Shanghaien and mixed: wins with draws as half; strong_v1: the mean pairwise score; Shangri-La:
        first-place rate."""
        if not self.games:
            return 0.0
        if self.previous:
            return sum(self.points) / len(self.points)
        return (self.wins + 0.5 * self.draws) / self.games if self.pairwise else self.firsts / self.games

    @property
    def interval(self) -> tuple[float, float]:
        return mean_interval(self.points) if self.pairwise else wilson(self.firsts, self.games)

    @property
    def target(self) -> float | None:
        return TARGETS.get((self.game_id, self.hero, self.opponent))

    def verdict(self) -> str:
        if self.previous:
            lo, hi = self.interval
            return "BEHIND" if hi < 0.5 else "ahead" if lo > 0.5 else "level"
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
        row.hero_ms += [1000 * t for t in r.hero_times]
        row.other_ms += [1000 * t for t in r.other_times]
        row.shadow_ms += [1000 * t for t in r.shadow_times]
        row.shadow_same += r.shadow_same
        row.hero_cpu_ms += [1000 * t for t in r.hero_cpu]
        row.other_cpu_ms += [1000 * t for t in r.other_cpu]
        row.shadow_cpu_ms += [1000 * t for t in r.shadow_cpu]
        if r.opponent == PREVIOUS:  # pairwise against each strong_v1 seat: ahead, level, behind
            versus = [rank for seat, rank in enumerate(r.ranks) if seat != r.hero_seat]
            row.wins += sum(r.hero_rank < rank for rank in versus)
            row.draws += sum(r.hero_rank == rank for rank in versus)
            row.losses += sum(r.hero_rank > rank for rank in versus)
            row.firsts += r.hero_rank == 1
            row.points.append(sum(1.0 if r.hero_rank < k else 0.5 if r.hero_rank == k else 0.0 for k in versus)
                              / len(versus))  # fmt: skip
            row.hero_score += r.scores[r.hero_seat]
            row.opponent_score += sum(x for seat, x in enumerate(r.scores) if seat != r.hero_seat) / len(versus)
            row.ms_per_move += 1000 * r.hero_seconds
            row.max_ms = max(row.max_ms, 1000 * r.hero_max_seconds)
            moves[key] += r.hero_moves
            continue
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
    pair = {p: i for i, p in enumerate(PAIRINGS + EXTRA_PAIRINGS)}
    return sorted(rows.values(), key=lambda r: (order[r.game_id], pair[(r.hero, r.opponent)]))


def table(rows: list[Row]) -> str:
    head = (
        f"{'game id':<13} {'hero':<6} {'vs':<9} {'setting':<13} {'games':>5} {'W/D/L':>11} {'rate':>6} "
        f"{'95% CI':>13} {'target':>7}  {'verdict':<10} {'score':>11} {'ms/move':>8} {'p50 ms':>7} {'max ms':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lo, hi = r.interval
        target = f"{r.target:.0%}" if r.target is not None else "-"
        p50 = statistics.median(r.hero_ms) if r.hero_ms else 0.0
        lines.append(
            f"{r.game_id:<13} {r.hero:<6} {r.opponent:<9} {r.setting:<13} {r.games:>5} "
            f"{f'{r.wins}/{r.draws}/{r.losses}':>11} {r.rate:>6.1%} {f'{lo:.0%}-{hi:.0%}':>13} {target:>7}  "
            f"{r.verdict():<10} {f'{r.hero_score:.1f}:{r.opponent_score:.1f}':>11} {r.ms_per_move:>8.1f} "
            f"{p50:>7.1f} {r.max_ms:>7.0f}"
        )
    return "\n".join(lines)


PER_MOVE = ("points", "hero_ms", "other_ms", "shadow_ms", "hero_cpu_ms", "other_cpu_ms", "shadow_cpu_ms")
"""Row fields with a value per game or move: the per-game results in the JSON file hold them."""


def timing(label: str, ms: list[float]) -> str:
    if not ms:
        return f"{label}: no moves"
    return (
        f"{label}: {statistics.fmean(ms):.1f} ms/move mean, {statistics.median(ms):.1f} p50, {max(ms):.0f} max "
        f"({len(ms)} moves)"
    )


def speed_up(before: list[float], after: list[float]) -> str:
    """How many times faster ``after`` is than ``before`` (ms per move): mean, p50 and max."""
    mean = statistics.fmean(before) / statistics.fmean(after)
    p50 = statistics.median(before) / statistics.median(after)
    return f"{mean:.2f}x mean, {p50:.2f}x p50, {max(before) / max(after):.2f}x max"


def comparisons(rows: list[Row]) -> str:
    """strong against strong_v1 (their moves in the same games), and --shadow (the same turns)."""
    lines = []
    for r in rows:
        if r.previous:
            lo, hi = r.interval
            lines.append(
                f"{r.game_id} strong vs strong_v1, {r.games} games: pairwise score {r.rate:.1%} "
                f"(95% CI {lo:.1%}-{hi:.1%}; 50% = equal strength): {r.verdict()}"
            )
            lines.append("  " + timing("strong   ", r.hero_ms))
            lines.append("  " + timing("strong_v1", r.other_ms))
            if r.hero_ms and r.other_ms:
                lines.append("  speed-up: " + speed_up(r.other_ms, r.hero_ms))
                lines.append("  " + timing("strong    CPU", r.hero_cpu_ms))
                lines.append("  " + timing("strong_v1 CPU", r.other_cpu_ms))
                lines.append("  CPU speed-up: " + speed_up(r.other_cpu_ms, r.hero_cpu_ms))
        if r.shadow_ms:
            lines.append(
                f"{r.game_id} {r.hero} vs {r.opponent}, shadowed by strong_v1: the same action on "
                f"{r.shadow_same}/{len(r.shadow_ms)} turns"
            )
            lines.append("  " + timing("strong   ", r.hero_ms))
            lines.append("  " + timing("strong_v1", r.shadow_ms))
            lines.append("  speed-up on the same turns: " + speed_up(r.shadow_ms, r.hero_ms))
            lines.append("  " + timing("strong    CPU", r.hero_cpu_ms))
            lines.append("  " + timing("strong_v1 CPU", r.shadow_cpu_ms))
            lines.append("  CPU speed-up on the same turns: " + speed_up(r.shadow_cpu_ms, r.hero_cpu_ms))
    return "\n".join(lines)


def tasks(
    game_ids: list[str],
    pairings: list[tuple[str, str]],
    n_games: int,
    iterations: dict[str, int],
    tpm: float | None,
    shadow: bool = False,
) -> Iterator[Task]:
    for gid in game_ids:
        for hero, opponent in pairings:
            if opponent == MIXED and games.get(gid).num_players < 3:
                continue
            if opponent == PREVIOUS and games.get(gid).family != "shangrila":
                continue
            for k in range(n_games):
                yield Task(gid, hero, opponent, k, None if tpm is not None else iterations[gid], tpm, shadow)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=200, help="games per pairing and game id (default: 200)")
    parser.add_argument("--game", choices=games.GAME_IDS, action="append", help="game id (repeatable; default: all)")
    parser.add_argument(
        "--pairing",
        choices=[f"{h}-{o}" for h, o in PAIRINGS + EXTRA_PAIRINGS],
        action="append",
        help="HERO-OPPONENT (repeatable; default: all but strong-strong_v1)",
    )
    parser.add_argument(
        "--shadow", action="store_true", help="Shangri-La: ask strong_v1 every hero turn too (same moves? its ms/move)"
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
    if tpm is not None and (args.shadow or ("strong", PREVIOUS) in pairings):
        parser.error("strong_v1 plays at its rollout counts: --time-per-move does not go with it")
    settings = {gid: f"{tpm:g} s/move" if tpm is not None else f"{iterations[gid]} rollouts" for gid in game_ids}

    todo = list(tasks(game_ids, pairings, args.games, iterations, tpm, args.shadow))
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
    compared = comparisons(rows)
    if compared:
        print("\n" + compared)
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
            "rows": [{k: v for k, v in asdict(r).items() if k not in PER_MOVE} | {"rate": r.rate} for r in rows],
            "games": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    missed = [r for r in rows if r.verdict() == "MISSED"]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
