"""The ``arena`` command.

arena play --game shanghaien mybot.py:MyBot --vs reference   # local matches, no Redis
arena bot run mybot.py:MyBot --token T --server HOST:PORT   # connect a bot to a referee
arena referee serve --port 50051                              # a standalone referee
arena transcript show FILE | verify FILE
arena demo                                                    # one engine-level match, printed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from referee import chance, games
from referee import transcript as transcripts
from referee.timecontrol import default_for

REFERENCE_ALIASES = {"reference": "strong"}
console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)


# ------------------------------------------------------------------------------------ demo


def cmd_demo(args: argparse.Namespace) -> int:
    from sdk.players import PLAYERS

    game = games.get(args.game)
    names = args.players.split(",") if args.players else ["greedy", "random", "random", "random"]
    names = (names * game.num_players)[: game.num_players]
    unknown = [n for n in names if n not in PLAYERS]
    if unknown:
        errors.print(f"unknown player(s) {', '.join(unknown)}; known: {', '.join(PLAYERS)}")
        return 2
    seed = str(args.seed)
    rng = random.Random(f"players:{seed}")
    print(f"{game.game_id}: {' vs '.join(f'{n} (seat {i})' for i, n in enumerate(names))}")
    print(f"seed hash {chance.seed_hash(seed)}")
    state = game.new_state()
    ply = 0
    while not state.is_terminal():
        actor = state.current_player()
        action = chance.sample(state, seed, ply) if actor == games.CHANCE else PLAYERS[names[actor]](state, rng)
        if args.verbose:
            who = "chance" if actor == games.CHANCE else f"seat {actor}"
            print(f"{ply:>4} {who:<7} {action}")
        state = state.apply(action)
        ply += 1
    print(state.render())
    print(f"\n{ply} plies; seed {seed}")
    for seat, (name, score, rank) in enumerate(zip(names, state.scores(), state.ranks(), strict=True)):
        print(f"  seat {seat} {name:<7} score {score:>3}  place {rank}")
    return 0


# ------------------------------------------------------------------------------------ play


def cmd_play(args: argparse.Namespace) -> int:
    from arena.play import Player, play
    from referee.logs import configure

    configure(json=False, level=args.log_level)
    game = games.get(args.game)
    specs = [args.bot, *(args.vs or ["reference"])]
    if len(specs) == 2 and game.num_players > 2:
        specs = [specs[0]] + [specs[1]] * (game.num_players - 1)  # copies of one opponent
    if len(specs) != game.num_players:
        errors.print(f"{game.game_id} has {game.num_players} seats: give your bot and {game.num_players - 1} --vs")
        return 2
    players = []
    for i, spec in enumerate(specs):
        spec = REFERENCE_ALIASES.get(spec, spec)
        base = spec.rpartition(":")[2] or spec
        players.append(Player(spec, f"{base}#{i}" if i else base))
    control = default_for(args.game).with_overrides(move_ms=args.move_ms, first_move_ms=args.first_move_ms)
    out = Path(args.out or f"transcripts/play-{time.strftime('%Y%m%d-%H%M%S')}")
    seed = args.seed or f"play-{int(time.time())}"
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"{game.game_id} matches", total=args.games)
        report = asyncio.run(
            play(
                args.game,
                players,
                games_count=args.games,
                seed=seed,
                concurrency=args.concurrency,
                rotate=not args.no_rotate,
                out_dir=out,
                time_control=control,
                on_result=lambda _r: progress.advance(task),
            )
        )
    summary = report.summary()
    if args.json:
        print(json.dumps({"players": [p.label for p in players], "transcripts": str(out), **summary}))
        return 0
    table = Table(title=f"{players[0].label} vs {', '.join(p.label for p in players[1:])}")
    for col in ("games", "wins", "draws", "losses", "mean score", "pairwise score", "Elo difference"):
        table.add_column(col, justify="right")
    table.add_row(
        str(summary["games"]),
        str(summary["wins"]),
        str(summary["draws"]),
        str(summary["losses"]),
        f"{summary['mean_score']:.1f}",
        f"{summary['pairwise_score']:.3f}",
        f"{summary['elo']:+.0f} ± {summary['elo_error']:.0f}",
    )
    console.print(table)
    console.print(f"seed {seed}; transcripts in {out}/ (arena transcript show|verify FILE)")
    return 0


# ------------------------------------------------------------------------------- bot, referee


def cmd_bot_run(args: argparse.Namespace) -> int:
    """Run a bot on the arena (a session with the gateway) or, with ``--server``, on one referee."""
    from arena.service_cli import settings
    from referee.logs import configure
    from sdk.arena_client import ArenaBotRunner
    from sdk.bots import make_bot
    from sdk.client import AuthenticationError, BotClient, load_bot

    configure(json=False, level=args.log_level)
    s = settings(args)
    kwargs: dict[str, Any] = {"time_per_move": args.time_per_move} if args.time_per_move else {}
    if args.rollouts:
        from sdk.bots.strong import MEASURED

        kwargs["iterations"] = MEASURED if args.rollouts == "measured" else int(args.rollouts)
    name = REFERENCE_ALIASES.get(args.bot, args.bot)
    bot = load_bot(name, factory=lambda n: make_bot(n, **(kwargs if n == "strong" else {})))
    if not s["token"]:
        errors.print("a bot token is needed: --token or ARENA_BOT_TOKEN")
        return 2
    runner: BotClient | ArenaBotRunner
    if args.server:
        runner = BotClient(bot, args.server, s["token"], max_matches=args.matches)
    else:
        runner = ArenaBotRunner(bot, args.arena or s["gateway"], s["token"], max_matches=args.matches)
    try:
        outcomes = asyncio.run(runner.run())
    except AuthenticationError as e:
        errors.print(f"{'the referee' if args.server else 'the arena'} refused the bot: {e}")
        return 1
    except KeyboardInterrupt:
        return 130
    for o in outcomes:
        console.print(f"{o.match_id}: {o.end_reason}, place {o.mine.rank}, score {o.mine.score}")
    return 0


def cmd_referee_serve(args: argparse.Namespace) -> int:
    from referee.logs import configure
    from referee.server import Referee, start_server, token_sha256

    configure(json=True, level=args.log_level)

    async def main() -> None:
        referee = Referee(admin_token=args.admin_token)
        for token in args.allow_token or ():
            referee.allow_token(token_sha256(token), "cli")
        server, port = await start_server(referee, f"{args.host}:{args.port}")
        print(json.dumps({"event": "listening", "port": port}), flush=True)
        await server.wait_for_termination()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 0
    return 0


# ------------------------------------------------------------------------------ transcripts


def cmd_transcript_verify(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.files:
        try:
            error = transcripts.verify(path)
        except OSError as e:
            errors.print(f"{path}: {e}")
            return 2
        if error is None:
            print(f"{path}: OK")
        else:
            bad += 1
            print(f"{path}: {error}", file=sys.stderr)
    return 1 if bad else 0


def cmd_transcript_show(args: argparse.Namespace) -> int:
    events = transcripts.read(args.file)
    header, footer = events[0], events[-1]
    game = games.get(header["game_id"])
    names = [s["bot_name"] + (f" {s['bot_version']}" if s.get("bot_version") else "") for s in header["seats"]]
    console.print(f"[bold]{header['match_id']}[/bold]  {header['game_id']}  rated={header['rated']}")
    for seat, name in enumerate(names):
        console.print(f"  seat {seat}: {name}")
    console.print(f"  time control {header['time_control']}")
    console.print(f"  seed sha256 {header['seed_sha256']}")
    state = game.new_state()
    for e in events[1:-1]:
        kind = e["type"]
        if kind == "ply":
            actor = "chance" if e["actor"] < 0 else f"seat {e['actor']}"
            extra = ""
            if e["actor"] >= 0:
                extra = f"  {e.get('think_ms') or 0:.0f} ms, bank {e.get('bank_ms')} ms"
                extra += "  [fallback]" if e.get("fallback") else ""
            if not args.quiet:
                console.print(f"{e['ply']:>5} {actor:<7} {e['action']:<34}{extra}", highlight=False)
            before = state
            state = state.apply(state.parse_action(e["action"]))
            if args.boards and _milestone(before, state):
                console.print(state.render(), highlight=False)
        elif kind != "footer":
            details = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("type", "ply"))
            console.print(f"{e.get('ply', ''):>5} [yellow]{kind}[/yellow] {details}", highlight=False)
    console.print(state.render(), highlight=False)
    console.print(
        f"end: {footer['end_reason']}  scores {footer['scores']}  ranks {footer['ranks']}  seed {footer['seed']}"
    )
    return 0


def _milestone(before: object, after: object) -> bool:
    """Where a board picture helps: the end of setup, each journey, each Shanghai."""
    from referee.games.shanghaien import ShanghaienState
    from referee.games.shangrila import ShangriLaState

    if isinstance(before, ShanghaienState) and isinstance(after, ShanghaienState):
        return after.round != before.round
    if isinstance(before, ShangriLaState) and isinstance(after, ShangriLaState):
        return (before.in_setup() and not after.in_setup()) or after.bridges != before.bridges
    return False


# ----------------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="The bot arena for Shangri-La and Shanghaien.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="play one engine-level match between reference players and print it")
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--seed", default="1", help="match seed: all chance derives from it (default 1)")
    p.add_argument("--players", help="comma-separated, one per seat: random, greedy, strong")
    p.add_argument("-v", "--verbose", action="store_true", help="print every action")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("play", help="play matches locally through a loopback referee (no Redis)")
    p.add_argument("bot", help="your bot: FILE.py:Class, module:Class, or random|greedy|strong|reference")
    p.add_argument("--vs", action="append", help="an opponent (repeat per seat; one given fills every seat)")
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--games", type=int, default=10, help="number of matches (default 10)")
    p.add_argument("--seed", help="base seed; match k uses SEED:k (default: from the clock)")
    p.add_argument("--concurrency", type=int, default=2, help="matches at once (default 2)")
    p.add_argument("--no-rotate", action="store_true", help="keep seats fixed instead of rotating them")
    p.add_argument("--move-ms", type=int, help="per-move limit (default: the game's)")
    p.add_argument("--first-move-ms", type=int, help="first-move allowance (default: the game's)")
    p.add_argument("--out", help="folder for transcripts (default transcripts/play-TIME)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--log-level", default="WARNING", help="referee log level (default WARNING)")
    p.set_defaults(func=cmd_play)

    bot = sub.add_parser("bot", help="bots").add_subparsers(dest="bot_command", required=True)
    p = bot.add_parser("run", help="connect a bot to the arena (or straight to a referee) and play its matches")
    p.add_argument("bot", help="FILE.py:Class, module:Class, or random|greedy|strong")
    p.add_argument("--token", default=os.environ.get("ARENA_BOT_TOKEN", ""), help="the bot's token (ARENA_BOT_TOKEN)")
    p.add_argument("--arena", help="the gateway host:port (default: ARENA_GATEWAY, the config file, 127.0.0.1:50051)")
    p.add_argument("--server", help="a standalone referee's host:port instead of the arena (arena referee serve)")
    p.add_argument("--config", help="TOML settings file")
    p.add_argument("--matches", type=int, help="stop after this many matches")
    p.add_argument("--time-per-move", type=float, help="reference bot 'strong': seconds of search per move")
    p.add_argument("--rollouts", help="reference bot 'strong': N rollouts a move instead of a clock, or 'measured' "
                   "(the counts of its strength figures)")  # fmt: skip
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=cmd_bot_run)

    ref = sub.add_parser("referee", help="the referee service").add_subparsers(dest="referee_command", required=True)
    p = ref.add_parser("serve", help="serve a standalone referee")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=50051)
    p.add_argument("--admin-token", help="required on RefereeService calls when set")
    p.add_argument("--allow-token", action="append", help="a bot token accepted before it is seated")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=cmd_referee_serve)

    tr = sub.add_parser("transcript", help="match transcripts").add_subparsers(dest="transcript_command", required=True)
    from arena.ladder_cli import add_ladder_parser
    from arena.local_cli import add_local_parser
    from arena.service_cli import add_service_parsers

    add_service_parsers(sub, bot, tr)
    add_ladder_parser(sub)
    add_local_parser(sub)
    p = tr.add_parser("show", help="print a transcript readably, with board pictures")
    p.add_argument("file")
    p.add_argument("--boards", action="store_true", help="a board picture after setup, each journey and each round")
    p.add_argument("-q", "--quiet", action="store_true", help="only events and the final board")
    p.set_defaults(func=cmd_transcript_show)
    p = tr.add_parser("verify", help="replay transcripts and check seed, chance, actions and result")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_transcript_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
