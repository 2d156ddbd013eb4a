"""``arena local``: the README's main job. A whole arena on this machine, with the reference bots.

It starts a ``redis-server`` (data in ``--data``), the gateway and referee workers; registers the
reference bots (random, greedy, strong) through the gateway as any admin would; starts each bot as
its own process connected through its session; runs the ladder (the scheduler queues rated matches,
the ladder applies their results) with a progress bar; prints each game's leaderboard and writes its
rating chart; downloads and verifies every transcript; and stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from arena.cli.common import (
    add_json,
    console,
    emit_json,
    errors,
    float_type,
    positive_int,
    print_table,
    progress,
    report,
    standing_json,
)
from referee import games

REFERENCE = ("random", "greedy", "strong")


async def run_local(args: argparse.Namespace) -> int:
    from arena.errors import ArenaError
    from arena.events.service import host_ladder_and_events
    from arena.ladder.report import BOARD_WHOLE, board_table
    from arena.ladder.scheduler import SchedulerConfig
    from arena.local.arena import LocalArena, start_bot
    from arena.local.ladder_runner import LadderRunner, caught_up
    from arena.local.redisproc import shown
    from arena.redis_client import connect
    from arena.service.client import ArenaClient
    from referee import transcript as transcripts
    from referee.wire.values import MatchStatus

    data = Path(args.data).resolve()
    game_ids = tuple(args.game or ["shanghaien", "shangrila-3p"])
    say = errors if args.json else console  # with --json, stdout is the JSON's alone
    say.print(f"local arena in {data} ({args.workers} referee workers)", style="bold")
    async with LocalArena(
        data, workers=args.workers, log_level="WARNING", gateway_extra=host_ladder_and_events, web=args.web
    ) as arena:
        redis_at = shown(arena.redis_url)  # no password on the terminal
        say.print(f"  Redis {redis_at} (data {data / 'redis'}), gateway {arena.gateway}, logs {arena.logs}")
        if arena.web_url:
            say.print(f"  website: {arena.web_url}  (open it: matches move live, leaderboards fill)", style="bold")
        admin = ArenaClient(arena.gateway, arena.admin_token)
        bots: list[subprocess.Popen[bytes]] = []
        runner: LadderRunner | None = None
        threads: list[Any] = []
        try:
            for name in REFERENCE:
                try:
                    _, token = await asyncio.to_thread(admin.register_bot, name, "arena", list(games.GAME_IDS), 4)
                    how = "registered"
                except ArenaError as e:
                    if e.code != "ALREADY_EXISTS":
                        raise
                    token = await asyncio.to_thread(admin.rotate_token, name)  # a data folder from an earlier run
                    how = "token rotated"
                bots.append(start_bot(name, token, arena.gateway, arena.logs, args.time_per_move))
                say.print(f"  bot {name}: {how}, connecting")
            deadline = time.monotonic() + 60
            while sum(b.online for b in await asyncio.to_thread(admin.list_bots) if b.name in REFERENCE) < 3:
                if time.monotonic() > deadline:
                    report(f"the reference bots did not come online; see {arena.logs}")
                    return 1
                await asyncio.sleep(0.2)
            r = connect(arena.redis_url)
            results_before = int(r.xlen("arena:results"))
            # a bounded demo of --matches games between the three reference bots: no per-bot pace
            config = SchedulerConfig(games=game_ids, queue_depth=4, max_rate=4.0, games_per_hour=0)
            runner = LadderRunner(arena.redis_url, config, max_matches=args.matches, seed=args.seed)
            threads = runner.start()
            say.print(f"  ladder: scheduling {args.matches} rated matches ({', '.join(game_ids)})")
            with progress(console=say) as bar:
                task = bar.add_task("rated matches", total=args.matches)
                while True:
                    done = int(r.xlen("arena:results")) - results_before
                    bar.update(task, completed=min(done, args.matches))
                    if done >= args.matches and runner.scheduled >= args.matches:
                        break
                    await asyncio.sleep(0.5)
            while not await asyncio.to_thread(caught_up, r):
                await asyncio.sleep(0.2)
            runner.stop(threads)
            finished = await asyncio.to_thread(admin.list_matches, limit=args.matches, state=MatchStatus.FINISHED)
            ids = [m.match_id for m in finished]
            out = data / "transcripts"
            out.mkdir(exist_ok=True)
            problems: list[dict[str, Any]] = []
            for match_id in ids:
                text, _ = await asyncio.to_thread(admin.transcript, match_id)
                path = out / f"{match_id}.jsonl"
                path.write_text(text)
                problem = transcripts.verify(path)
                if problem is not None:
                    problems.append({"file": path, "line": problem.line, "problem": problem.message})
            bad = len(problems)
            replays: dict[str, Path] = {}
            if args.html:  # one replay per game: its newest match (the list is newest first)
                from arena.replay import write_replay

                for game_id in game_ids:
                    newest = next((m.match_id for m in finished if m.game_id == game_id), None)
                    if newest is None:
                        say.print(f"  {game_id}: no finished match to replay")
                        continue
                    page = write_replay(transcripts.file_lines(out / f"{newest}.jsonl"), out / f"{newest}.html")
                    replays[game_id] = page
                    say.print(f"  {game_id}: replay of its last match {page}")
            ladders = []
            for game_id in game_ids:
                runner.ladder.refit(game_id)  # the whole-history fit of every result, shown beside the Elo
                board = runner.ladder.leaderboard(game_id)
                if not args.json:
                    print_table(board_table(game_id, board), BOARD_WHOLE)
                chart = data / f"ladder-{game_id}.png"
                _plot(runner.ladder, game_id, chart)
                names = [s.row.name for s in board if s.row.name in REFERENCE]
                verdict = names == ["strong", "greedy", "random"]
                expected = "as expected" if verdict else "NOT strong > greedy > random yet"
                say.print(f"  {game_id}: {' > '.join(names)} ({expected}); chart {chart}")
                ladders.append({"game_id": game_id, "rows": [standing_json(s) for s in board], "order": names,
                                "as_expected": verdict, "chart": chart, "replay": replays.get(game_id)})  # fmt: skip
            say.print(
                f"transcripts: {out}/ ({len(ids) - bad} of {len(ids)} verified with the engines); "
                f"to keep an arena up: arena serve, then arena ladder show --game {game_ids[0]}"
            )
            r.close()
            if args.json:
                emit_json({"data": data, "matches": len(ids), "verified": len(ids) - bad, "transcripts": out,
                              "problems": problems, "ladders": ladders, "web": arena.web_url})  # fmt: skip
            if args.stay and arena.web_url:
                say.print(f"the arena stays up for its website {arena.web_url}: Ctrl-C to stop")
                await _until_interrupted()
            return 0 if bad == 0 else 1
        finally:
            if runner is not None:
                runner.stop(threads)
            for b in bots:
                b.send_signal(signal.SIGINT)
            for b in bots:
                try:
                    b.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    b.kill()
            admin.close()


async def _until_interrupted() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _plot(ladder: Any, game_id: str, path: Path) -> None:
    from arena.ladder.report import plot

    series = {}
    for name in REFERENCE:
        for (n, v), points in ladder.history(game_id, name).items():
            series[(game_id, n, v)] = points
    plot(series, str(path))


def cmd_local(args: argparse.Namespace) -> int:
    from referee.logs import configure

    configure(json=False, level="WARNING")
    try:
        return asyncio.run(run_local(args))
    except KeyboardInterrupt:
        return 130


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "local", help="the main job: a local arena (Redis, gateway, workers, ladder) where the reference bots play"
    )
    p.add_argument(
        "--data", default="arena-data", help="folder for Redis data, logs and transcripts (default arena-data)"
    )
    p.add_argument("--workers", type=positive_int, default=2, help="referee worker processes (default 2)")
    p.add_argument(
        "--game", action="append", choices=games.GAME_IDS, help="game ids (default shanghaien, shangrila-3p)"
    )
    p.add_argument("--matches", type=positive_int, default=100, help="rated ladder matches to play (default 100)")
    p.add_argument("--time-per-move", type=float_type(0), default=0.0,
                   help="strong searches this long a move (default: its strength figures' rollout counts)")  # fmt: skip
    p.add_argument("--html", action="store_true",
                   help="write an HTML replay of each game's last match beside its transcript")  # fmt: skip
    p.add_argument("--seed", help="base seed: the scheduler's pairings and match n's seed (SEED:n) derive from it "
                   "(default: random)")  # fmt: skip
    p.add_argument("--web", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="serve the website here while the arena runs (default 127.0.0.1:8080, another free port "
                   "when that one is taken; '' for none)")  # fmt: skip
    p.add_argument(
        "--stay", action="store_true", help="after the matches, keep the arena and its website up until Ctrl-C"
    )
    add_json(p, "the outcome (leaderboards, transcripts verified, the website's address)")
    p.set_defaults(func=cmd_local)
