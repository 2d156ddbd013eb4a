"""The ``arena`` subcommands of the service: serve, gateway, worker, local, and the clients of the
gateway (bot register|list|rotate-token|disable|enable, match request|list|watch, transcript get).

Settings come from flags, then environment variables, then the config file (``arena.config``).
Readable output by default; ``--json`` prints one JSON document for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena import config
from referee import games

console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)
PROGRESS = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Every setting resolved for this command (flag > environment > config file > default)."""
    file_values = config.load_file(config.config_file(getattr(args, "config", None)))
    return {name: config.resolve(name, getattr(args, name, None), file_values) for name in config.SETTINGS}


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def _client(s: dict[str, Any], token: str | None = None) -> Any:
    from arena.client import ArenaClient

    return ArenaClient(s["gateway"], token if token is not None else (s["admin_token"] or s["token"]))


def _run_service(main: Callable[[asyncio.Event], Any]) -> int:
    """Run an async service until SIGINT/SIGTERM, then let it stop cleanly."""

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    asyncio.run(runner())
    return 0


def _error(e: Exception) -> int:
    errors.print(f"[red]error:[/red] {e}")
    return 1


# --------------------------------------------------------------------------- services


def cmd_worker(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.worker import Worker
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s["log_level"])
    metrics.serve(int(s["metrics_port"]))

    async def main(stop: asyncio.Event) -> None:
        worker = Worker(
            s["redis_url"], listen=s["listen"] or "0.0.0.0:50061", advertise=s["advertise"] or None,
            worker_id=args.worker_id, capacity=args.capacity, lease_ms=args.lease_ms, drain_s=args.drain_s,
        )  # fmt: skip
        await worker.start()
        await worker.run(stop)

    return _run_service(main)


def _ladder_extra() -> Any:
    """Adds the ladder's gRPC service to the gateway's server (returns the service names)."""

    def extra(server: Any, redis_url: str) -> list[str]:
        import redis

        from arena.ladder import Ladder
        from arena.ladder_service import add_to_server
        from sdk._generated.arena.v1 import ladder_pb2

        add_to_server(Ladder(redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)), server)
        return [ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name]

    return extra


def cmd_gateway(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.gateway import start_gateway
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s["log_level"])
    metrics.serve(int(s["metrics_port"]))

    async def main(stop: asyncio.Event) -> None:
        if s["admin_token"]:  # the deployment's secret: its hash is what admin calls are checked against
            import redis

            from arena.registry import Registry

            client = redis.Redis.from_url(s["redis_url"])
            Registry(client).set_admin_token(s["admin_token"])
            client.close()
        extra = _ladder_extra()
        server, _, servicer = await start_gateway(s["redis_url"], s["listen"] or "0.0.0.0:50051", extra)
        await stop.wait()
        await server.stop(2.0)
        await servicer.close()

    return _run_service(main)


def cmd_serve(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.local import LocalArena
    from referee.logs import configure

    s = settings(args)
    configure(json=False, level=s["log_level"])
    metrics.serve(int(s["metrics_port"]))
    data = Path(args.data)

    async def main(stop: asyncio.Event) -> None:
        extra = _ladder_extra()
        arena = LocalArena(
            data, workers=args.workers, redis_url=args.redis, gateway_address=s["listen"] or "127.0.0.1:50051",
            admin_token=s["admin_token"] or None, log_level=s["log_level"], gateway_extra=extra,
        )  # fmt: skip
        async with arena:
            console.print(
                f"arena serving: gateway [bold]{arena.gateway}[/bold], Redis {arena.redis_url}, {args.workers} "
                f"worker(s); admin token in {data / 'admin-token'}; logs in {arena.logs}"
            )
            await stop.wait()
            console.print("stopping")

    return _run_service(main)


# --------------------------------------------------------------------------- bots


def cmd_bot_register(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s, s["admin_token"]) as c:
            bot, token = c.register_bot(args.name, args.owner, args.game, args.max_concurrent)
    except ArenaError as e:
        return _error(e)
    if args.json:
        print(json.dumps({"bot": MessageToDict(bot, preserving_proto_field_name=True), "token": token}))
        return 0
    console.print(f"registered [bold]{bot.name}[/bold] (owner {bot.owner}; plays {', '.join(bot.game_ids)})")
    console.print(f"token (shown once, keep it secret): {token}")
    return 0


def cmd_bot_list(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s, "") as c:
            bots = c.list_bots(args.game or "")
    except ArenaError as e:
        return _error(e)
    if args.json:
        print(json.dumps([MessageToDict(b, preserving_proto_field_name=True) for b in bots]))
        return 0
    table = Table()
    for col in ("bot", "owner", "games", "version", "enabled", "online", "running", "last seen", "ladder"):
        table.add_column(col)
    for b in bots:
        table.add_row(
            b.name, b.owner, ", ".join(b.game_ids), b.version or "-",
            "yes" if b.enabled else f"no ({b.disabled_reason or '-'})", "yes" if b.online else "no",
            str(b.matches_running), _when(b.last_seen), f"paused: {b.ladder_paused}" if b.ladder_paused else "on",
        )  # fmt: skip
    console.print(table)
    return 0


def cmd_bot_rotate(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s) as c:
            token = c.rotate_token(args.name)
    except ArenaError as e:
        return _error(e)
    print(json.dumps({"name": args.name, "token": token}) if args.json else f"new token for {args.name}: {token}")
    return 0


def cmd_bot_enable(args: argparse.Namespace, enabled: bool) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s, s["admin_token"]) as c:
            bot = c.set_enabled(args.name, enabled, getattr(args, "reason", "") or "")
    except ArenaError as e:
        return _error(e)
    if args.json:
        print(json.dumps(MessageToDict(bot, preserving_proto_field_name=True)))
    else:
        console.print(f"{bot.name}: {'enabled' if bot.enabled else 'disabled'}")
    return 0


# --------------------------------------------------------------------------- matches


def _time_control(args: argparse.Namespace) -> dict[str, int]:
    return {k: v for k, v in (("move_ms", args.move_ms), ("first_move_ms", args.first_move_ms),
                              ("bank_ms", args.bank_ms)) if v is not None}  # fmt: skip


def cmd_match_request(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s, s["admin_token"]) as c:
            match_id, seed_hash = c.request_match(
                args.game, args.bots, seed=args.seed or "", rated=args.rated, match_id=args.id or "",
                time_control=_time_control(args),
            )  # fmt: skip
            if args.wait:
                with Progress(*PROGRESS, console=errors, transient=True) as progress:
                    progress.add_task(f"waiting for {match_id}", total=None)
                    while c.describe(match_id).state != 3:
                        time.sleep(0.5)
                m = c.describe(match_id)
    except ArenaError as e:
        return _error(e)
    if args.json:
        out: dict[str, Any] = {"match_id": match_id, "seed_sha256": seed_hash}
        if args.wait:
            out["match"] = MessageToDict(m, preserving_proto_field_name=True)
        print(json.dumps(out))
        return 0
    console.print(f"queued {match_id} (seed hash {seed_hash})")
    if args.wait:
        _print_matches([m])
    return 0


def _print_matches(matches: list[Any]) -> None:
    table = Table()
    for col in ("match", "game", "state", "bots", "rated", "requested", "result"):
        table.add_column(col)
    states = {1: "queued", 2: "running", 3: "finished"}
    for m in matches:
        result = "-"
        if m.HasField("result"):
            r = m.result
            end = {1: "completed", 2: "aborted", 3: "forfeit"}.get(r.end_reason, "?")
            result = end + ": " + ", ".join(f"{x.bot_name} #{x.rank} ({x.score})" for x in r.seats)
        table.add_row(
            m.match_id, m.game_id, states.get(m.state, "?"), ", ".join(m.bot_names), "yes" if m.rated else "no",
            _when(m.enqueued_at), result,
        )  # fmt: skip
    console.print(table)


def cmd_match_list(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    states = {"queued": 1, "running": 2, "finished": 3}
    try:
        with _client(s, "") as c:
            matches = c.list_matches(
                bot_name=args.bot or "", game_id=args.game or "", limit=args.limit,
                since=time.time() - args.since_hours * 3600 if args.since_hours else 0,
                state=states.get(args.state or "", 0),
            )  # fmt: skip
    except ArenaError as e:
        return _error(e)
    if args.json:
        print(json.dumps([MessageToDict(m, preserving_proto_field_name=True) for m in matches]))
        return 0
    _print_matches(matches)
    return 0


def cmd_match_watch(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s, "") as c:
            for line in c.follow(args.match_id):
                if args.json:
                    print(line, flush=True)
                    continue
                e = json.loads(line)
                kind = e["type"]
                if kind == "header":
                    names = ", ".join(x["bot_name"] for x in e["seats"])
                    console.print(f"[bold]{e['match_id']}[/bold] {e['game_id']}: {names}")
                elif kind == "ply":
                    who = "chance" if e["actor"] < 0 else f"seat {e['actor']}"
                    think = f" ({e['think_ms']:.0f} ms)" if e.get("think_ms") is not None else ""
                    console.print(f"{e['ply']:>4} {who:<7} {e['action']}{think}")
                elif kind == "footer":
                    console.print(f"end: {e['end_reason']}; scores {e['scores']}; ranks {e['ranks']}; seed {e['seed']}")
                else:
                    console.print(f"     {kind}: " + ", ".join(f"{k}={v}" for k, v in e.items() if k != "type"))
    except ArenaError as e:
        return _error(e)
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_transcript_get(args: argparse.Namespace) -> int:
    from arena.client import ArenaError

    s = settings(args)
    try:
        with _client(s) as c:
            ids = list(args.match_ids)
            if args.bot or args.game:
                found = c.list_matches(bot_name=args.bot or "", game_id=args.game or "", limit=args.limit, state=3)
                ids += [m.match_id for m in found]
            if not ids:
                errors.print("no match: give match ids, or --bot / --game")
                return 2
            out = Path(args.output) if args.output else None
            many = len(ids) > 1 or (out is not None and out.is_dir())
            if many:
                folder = out or Path("transcripts")
                folder.mkdir(parents=True, exist_ok=True)
                with Progress(*PROGRESS, console=errors) as progress:
                    task = progress.add_task("transcripts", total=len(ids))
                    for match_id in ids:
                        text, _ = c.transcript(match_id)
                        (folder / f"{match_id}.jsonl").write_text(text)
                        progress.advance(task)
                console.print(f"{len(ids)} transcript(s) in {folder}/")
                return 0
            text, full = c.transcript(ids[0])
            if out is None:
                sys.stdout.write(text)
            else:
                out.write_text(text)
                console.print(f"{ids[0]} -> {out} ({'with your refusals' if full else 'public'})")
    except ArenaError as e:
        return _error(e)
    return 0


# --------------------------------------------------------------------------- parsers


def _common(p: argparse.ArgumentParser, *names: str) -> None:
    p.add_argument("--config", help="TOML settings file (default $ARENA_CONFIG or ~/.config/arena/config.toml)")
    for name in names:
        s = config.SETTINGS[name]
        flag = "--" + ("redis" if name == "redis_url" else name.replace("_", "-"))
        p.add_argument(flag, dest=name, help=f"{s.help} (env {s.env}; default {s.default!r})")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def add_service_parsers(sub: Any, bot: Any, transcript: Any) -> None:
    p = sub.add_parser("serve", help="an all-in-one local arena: Redis, gateway and referee workers")
    _common(p, "listen", "admin_token", "metrics_port", "log_level")
    p.add_argument("--data", default="arena-data", help="folder for Redis data, logs and the admin token")
    p.add_argument("--redis", help="use this Redis instead of starting one")
    p.add_argument("--workers", type=int, default=2, help="referee worker processes (default 2)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("gateway", help="serve ArenaService: bot sessions, registry, matches, transcripts")
    _common(p, "redis_url", "listen", "admin_token", "metrics_port", "log_level")
    p.set_defaults(func=cmd_gateway)

    p = sub.add_parser("worker", help="a referee worker: run matches from the queue")
    _common(p, "redis_url", "listen", "advertise", "metrics_port", "log_level")
    p.add_argument("--worker-id", help="default: host-pid-random")
    p.add_argument("--capacity", type=int, default=500, help="matches at once (default 500)")
    p.add_argument("--lease-ms", type=int, default=10_000, help="lease length (default 10000)")
    p.add_argument("--drain-s", type=float, default=30.0, help="on SIGTERM, wait this long for matches to end")
    p.set_defaults(func=cmd_worker)

    p = bot.add_parser("register", help="register a bot and print its token (admin)")
    _common(p, "gateway", "admin_token")
    p.add_argument("name")
    p.add_argument("--owner", required=True)
    p.add_argument("--game", action="append", required=True, choices=games.GAME_IDS, help="repeat per game id")
    p.add_argument("--max-concurrent", type=int, default=0, help="matches at once (default 4)")
    p.set_defaults(func=cmd_bot_register)
    p = bot.add_parser("list", help="registered bots, online or not")
    _common(p, "gateway")
    p.add_argument("--game", choices=games.GAME_IDS)
    p.set_defaults(func=cmd_bot_list)
    p = bot.add_parser("rotate-token", help="a new token for a bot (admin, or the bot's token)")
    _common(p, "gateway", "admin_token", "token")
    p.add_argument("name")
    p.set_defaults(func=cmd_bot_rotate)
    p = bot.add_parser("disable", help="refuse a bot's sessions and new matches (admin)")
    _common(p, "gateway", "admin_token")
    p.add_argument("name")
    p.add_argument("--reason", default="")
    p.set_defaults(func=lambda a: cmd_bot_enable(a, False))
    p = bot.add_parser("enable", help="enable a disabled bot (admin)")
    _common(p, "gateway", "admin_token")
    p.add_argument("name")
    p.set_defaults(func=lambda a: cmd_bot_enable(a, True))

    match = sub.add_parser("match", help="matches on the arena").add_subparsers(dest="match_command", required=True)
    for m in (match, sub.add_parser("matches", help="alias of match").add_subparsers(dest="m2", required=True)):
        p = m.add_parser("list", help="matches, newest first")
        _common(p, "gateway")
        p.add_argument("--bot")
        p.add_argument("--game", choices=games.GAME_IDS)
        p.add_argument("--state", choices=("queued", "running", "finished"))
        p.add_argument("--since-hours", type=float, help="only matches requested in the last N hours")
        p.add_argument("--limit", type=int, default=50)
        p.set_defaults(func=cmd_match_list)
    p = match.add_parser("request", help="queue a match (admin)")
    _common(p, "gateway", "admin_token")
    p.add_argument("bots", nargs="+", help="bot names by seat")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--seed")
    p.add_argument("--rated", action="store_true")
    p.add_argument("--id", help="match id (idempotent: a second request with it is refused)")
    p.add_argument("--move-ms", type=int)
    p.add_argument("--first-move-ms", type=int)
    p.add_argument("--bank-ms", type=int)
    p.add_argument("--wait", action="store_true", help="wait for the result")
    p.set_defaults(func=cmd_match_request)
    p = match.add_parser("watch", help="follow a match live")
    _common(p, "gateway")
    p.add_argument("match_id")
    p.set_defaults(func=cmd_match_watch)

    p = transcript.add_parser("get", help="download transcripts (one to a file, many to a folder)")
    _common(p, "gateway", "token")
    p.add_argument("match_ids", nargs="*")
    p.add_argument("-o", "--output", help="file (one match) or folder (many)")
    p.add_argument("--bot", help="every finished match of this bot (up to --limit)")
    p.add_argument("--game", choices=games.GAME_IDS)
    p.add_argument("--limit", type=int, default=100)
    p.set_defaults(func=cmd_transcript_get)
