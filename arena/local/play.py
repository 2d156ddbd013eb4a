"""Local play: a referee on loopback and one process per player, running full matches through the
same referee code path as the service. No Redis needed."""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import queue
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee import games
from referee.games import TimeControl
from referee.server import Referee, start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, MatchResult, SeatStatus, token_sha256

POLL_S = 0.2


@dataclass(frozen=True)
class Player:
    """A bot taking part: a reference bot name (``random``, ``greedy``, ``strong``) or FILE.py:Class."""

    spec: str
    label: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))


def check_players(players: list[Player]) -> None:
    """Load every player's bot here, before any process starts: ``sdk.client.BotLoadError`` names the
    first spec that gives no playable bot (no such file or class, an import error, a bad name or version)."""
    from sdk.bots import make_bot
    from sdk.client import load_bot

    for p in players:
        load_bot(p.spec, factory=make_bot)


def bot_process(
    spec: str, target: str, token: str, matches: int, seed: int, index: int = 0, reports: Any = None
) -> None:
    """Entry point of a player's process: connect and play ``matches`` matches. Each exception of the
    bot's ``act``, and the one that ends the process, goes to ``reports`` (a multiprocessing queue) as
    ``(index, kind, text)`` with kind ``act`` or ``died``."""
    from referee.logs import configure
    from sdk.bots import make_bot
    from sdk.client import BotClient, load_bot

    def report(kind: str, e: BaseException) -> None:
        if reports is not None:
            reports.put((index, kind, f"{type(e).__name__}: {e}"[:300]))

    configure(json=False, level="WARNING")
    try:
        bot = load_bot(spec, factory=lambda name: make_bot(name, seed=seed))
        asyncio.run(BotClient(bot, target, token, max_matches=matches, on_error=lambda e: report("act", e)).run())
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as e:
        report("died", e)
        raise SystemExit(1) from None


@dataclass
class PlayerTrouble:
    """What went wrong with one player's bot during a run (reported by its process)."""

    act_errors: int = 0
    first_error: str = ""
    died: str = ""


@dataclass
class PlayReport:
    results: list[MatchResult]
    transcripts: Path
    labels: list[str]
    troubles: dict[str, PlayerTrouble] = field(default_factory=dict)  # by label; only players in trouble
    games_count: int = 0  # matches asked for

    def problems(self) -> list[str]:
        """One line per thing that makes the run a failure: a bot whose ``act`` raised, a bot process that
        died, matches aborted or never played. Empty when the run went as asked."""
        out = []
        for label, t in self.troubles.items():
            forfeits = sum(1 for r in self.results for s in r.seats if s.bot_name == label
                           and s.status is SeatStatus.FORFEITED)  # fmt: skip
            if t.act_errors:
                out.append(f"{label}: act raised {t.act_errors} time(s) (first: {t.first_error}); "
                           f"the seat timed out instead, and forfeited {forfeits} match(es)")  # fmt: skip
            if t.died:
                out.append(f"{label}: its bot process died: {t.died}")
        aborted = sum(1 for r in self.results if r.end_reason is EndReason.ABORTED)
        if aborted:
            out.append(f"{aborted} match(es) aborted (a bot did not join in time)")
        if len(self.results) < self.games_count:
            out.append(f"{self.games_count - len(self.results)} of {self.games_count} match(es) not played")
        return out

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
    check: bool = True,
) -> PlayReport:
    """Play ``games_count`` matches; the report's ``problems()`` says what went wrong. Every bot spec is
    loaded here first (BotLoadError, before anything starts; ``check=False``: the caller did
    ``check_players``); a bot process that dies stops the run."""
    game = games.get(game_id)
    if len(players) != game.num_players:
        raise ValueError(f"{game_id} needs {game.num_players} players, got {len(players)}")
    if check:
        check_players(players)
    out_dir.mkdir(parents=True, exist_ok=True)
    referee = Referee()
    server, port = await start_server(referee)
    target = f"127.0.0.1:{port}"
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    procs = [
        ctx.Process(target=bot_process, args=(p.spec, target, p.token, games_count, i, i, reports), daemon=True)
        for i, p in enumerate(players)
    ]
    troubles: dict[str, PlayerTrouble] = {}

    def drain() -> None:
        while True:
            try:
                index, kind, text = reports.get_nowait()
            except queue.Empty:
                return
            t = troubles.setdefault(players[index].label, PlayerTrouble())
            if kind == "act":
                t.act_errors += 1
                t.first_error = t.first_error or text
            else:
                t.died = text

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

        matches = asyncio.ensure_future(asyncio.gather(*(one(k) for k in range(games_count))))
        while not matches.done():  # a bot process that dies stops the run: its matches cannot go on
            await asyncio.wait({matches}, timeout=POLL_S)
            drain()
            dead = [(p, proc.exitcode) for p, proc in zip(players, procs, strict=True) if proc.exitcode]
            if dead and not matches.done():
                for p, code in dead:
                    t = troubles.setdefault(p.label, PlayerTrouble())
                    t.died = t.died or f"exit code {code}"
                matches.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await matches
                break
        else:
            matches.result()  # a match's own error
    finally:
        await referee.shutdown()
        await server.stop(1)
        deadline = time.monotonic() + 5
        while any(proc.is_alive() for proc in procs) and time.monotonic() < deadline:
            drain()  # a process with reports in its queue's buffer ends only once they are read
            await asyncio.sleep(0.05)
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=1)
        drain()
    return PlayReport(results, out_dir, [p.label for p in players], troubles, games_count)
