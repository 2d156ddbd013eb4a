"""``arena local``: the README's main job. A whole arena on this machine, with the reference bots.

It starts a ``redis-server`` (data in ``--data``), the gateway and referee workers; registers the
reference bots (random, greedy, strong) through the gateway as any admin would; starts each bot as
its own process connected through its session; requests a batch of matches; shows progress; prints
the results; downloads and verifies every transcript; and stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from referee import games

console = Console(soft_wrap=True)
REFERENCE = ("random", "greedy", "strong")


def seatings(game_id: str, rounds: int) -> list[list[str]]:
    """Every reference bot against every other, each seat order (3-4 players: rotations of all three,
    with one bot twice in 4-player games)."""
    n = games.get(game_id).num_players
    out: list[list[str]] = []
    for _ in range(rounds):
        if n == 2:
            out += [list(p) for p in itertools.permutations(REFERENCE, 2)]
        else:
            base = list(REFERENCE) + ["greedy"] * (n - len(REFERENCE))
            out += [base[i:] + base[:i] for i in range(n)]
    return out


def start_bot(name: str, token: str, gateway: str, logs: Path, time_per_move: float) -> subprocess.Popen[bytes]:
    from arena.local import arena_command

    extra = ["--time-per-move", str(time_per_move)] if name == "strong" else []
    log = (logs / f"bot-{name}.log").open("ab")
    return subprocess.Popen(
        arena_command("bot", "run", name, "--arena", gateway, "--log-level", "WARNING", *extra),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ARENA_BOT_TOKEN": token},
    )


async def run_local(args: argparse.Namespace) -> int:
    from arena.client import ArenaClient, ArenaError
    from arena.local import LocalArena
    from referee import transcript as transcripts

    data = Path(args.data).resolve()
    game_ids = args.game or ["shanghaien", "shangrila-3p"]
    console.print(f"[bold]local arena[/bold] in {data} ({args.workers} referee workers)")
    async with LocalArena(data, workers=args.workers, log_level="WARNING") as arena:
        console.print(f"  Redis {arena.redis_url} (data {data / 'redis'}), gateway {arena.gateway}, logs {arena.logs}")
        admin = ArenaClient(arena.gateway, arena.admin_token)
        bots: list[subprocess.Popen[bytes]] = []
        try:
            for name in REFERENCE:
                try:
                    _, token = await asyncio.to_thread(admin.register_bot, name, "arena", list(games.GAME_IDS), 50)
                    how = "registered"
                except ArenaError as e:
                    if e.code != "ALREADY_EXISTS":
                        raise
                    token = await asyncio.to_thread(
                        admin.rotate_token, name
                    )  # a data folder from an earlier run: new token
                    how = "token rotated"
                bots.append(start_bot(name, token, arena.gateway, arena.logs, args.time_per_move))
                console.print(f"  bot {name}: {how}, connecting")
            deadline = time.monotonic() + 60
            while sum(b.online for b in await asyncio.to_thread(admin.list_bots) if b.name in REFERENCE) < 3:
                if time.monotonic() > deadline:
                    console.print(f"[red]the reference bots did not come online; see {arena.logs}[/red]")
                    return 1
                await asyncio.sleep(0.2)
            requested: list[tuple[str, str, list[str]]] = []
            for game_id in game_ids:
                for seats in seatings(game_id, args.rounds):
                    match_id, _ = await asyncio.to_thread(
                        admin.request_match, game_id, seats, seed=f"{args.seed}:{len(requested)}" if args.seed else ""
                    )
                    requested.append((match_id, game_id, seats))
            console.print(f"  {len(requested)} matches requested")
            columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            records: dict[str, Any] = {}
            with Progress(*columns, console=console) as progress:
                task = progress.add_task("matches", total=len(requested))
                while len(records) < len(requested):
                    for match_id, _, _ in requested:
                        if match_id not in records:
                            m = await asyncio.to_thread(admin.describe, match_id)
                            if m.state == 3:
                                records[match_id] = m
                    progress.update(task, completed=len(records))
                    await asyncio.sleep(0.5)
            out = data / "transcripts"
            out.mkdir(exist_ok=True)
            bad = 0
            for match_id, _, _ in requested:
                text, _ = await asyncio.to_thread(admin.transcript, match_id)
                path = out / f"{match_id}.jsonl"
                path.write_text(text)
                if transcripts.verify(path) is not None:
                    bad += 1
            _print_results(requested, records)
            console.print(
                f"transcripts: {out}/ ({len(requested) - bad} of {len(requested)} verified with the engines); "
                f"replay one: arena transcript show {out}/{requested[0][0]}.jsonl --boards"
            )
            return 0 if bad == 0 else 1
        finally:
            for b in bots:
                b.send_signal(signal.SIGINT)
            for b in bots:
                try:
                    b.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    b.kill()
            admin.close()


def _print_results(requested: list[tuple[str, str, list[str]]], records: dict[str, Any]) -> None:
    table = Table(title="matches")
    for col in ("match", "game", "seats (score, place)", "end"):
        table.add_column(col)
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for match_id, game_id, _ in requested:
        r = records[match_id].result
        end = {1: "completed", 2: "aborted", 3: "forfeit"}.get(r.end_reason, "?")
        table.add_row(match_id, game_id, ", ".join(f"{s.bot_name} ({s.score}, #{s.rank})" for s in r.seats), end)
        for s in r.seats:
            t = tally[(game_id, s.bot_name)]
            t[0] += 1
            t[1] += s.rank == 1
    console.print(table)
    summary = Table(title="first places")
    for col in ("game", "bot", "seats played", "first places"):
        summary.add_column(col)
    for (game_id, name), (played, first) in sorted(tally.items()):
        summary.add_row(game_id, name, str(played), str(first))
    console.print(summary)


def cmd_local(args: argparse.Namespace) -> int:
    from referee.logs import configure

    configure(json=False, level="WARNING")
    try:
        return asyncio.run(run_local(args))
    except KeyboardInterrupt:
        return 130


def add_local_parser(sub: Any) -> None:
    p = sub.add_parser(
        "local", help="the main job: a local arena (Redis, gateway, workers) where the reference bots play"
    )
    p.add_argument(
        "--data", default="arena-data", help="folder for Redis data, logs and transcripts (default arena-data)"
    )
    p.add_argument("--workers", type=int, default=2, help="referee worker processes (default 2)")
    p.add_argument(
        "--game", action="append", choices=games.GAME_IDS, help="game ids (default shanghaien, shangrila-3p)"
    )
    p.add_argument("--rounds", type=int, default=1, help="times every seating is played (default 1)")
    p.add_argument("--time-per-move", type=float, default=0.1, help="search time of the strong bot (default 0.1 s)")
    p.add_argument("--seed", help="base seed (default: random seeds)")
    p.set_defaults(func=cmd_local)
