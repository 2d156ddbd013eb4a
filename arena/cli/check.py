"""``arena bot check``: play a bot through the referee's hard situations before registering it (the checks
are ``arena.local.check``); a table of pass/fail with the reason for each, or ``--json``.

Exit status 0 only when every check passed (a skipped one does not fail); 2 for a bot that cannot be
loaded or a command line that asks for something impossible."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from arena.cli.common import (
    REFERENCE_ALIASES,
    CliError,
    add_json,
    add_time_control,
    console,
    emit_json,
    errors,
    positive_int,
    progress,
    time_control_overrides,
)
from referee import games


def cmd_check(args: argparse.Namespace) -> int:
    from arena.local import check, launch
    from referee.logs import configure
    from sdk.stdio import stdio_spec

    configure(json=False, level=args.log_level)
    given = [x for x in (args.bot, args.cmd, args.stdio, args.server) if x]
    if len(given) != 1:
        raise CliError("give one of: a bot (FILE.py:Class, module:Class, random|greedy|strong), --cmd COMMAND, "
                       "--stdio COMMAND, or --server ADDRESS for a bot you start yourself", 2)  # fmt: skip
    if args.stdio:
        args.bot = stdio_spec(args.stdio)  # a Python process of its own runs the adapter, as for FILE.py:Class
    wanted = tuple(dict.fromkeys(args.game or games.GAME_IDS))
    out = Path(args.out or f"transcripts/check-{time.strftime('%Y%m%d-%H%M%S')}")
    logs = out / "logs"
    launcher: launch.Launcher
    if args.bot:
        spec = REFERENCE_ALIASES.get(args.bot, args.bot)
        [(name, declared)] = launch.probe_bots([spec])  # BotLoadError: exit 2, before anything starts
        game_ids = tuple(g for g in wanted if g in declared)
        if not game_ids:
            raise CliError(f"{name} plays {', '.join(declared)}: none of {', '.join(wanted)}", 2)
        launcher = launch.spec_launcher(spec, name, logs)
    elif args.cmd:
        game_ids = wanted
        try:
            launcher = launch.command_launcher(args.cmd, "bot", logs)
        except ValueError as e:
            raise CliError(str(e), 2) from None
    else:
        game_ids = wanted
        launcher = launch.ExternalLauncher(lambda text: errors.print(Text(text, style="bold")))
    if args.server and args.server.rpartition(":")[2] == "":
        raise CliError(f"--server {args.server}: write HOST:PORT", 2)
    config = check.CheckConfig(
        game_ids=game_ids,
        games=args.games,
        seed=args.seed or f"check-{int(time.time())}",
        listen=args.server or "127.0.0.1:0",
        token=args.token or "check_" + secrets.token_urlsafe(24),
        time_control=time_control_overrides(args),
        exit_s=args.exit_s,
        connect_s=args.wait_s if args.server else 60.0,
        out_dir=out,
    )
    steps = len(check.plan(config))
    with progress(transient=True) as bar:
        task = bar.add_task(f"checking {launcher.label}", total=steps)

        def say(text: str) -> None:
            if text.startswith("start your bot") or "starting it again" in text:
                bar.console.print(text)
                return
            bar.update(task, description=text)
            bar.advance(task)

        results = asyncio.run(check.run_checks(launcher, config, say))
    if args.json:
        emit_json([r.to_dict() for r in results])
        return 0 if check.all_passed(results) else 1
    table = Table(title=f"arena bot check: {launcher.label}")
    for col in ("check", "game", "result", "reason"):
        table.add_column(col, overflow="fold")
    for r in results:
        verdict = Text("skipped", style="yellow") if r.passed is None else (
            Text("pass", style="green") if r.passed else Text("FAIL", style="bold red"))  # fmt: skip
        table.add_row(r.name, r.game_id or "-", verdict, r.reason)
    console.print(table)
    failed = sum(1 for r in results if r.passed is False)
    console.print(f"{len(results) - failed} of {len(results)} checks passed; transcripts in {out}/, "
                  f"the bot's output in {logs}/")  # fmt: skip
    return 0 if failed == 0 else 1


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds, not {text}")
    return value


def add_parser(bot: Any) -> None:
    """``check`` among the ``arena bot`` subcommands (``bot``: their subparsers)."""
    p = bot.add_parser("check", help="play a bot through the referee's hard situations and say what it fails")
    p.add_argument("bot", nargs="?", help="FILE.py:Class, module:Class, or random|greedy|strong")
    p.add_argument("--cmd", help="run this command instead (any language): it finds the referee's host:port in "
                   "$ARENA_SERVER, its token in $ARENA_BOT_TOKEN and its number of matches in $ARENA_MATCHES, "
                   "or in the words {address} {token} {matches} of the command")  # fmt: skip
    p.add_argument("--stdio", metavar="COMMAND", help="run this command instead, speaking the line protocol "
                   "(JSON lines on its stdin and stdout, no gRPC: docs/bots.md)")  # fmt: skip
    p.add_argument("--server", metavar="ADDRESS", help="a bot you start yourself: listen on this host:port, print "
                   "the token and wait for the bot to connect")  # fmt: skip
    p.add_argument("--token", help="with --server: the token the bot will use (default: a new one, printed)")
    p.add_argument("--game", action="append", choices=games.GAME_IDS,
                   help="check this game id (repeat; default: the bot's game_ids, else every game)")  # fmt: skip
    p.add_argument("--games", type=positive_int, default=4, help="ordinary matches per game id (default 4)")
    p.add_argument("--seed", help="base seed of the matches (default: from the clock)")
    add_time_control(p)
    p.add_argument("--exit-s", type=_seconds, default=5.0,
                   help="seconds the bot has to exit after its last match, then after SIGTERM (default 5)")  # fmt: skip
    p.add_argument("--wait-s", type=_seconds, default=600.0,
                   help="with --server: seconds to wait for the bot to connect (default 600)")  # fmt: skip
    p.add_argument("--out", help="folder for transcripts and the bot's output (default transcripts/check-TIME)")
    add_json(p, "the checks")
    p.add_argument("--log-level", default="ERROR", help="referee log level (default ERROR)")
    p.set_defaults(func=cmd_check)
