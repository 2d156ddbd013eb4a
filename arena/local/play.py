"""Local play: a referee on loopback and one process per player, running full matches through the
same referee code path as the service. No Redis needed."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from referee import games
from referee.games import TimeControl
from referee.server import Referee, start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, MatchResult, token_sha256


@dataclass(frozen=True)
class Player:
    """A bot taking part: a reference bot name (``random``, ``greedy``, ``strong``) or FILE.py:Class."""

    spec: str
    label: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))


def bot_process(spec: str, target: str, token: str, matches: int, seed: int) -> None:
    """Entry point of a player's process: connect and play ``matches`` matches."""
    from referee.logs import configure
    from sdk.bots import make_bot
    from sdk.client import BotClient, load_bot

    configure(json=False, level="WARNING")
    bot = load_bot(spec, factory=lambda name: make_bot(name, seed=seed))
    asyncio.run(BotClient(bot, target, token, max_matches=matches).run())


@dataclass
class PlayReport:
    results: list[MatchResult]
    transcripts: Path
    labels: list[str]

    def summary(self) -> dict[str, object]:
        """Player 0's record against the field: wins/draws/losses, mean score, Elo difference."""
        wins = draws = losses = 0
        points = 0.0
        pairs = 0
        scores: list[int] = []
        for r in self.results:
            if r.end_reason is EndReason.ABORTED:
                continue
            mine = next(s for s in r.seats if s.bot_name == self.labels[0])
            scores.append(mine.score)
            firsts = [s for s in r.seats if s.rank == 1]
            if mine.rank == 1 and len(firsts) == 1:
                wins += 1
            elif mine.rank == 1:
                draws += 1
            else:
                losses += 1
            for other in r.seats:
                if other is mine:
                    continue
                pairs += 1
                points += 1.0 if mine.rank < other.rank else 0.5 if mine.rank == other.rank else 0.0
        played = wins + draws + losses
        frac = points / pairs if pairs else 0.5
        elo, err = elo_difference(frac, played)
        return {
            "games": played,
            "aborted": len(self.results) - played,
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "mean_score": sum(scores) / len(scores) if scores else 0.0,
            "pairwise_score": frac,
            "elo": elo,
            "elo_error": err,
        }


def elo_difference(fraction: float, games_played: int) -> tuple[float, float]:
    """Elo difference for a score fraction, with a 95% error bar from the binomial standard error."""
    if games_played == 0:
        return 0.0, math.inf
    p = min(max(fraction, 0.5 / games_played), 1 - 0.5 / games_played)
    elo = -400 * math.log10(1 / p - 1)
    se = math.sqrt(p * (1 - p) / games_played)
    slope = 400 / (math.log(10) * p * (1 - p))
    return elo, 1.96 * se * slope


async def play(
    game_id: str,
    players: list[Player],
    *,
    games_count: int,
    seed: str,
    concurrency: int,
    rotate: bool,
    out_dir: Path,
    time_control: TimeControl | None = None,
    on_result: Callable[[MatchResult], None] | None = None,
) -> PlayReport:
    game = games.get(game_id)
    if len(players) != game.num_players:
        raise ValueError(f"{game_id} needs {game.num_players} players, got {len(players)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    referee = Referee()
    server, port = await start_server(referee)
    target = f"127.0.0.1:{port}"
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=bot_process, args=(p.spec, target, p.token, games_count, i), daemon=True)
        for i, p in enumerate(players)
    ]
    for proc in procs:
        proc.start()
    results: list[MatchResult] = []
    slots = asyncio.Semaphore(concurrency)
    try:

        async def one(k: int) -> None:
            async with slots:
                order = [(k + i) % len(players) for i in range(len(players))] if rotate else list(range(len(players)))
                seats = tuple(
                    SeatSpec(seat, players[p].label, token_sha256(players[p].token)) for seat, p in enumerate(order)
                )
                spec = MatchSpec(f"{seed}-{k:04d}", game_id, seats, seed=f"{seed}:{k}", time_control=time_control)
                match = referee.start_match(spec)
                result = await referee.tasks[spec.match_id]
                (out_dir / f"{spec.match_id}.jsonl").write_text("\n".join(match.lines) + "\n", encoding="utf-8")
                results.append(result)
                if on_result is not None:
                    on_result(result)

        await asyncio.gather(*(one(k) for k in range(games_count)))
    finally:
        await referee.shutdown()
        await server.stop(1)
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    return PlayReport(results, out_dir, [p.label for p in players])
