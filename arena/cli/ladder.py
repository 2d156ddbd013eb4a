"""``arena ladder``: the leaderboard, rating histories (and charts), head-to-head records, rebuilds.

    arena ladder show --game shanghaien [--json] [--limit N] [--html FILE.html [--replays DIR]]
    arena ladder history BOT [--game ID] [--version V] [--plot FILE.png] [--compare BOT ...] [--json]
    arena ladder h2h --game ID [--bot NAME] [--json]

    arena ladder rebuild --game ID [--json]   # operator commands, on Redis
    arena ladder run [--game ID ...]          # the ladder process

``show``, ``history`` and ``h2h`` read the ladder from the gateway (``LadderService``, the address of the
``gateway`` setting: ``--gateway``, ``$ARENA_GATEWAY``, the config file; ``--tls``/``--tls-ca`` to verify
it), like every other command a bot author runs. ``rebuild`` and ``run`` work on Redis (``--redis URL``,
default ``$ARENA_REDIS_URL`` or redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import structlog
from rich.table import Table

from arena.cli.common import (
    CliError,
    add_json,
    add_settings,
    console,
    dial_tls,
    emit_json,
    errors,
    float_type,
    listen_tls,
    needs_server_extra,
    non_negative_int,
    positive_int,
    print_table,
    refused,
    run_service,
    settings,
    standing_json,
)
from arena.ladder.report import BOARD_WHOLE, board_table, plot, utc_time
from arena.ladder.values import DEFAULT_MAX_RATE, DEFAULT_QUEUE_DEPTH
from referee import games

if TYPE_CHECKING:
    from arena.ladder.client import LadderClient
    from arena.ladder.report import LadderReader
    from arena.ladder.values import Standing

log = structlog.get_logger("arena.ladder")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def _ladder(args: argparse.Namespace) -> Any:
    """The ladder in Redis (``--redis``, else ``$ARENA_REDIS_URL``, else the default): for the operator
    commands only."""
    from arena.ladder.store import Ladder
    from arena.redis_client import connect

    return Ladder(connect(args.redis or os.environ.get("ARENA_REDIS_URL") or DEFAULT_REDIS))


@contextmanager
def _gateway(args: argparse.Namespace) -> Iterator[LadderClient]:
    """The ladder as the gateway serves it (``LadderService``): a ``LadderClient``. The gateway not
    answering is one line, ``cannot reach the arena at ADDRESS: ...`` (exit 1)."""
    from arena.errors import ArenaError
    from arena.ladder.client import LadderClient

    s = settings(args)
    address = s.gateway
    try:
        with LadderClient(address, s.admin_token or s.token, tls=dial_tls(s)) as c:
            yield c
    except ArenaError as e:
        if e.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            said = refused(e)  # the TLS flag to add when that is why, as for every other command
            if said == str(e):
                said = f"cannot reach the arena at {address}: {e.message or e.code}"
            raise CliError(said) from None
        if e.code == "UNIMPLEMENTED":
            raise CliError(f"the arena at {address} does not serve the ladder (LadderService)") from None
        raise


def cmd_show(args: argparse.Namespace) -> int:
    if args.replays is not None and not Path(args.replays).is_dir():
        raise CliError(f"{args.replays}: no such folder", 2)
    with _gateway(args) as ladder:
        standings = ladder.leaderboard(args.game, args.limit)
        if args.html:
            page = _write_board_html(ladder, args.game, standings, Path(args.html), args.replays)
            (errors if args.json else console).print(f"ladder page written to {page}")
    if args.json:
        emit_json({"game_id": args.game, "rows": [standing_json(s) for s in standings]})
        return 0
    print_table(board_table(args.game, standings), BOARD_WHOLE)
    if not standings:
        console.print(f"no rated matches on {args.game} yet")
    return 0


def _write_board_html(
    ladder: LadderReader, game_id: str, standings: list[Standing], path: Path, replays: str | None
) -> Path:
    """The ladder as one HTML page, linking the replays (``MATCH_ID.html``) found in the folder ``replays``
    (checked to be a folder before)."""
    from arena.ladder.report import board_page

    links: dict[str, str] = {}
    if replays is not None:
        base = path.resolve().parent
        for page in Path(replays).glob("*.html"):
            links[page.stem] = quote(Path(os.path.relpath(page.resolve(), base)).as_posix())
    text = board_page(ladder, game_id, standings, links)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cmd_history(args: argparse.Namespace) -> int:
    if args.plot:  # said before any output
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:
            raise CliError(needs_server_extra("arena ladder history --plot") + " (`arena ladder show --html` draws "
                           "a chart without it)", 2) from None  # fmt: skip
    names = [args.bot, *(args.compare or [])]
    series: dict[tuple[str, str, str], list[Any]] = {}
    with _gateway(args) as ladder:
        game_ids = [args.game] if args.game else ladder.games()
        for game_id in game_ids:
            for name in names:
                version = args.version if name == args.bot else None
                for (n, v), points in ladder.history(game_id, name, version).items():
                    series[(game_id, n, v)] = points
    if not series:
        errors.print(f"no rated matches for {', '.join(names)}" + (f" on {args.game}" if args.game else ""))
        return 1
    if args.json:
        emit_json([{"game_id": g, "bot_name": n, "bot_version": v, "points": pts}
                      for (g, n, v), pts in series.items()])  # fmt: skip
    else:
        table = Table(title="rating history")
        for col in ("game", "bot", "version", "matches", "first", "last", "now", "best", "last played (UTC)"):
            table.add_column(col)
        for (g, n, v), pts in series.items():
            ratings = [p.rating for p in pts]
            table.add_row(g, n, v, str(len(pts)), f"{ratings[0]:.0f}", f"{ratings[-1]:.0f}", f"{ratings[-1]:.0f}",
                          f"{max(ratings):.0f}", utc_time(pts[-1].finished_at))  # fmt: skip
        print_table(table, whole=("game", "bot", "version", "last played (UTC)"))
    if args.plot:
        plot(series, args.plot)
        (errors if args.json else console).print(f"chart written to {args.plot}")
    return 0


def cmd_h2h(args: argparse.Namespace) -> int:
    with _gateway(args) as ladder:
        records = ladder.h2h(args.game, args.bot)
    if args.json:
        emit_json(records)
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
    print_table(table, whole=("bot A", "bot B"))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    ladder = _ladder(args)  # first: without the server extra, that is what to say
    import redis

    started = time.perf_counter()
    try:
        counted = ladder.rebuild(args.game)
        seconds = time.perf_counter() - started
        fit_started = time.perf_counter()
        ladder.refit(args.game)  # the whole-history fit of the rebuilt ladder (rebuild drops the old one)
        fit_seconds = time.perf_counter() - fit_started
    except (redis.ConnectionError, redis.TimeoutError):
        if args.redis or os.environ.get("ARENA_REDIS_URL"):
            raise  # the operator's own Redis is down: "Redis is unavailable: ..." says it
        raise CliError(
            "arena ladder rebuild is an operator command: it rewrites the ladder in the arena's Redis itself, not "
            f"through the gateway, and nothing answers at {DEFAULT_REDIS}. Give --redis URL (or ARENA_REDIS_URL); "
            "`arena serve` keeps its Redis URL in DATA/redis-url"
        ) from None
    if args.json:
        emit_json({"game_id": args.game, "results": counted, "seconds": seconds})
        errors.print(f"whole-history fit made in {fit_seconds:.1f} s")
    else:
        console.print(f"{args.game}: {counted} rated results replayed in {seconds:.1f} s, fit in {fit_seconds:.1f} s")
    return 0


def cmd_ladder_run(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.ladder.scheduler import SchedulerConfig
    from arena.ladder.service import add_to_server
    from arena.local.ladder_runner import LadderLagCollector, LadderRunner
    from referee.logs import configure
    from referee.wire import ladder_pb2

    s = settings(args)
    configure(json=True, level=s.log_level, service="ladder")
    try:
        per_hour = non_negative_int(str(s.ladder_games_per_hour))
    except argparse.ArgumentTypeError as e:
        raise CliError(f"refusing to start: --ladder-games-per-hour: {e}", 2) from None
    config = SchedulerConfig(
        games=tuple(args.game or SchedulerConfig().games),
        queue_depth=args.queue_depth,
        max_rate=args.max_rate,
        games_per_hour=per_hour,
    )
    listen = s.listen or "0.0.0.0:50071"
    metrics.serve(int(s.metrics_port), listen, [metrics.LADDER], s.redis_url, [LadderLagCollector])
    tls = listen_tls(s, listen)
    runner = LadderRunner(s.redis_url, config, schedule=not args.no_schedule)

    async def main(stop: asyncio.Event) -> None:
        from referee.wire.contract import new_server, serve

        server = new_server()
        add_to_server(runner.ladder, server)
        await serve(server, [ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name], listen, tls)
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
        p.add_argument("--redis", help=f"the arena's Redis URL (default $ARENA_REDIS_URL, else {DEFAULT_REDIS}; "
                       "`arena serve` keeps its own in DATA/redis-url)")  # fmt: skip

    p = sub.add_parser("show", help="one game's leaderboard (from the gateway)")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--limit", type=positive_int, help="only the first N rows")
    p.add_argument("--html", metavar="FILE.html",
                   help="also write the ladder as one HTML page: leaderboard, rating chart, head to head")  # fmt: skip
    p.add_argument("--replays", metavar="DIR", help="with --html: link the replays DIR/MATCH_ID.html found there")
    add_settings(p, "gateway")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "history", help="a bot's rating after each match (every version; a chart with --plot; from the gateway)"
    )
    p.add_argument("bot", help="bot name")
    p.add_argument("--game", choices=games.GAME_IDS, help="one game (default: every game it is rated in)")
    p.add_argument("--version", help="one version of BOT (default: every version)")
    p.add_argument("--compare", nargs="+", metavar="BOT", help="other bots on the same chart")
    p.add_argument("--plot", metavar="FILE.png", help="write a chart")
    add_settings(p, "gateway")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("h2h", help="head-to-head records on one game's ladder (from the gateway)")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--bot", help="only the pairs of this bot name")
    add_settings(p, "gateway")
    p.set_defaults(func=cmd_h2h)

    p = sub.add_parser("rebuild", help="recompute a game's ladder from every stored result (on Redis)")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    common(p)
    add_json(p)
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("run", help="the ladder process: apply results, schedule rated matches, serve LadderService")
    add_settings(p, "redis_url", "listen", "metrics_port", "log_level", "tls_cert", "tls_key", "ladder_games_per_hour",
                 prints_result=False)  # fmt: skip
    p.add_argument("--game", action="append", help="game ids to schedule (default: all)")
    p.add_argument("--queue-depth", type=positive_int, default=DEFAULT_QUEUE_DEPTH,
                   help=f"ladder matches kept waiting (default {DEFAULT_QUEUE_DEPTH})")  # fmt: skip
    p.add_argument("--max-rate", type=float_type(0.001), default=DEFAULT_MAX_RATE,
                   help=f"new ladder matches per second at most (default {DEFAULT_MAX_RATE:g})")  # fmt: skip
    p.add_argument("--no-schedule", action="store_true", help="only apply results (another process schedules)")
    p.set_defaults(func=cmd_ladder_run)
    return ladder
