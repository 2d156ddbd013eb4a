"""``arena bot``: run a bot (on the arena or one referee), and the registry: register, list,
rotate-token, disable, enable, retire, add-game."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from typing import Any

from rich.table import Table

from arena.cli.common import (
    REFERENCE_ALIASES,
    CliError,
    add_json,
    add_settings,
    client,
    console,
    dial_tls,
    emit_json,
    float_type,
    non_negative_int,
    positive_int,
    print_table,
    settings,
    utc,
)
from arena.config import SETTINGS
from referee import games


def cmd_bot_run(args: argparse.Namespace) -> int:
    """Run a bot on the arena (a session with the gateway) or, with ``--server``, on one referee."""

    from referee.logs import configure
    from sdk.arena_client import ArenaBotRunner, TlsSetupError
    from sdk.bots import make_bot
    from sdk.client import AuthenticationError, BotClient, load_bot
    from sdk.stdio import StdioError, run_closing, stdio_spec

    # a bot left running is a service: JSON lines unless a person watches stderr (docs/operations.md)
    configure(json={"auto": None, "json": True, "console": False}[args.log_format], level=args.log_level, service="bot")
    s = settings(args)
    kwargs: dict[str, Any] = {"time_per_move": args.time_per_move} if args.time_per_move else {}
    if args.rollouts:
        from sdk.bots.strong import MEASURED

        kwargs["iterations"] = MEASURED if args.rollouts == "measured" else args.rollouts
    if (args.bot is None) == (args.stdio is None):
        raise CliError("give one of: a bot (FILE.py:Class, module:Class, random|greedy|strong) or --stdio COMMAND", 2)
    name = stdio_spec(args.stdio) if args.stdio is not None else REFERENCE_ALIASES.get(args.bot, args.bot)
    bot = load_bot(name, factory=lambda n: make_bot(n, **(kwargs if n == "strong" else {})))
    if not s.token:
        raise CliError("a bot token is needed: --token or ARENA_BOT_TOKEN", 2)
    runner: BotClient | ArenaBotRunner
    tls = dial_tls(s)
    if args.server:
        runner = BotClient(bot, args.server, s.token, max_matches=args.matches, tls=tls)
    else:
        runner = ArenaBotRunner(bot, args.arena or s.gateway, s.token, max_matches=args.matches, tls=tls,
                                ladder=not args.no_ladder)  # fmt: skip

    async def main() -> list[Any]:
        if isinstance(runner, ArenaBotRunner):  # stopping a bot (docker stop, a rollout) forfeits nothing
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, runner.drain, args.drain_s)
        return await run_closing(runner, bot)

    try:
        outcomes = asyncio.run(main())
    except StdioError as e:
        raise CliError(str(e)) from None
    except AuthenticationError as e:
        raise CliError(f"{'the referee' if args.server else 'the arena'} refused the bot: {e}") from None
    except TlsSetupError as e:  # retried a few times first: only a change of settings heals it
        raise CliError(f"cannot open a session: {e}") from None
    except KeyboardInterrupt:
        return 130
    if args.json:
        emit_json(outcomes)
        return 0
    for o in outcomes:
        console.print(f"{o.match_id}: {o.end_reason}, place {o.mine.rank}, score {o.mine.score}")
    return 0


def _rollouts(text: str) -> int | str:
    return text if text == "measured" else positive_int(text)


def cmd_bot_register(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token or s.owner_token) as c:
        bot, token = c.register_bot(args.name, args.owner, args.game, args.max_concurrent)
    if args.json:
        emit_json({"bot": bot, "token": token})
        return 0
    console.print(f"registered {bot.name} (owner {bot.owner}; plays {', '.join(bot.game_ids)})")
    console.print(f"token (shown once, keep it secret): {token}")
    return 0


def cmd_bot_list(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, "") as c:
        bots = c.list_bots(args.game or "")
    if args.json:
        emit_json(bots)
        return 0
    table = Table()
    for col in ("bot", "owner", "games", "version", "enabled", "online", "running", "last seen (UTC)", "ladder"):
        table.add_column(col)
    for b in bots:
        table.add_row(
            b.name, b.owner, ", ".join(b.game_ids), b.version or "-",
            "yes" if b.enabled else f"no ({b.disabled_reason or '-'})", "yes" if b.online else "no",
            str(b.matches_running), utc(b.last_seen), f"paused: {b.ladder_paused}" if b.ladder_paused else "on",
        )  # fmt: skip
    print_table(table, whole=("bot", "owner", "version", "last seen (UTC)"))
    return 0


def cmd_bot_rotate(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s) as c:
        token = c.rotate_token(args.name)
    if args.json:
        emit_json({"name": args.name, "token": token})
    else:
        print(f"new token for {args.name}: {token}")
    return 0


def cmd_bot_enable(args: argparse.Namespace, enabled: bool) -> int:
    s = settings(args)
    with client(s, s.admin_token or s.owner_token) as c:
        bot = c.set_enabled(args.name, enabled, getattr(args, "reason", "") or "")
    if args.json:
        emit_json(bot)
    else:
        console.print(f"{bot.name}: {'enabled' if bot.enabled else 'disabled'}")
    return 0


def cmd_bot_retire(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token or s.owner_token) as c:
        bot = c.retire(args.name, args.reason)
    if args.json:
        emit_json(bot)
    else:
        console.print(f"{bot.name}: retired (its name, matches, transcripts and ratings are kept)")
    return 0


def cmd_bot_add_game(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token or s.owner_token) as c:
        bot = c.add_games(args.name, args.game)
    if args.json:
        emit_json(bot)
    else:
        console.print(f"{bot.name}: plays {', '.join(bot.game_ids)}")
    return 0


def add_parser(sub: Any) -> Any:
    """``arena bot ...``; returns its subcommands, where ``arena.cli.main`` adds ``check`` (arena.cli.check)."""
    bot = sub.add_parser("bot", help="bots").add_subparsers(dest="bot_command", required=True)
    p = bot.add_parser("run", help="connect a bot to the arena (or straight to a referee) and play its matches")
    p.add_argument("bot", nargs="?", help="FILE.py:Class, module:Class, or random|greedy|strong")
    p.add_argument("--stdio", metavar="COMMAND", help="the bot is this command, speaking the line protocol "
                   "(JSON lines on its stdin and stdout, no gRPC: docs/bots.md)")  # fmt: skip
    p.add_argument("--token", default=os.environ.get("ARENA_BOT_TOKEN", ""), help="the bot's token (ARENA_BOT_TOKEN)")
    p.add_argument("--arena", help="the gateway host:port (default: ARENA_GATEWAY, the config file, 127.0.0.1:50051)")
    p.add_argument("--server", help="a standalone referee's host:port instead of the arena (arena referee serve)")
    p.add_argument("--config", help="TOML settings file")
    p.add_argument("--matches", type=positive_int, help="stop after this many matches")
    p.add_argument(
        "--no-ladder",
        action="store_true",
        help="stay off the ladder: play only matches requested for the bot (unrated testing)",
    )
    p.add_argument("--drain-s", type=float_type(0), default=30.0,
                   help="on SIGTERM, take no new matches and give running ones this long to end, then exit "
                   "(default 30; a second SIGTERM exits at once)")  # fmt: skip
    p.add_argument("--time-per-move", type=float_type(0.001),
                   help="reference bot 'strong': seconds of search per move")  # fmt: skip
    p.add_argument("--rollouts", type=_rollouts, help="reference bot 'strong': N rollouts a move instead of a clock, "
                   "or 'measured' (the counts of its strength figures)")  # fmt: skip
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-format", choices=("auto", "json", "console"), default="auto",
                   help="auto (default): JSON lines unless stderr is a terminal")  # fmt: skip
    for name in ("tls", "tls_ca", "tls_server_name"):
        setting = SETTINGS[name]
        kind: dict[str, Any] = {"action": "store_true", "default": None} if name == "tls" else {}
        p.add_argument("--" + name.replace("_", "-"), dest=name, help=f"{setting.help} (env {setting.env})", **kind)
    add_json(p, "the outcome of each match it played, when it stops,")
    p.set_defaults(func=cmd_bot_run)

    p = bot.add_parser("register", help="register a bot and print its token (admin, or an owner for itself)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.add_argument("--owner", default="", help="its owner (admin only; with an owner token: that owner)")
    p.add_argument("--game", action="append", required=True, choices=games.GAME_IDS, help="repeat per game id")
    p.add_argument("--max-concurrent", type=non_negative_int, default=0, help="matches at once (default 4)")
    p.set_defaults(func=cmd_bot_register)
    p = bot.add_parser("list", help="registered bots, online or not")
    add_settings(p, "gateway")
    p.add_argument("--game", choices=games.GAME_IDS)
    p.set_defaults(func=cmd_bot_list)
    p = bot.add_parser("rotate-token", help="a new token for a bot (admin, its owner, or the bot's token)")
    add_settings(p, "gateway", "admin_token", "owner_token", "token")
    p.add_argument("name")
    p.set_defaults(func=cmd_bot_rotate)
    p = bot.add_parser("disable", help="refuse a bot's sessions and new matches (admin or its owner)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.add_argument("--reason", default="")
    p.set_defaults(func=lambda a: cmd_bot_enable(a, False))
    p = bot.add_parser("enable", help="enable a disabled bot (admin or its owner)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.set_defaults(func=lambda a: cmd_bot_enable(a, True))
    p = bot.add_parser("retire", help="retire a bot for good: it plays no more; its name, matches, transcripts "
                       "and ratings are kept (admin or its owner)")  # fmt: skip
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.add_argument("--reason", default="")
    p.set_defaults(func=cmd_bot_retire)
    p = bot.add_parser("add-game", help="let a bot play more games (admin or its owner)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.add_argument("--game", action="append", required=True, choices=games.GAME_IDS, help="repeat per game id")
    p.set_defaults(func=cmd_bot_add_game)
    return bot
