"""``arena ladder``: the leaderboard, rating histories (and charts), head-to-head records, rebuilds.

    arena ladder show --game shanghaien [--json] [--limit N]
    arena ladder history BOT [--game ID] [--version V] [--plot FILE.png] [--compare BOT ...] [--json]
    arena ladder h2h --game ID [--bot NAME] [--json]
    arena ladder rebuild --game ID

    arena ladder run [--game ID ...]   # the ladder process

Every command takes ``--redis URL`` (default ``$ARENA_REDIS_URL`` or redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import structlog
from rich.table import Table

from arena.cli.common import CliError, add_settings, console, errors, float_type, positive_int, run_service, settings
from arena.ladder.report import board_table, local_time, plot
from referee import games

log = structlog.get_logger("arena.ladder")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def _ladder(args: argparse.Namespace) -> Any:
    from arena.ladder.store import Ladder
    from arena.redis_client import connect

    return Ladder(connect(args.redis))


def cmd_show(args: argparse.Namespace) -> int:
    ladder = _ladder(args)
    standings = ladder.leaderboard(args.game, args.limit)
    if args.html:
        page = _write_board_html(ladder, args.game, standings, Path(args.html), args.replays)
        (errors if args.json else console).print(f"ladder page written to {page}")
    if args.json:
        rows = [{"rank": s.rank, **s.row.to_dict(), "error": s.row.error, "provisional": s.row.provisional}
                for s in standings]  # fmt: skip
        print(json.dumps({"game_id": args.game, "rows": rows}, indent=2))
        return 0
    console.print(board_table(args.game, standings))
    if not standings:
        console.print(f"no rated matches on {args.game} yet")
    return 0


def _write_board_html(ladder: Any, game_id: str, standings: list[Any], path: Path, replays: str | None) -> Path:
    """The ladder as one HTML page, linking the replays (``MATCH_ID.html``) found in the folder ``replays``."""
    from arena.ladder.report import board_html

    histories: dict[tuple[str, str], list[Any]] = {}
    for s in standings:
        histories.update(ladder.history(game_id, s.row.name, s.row.version))
    links: dict[str, str] = {}
    if replays is not None:
        folder = Path(replays)
        if not folder.is_dir():
            raise CliError(f"{replays}: no such folder", 2)
        base = path.resolve().parent
        for page in folder.glob("*.html"):
            links[page.stem] = quote(Path(os.path.relpath(page.resolve(), base)).as_posix())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(board_html(game_id, standings, histories, ladder.h2h(game_id), links), encoding="utf-8")
    return path


def cmd_history(args: argparse.Namespace) -> int:
    ladder = _ladder(args)
    game_ids = [args.game] if args.game else ladder.games()
    names = [args.bot, *(args.compare or [])]
    series: dict[tuple[str, str, str], list[Any]] = {}
    for game_id in game_ids:
        for name in names:
            version = args.version if name == args.bot else None
            for (n, v), points in ladder.history(game_id, name, version).items():
                series[(game_id, n, v)] = points
    if not series:
        errors.print(f"no rated matches for {', '.join(names)}" + (f" on {args.game}" if args.game else ""))
        return 1
    if args.json:
        out = [{"game_id": g, "bot_name": n, "bot_version": v,
                "points": [{"finished_at": p.finished_at, "rating": p.rating, "match_id": p.match_id} for p in pts]}
               for (g, n, v), pts in series.items()]  # fmt: skip
        print(json.dumps(out, indent=2))
    else:
        table = Table(title="rating history")
        for col in ("game", "bot", "version", "matches", "first", "last", "now", "best", "last played"):
            table.add_column(col)
        for (g, n, v), pts in series.items():
            ratings = [p.rating for p in pts]
            table.add_row(g, n, v, str(len(pts)), f"{ratings[0]:.0f}", f"{ratings[-1]:.0f}", f"{ratings[-1]:.0f}",
                          f"{max(ratings):.0f}", local_time(pts[-1].finished_at))  # fmt: skip
        console.print(table)
    if args.plot:
        plot(series, args.plot)
        console.print(f"chart written to {args.plot}")
    return 0


def cmd_h2h(args: argparse.Namespace) -> int:
    records = _ladder(args).h2h(args.game, args.bot)
    if args.json:
        out = [{"a": list(h.a), "b": list(h.b), "a_wins": h.a_wins, "draws": h.draws, "b_wins": h.b_wins}
               for h in records]  # fmt: skip
        print(json.dumps(out, indent=2))
        return 0
    table = Table(title=f"{args.game} head to head", caption="every pair of seats of every rated match")
    for col, justify in [("bot A", "left"), ("bot B", "left"), ("A wins", "right"), ("draws", "right"),
                         ("B wins", "right"), ("A score", "right")]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for h in records:
        if args.bot is not None and h.b[0] == args.bot:  # the asked-for bot on the left
            h = type(h)(h.b, h.a, h.b_wins, h.draws, h.a_wins)
        n = h.a_wins + h.draws + h.b_wins
        table.add_row(f"{h.a[0]} {h.a[1]}", f"{h.b[0]} {h.b[1]}", str(h.a_wins), str(h.draws), str(h.b_wins),
                      f"{(h.a_wins + 0.5 * h.draws) / n:.0%}")  # fmt: skip
    console.print(table)
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    counted = _ladder(args).rebuild(args.game)
    console.print(f"{args.game}: {counted} rated results replayed in {time.perf_counter() - started:.1f} s")
    return 0


def cmd_ladder_run(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.ladder.runner import LadderRunner
    from arena.ladder.scheduler import SchedulerConfig
    from arena.ladder.service import add_to_server
    from referee.logs import configure
    from referee.wire import ladder_pb2

    s = settings(args)
    configure(json=True, level=s["log_level"])
    metrics.serve(int(s["metrics_port"]))
    config = SchedulerConfig(
        games=tuple(args.game or SchedulerConfig().games), queue_depth=args.queue_depth, max_rate=args.max_rate
    )
    runner = LadderRunner(s["redis_url"], config, schedule=not args.no_schedule)

    async def main(stop: asyncio.Event) -> None:
        from referee.wire.contract import new_server, serve

        server = new_server()
        add_to_server(runner.ladder, server)
        await serve(server, [ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name],
                    s["listen"] or "0.0.0.0:50071")  # fmt: skip
        threads = runner.start()
        log.info("ladder running", games=list(config.games), schedule=runner.schedule)
        await stop.wait()
        await asyncio.to_thread(runner.stop, threads)
        await server.stop(1.0)

    return run_service(main)



def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ladder`` and its subcommands to the ``arena`` command's subparsers."""
    ladder: argparse.ArgumentParser = subparsers.add_parser(
        "ladder", help="Elo ladder: leaderboard, history, head to head, rebuild"
    )
    sub = ladder.add_subparsers(dest="ladder_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--redis", default=os.environ.get("ARENA_REDIS_URL", DEFAULT_REDIS),
                       help=f"Redis URL (default $ARENA_REDIS_URL or {DEFAULT_REDIS})")  # fmt: skip

    p = sub.add_parser("show", help="one game's leaderboard")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--limit", type=positive_int, help="only the first N rows")
    p.add_argument("--html", metavar="FILE.html",
                   help="also write the ladder as one HTML page: leaderboard, rating chart, head to head")  # fmt: skip
    p.add_argument("--replays", metavar="DIR", help="with --html: link the replays DIR/MATCH_ID.html found there")
    p.add_argument("--json", action="store_true")
    common(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("history", help="a bot's rating after each match (every version; a chart with --plot)")
    p.add_argument("bot", help="bot name")
    p.add_argument("--game", choices=games.GAME_IDS, help="one game (default: every game it is rated in)")
    p.add_argument("--version", help="one version of BOT (default: every version)")
    p.add_argument("--compare", nargs="+", metavar="BOT", help="other bots on the same chart")
    p.add_argument("--plot", metavar="FILE.png", help="write a chart")
    p.add_argument("--json", action="store_true")
    common(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("h2h", help="head-to-head records on one game's ladder")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--bot", help="only the pairs of this bot name")
    p.add_argument("--json", action="store_true")
    common(p)
    p.set_defaults(func=cmd_h2h)

    p = sub.add_parser("rebuild", help="recompute a game's ladder from every stored result")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    common(p)
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("run", help="the ladder process: apply results, schedule rated matches, serve LadderService")
    add_settings(p, "redis_url", "listen", "metrics_port", "log_level")
    p.add_argument("--game", action="append", help="game ids to schedule (default: all)")
    p.add_argument("--queue-depth", type=positive_int, default=8, help="ladder matches kept waiting (default 8)")
    p.add_argument("--max-rate", type=float_type(0.001), default=2.0,
                   help="new ladder matches per second at most (default 2)")  # fmt: skip
    p.add_argument("--no-schedule", action="store_true", help="only apply results (another process schedules)")
    p.set_defaults(func=cmd_ladder_run)
    return ladder
