"""``arena tournament``: every pairing (or table) of a set of bots through one loopback referee, as
``arena play`` plays its matches; then the cross table, the scores and Elo ratings with error bars.

Output as ``arena play``'s: the progress bar and messages on stderr; stdout holds the tables, or with
``--json`` one JSON object and nothing else (every key always there, numbers finite or null)."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from arena.cli.common import (
    REFERENCE_ALIASES,
    CliError,
    add_json,
    add_launch_options,
    add_time_control,
    console,
    emit_json,
    positive_int,
    progress,
    time_control_overrides,
)
from arena.cli.common import report as report_error
from referee import games


def cmd_tournament(args: argparse.Namespace) -> int:
    from arena.local.play import Player, check_players
    from arena.local.tournament import FORMATS, games_per_table, labels, tables, tournament
    from referee.logs import configure
    from sdk.stdio import stdio_spec

    configure(json=False, level=args.log_level)
    game = games.get(args.game)
    specs = [REFERENCE_ALIASES.get(s, s) for s in args.bots] + [stdio_spec(c) for c in args.stdio or ()]
    if not specs:
        raise CliError("name the bots: BOT ... and/or --stdio COMMAND ...", 2)
    fmt = next(f for f in FORMATS if f == args.format)
    try:
        table_list = tables(len(specs), game.num_players, fmt)
    except ValueError as e:
        raise CliError(f"{game.game_id}: {e}", 2) from None
    players = [Player(spec, label) for spec, label in zip(specs, labels(specs), strict=True)]
    check_players(players)  # every bot loads, before anything starts (BotLoadError: exit 2)
    control = games.time_control(game.game_id, time_control_overrides(args))
    out = Path(args.out or f"transcripts/tournament-{time.strftime('%Y%m%d-%H%M%S')}")
    seed = args.seed or f"tournament-{int(time.time())}"
    per_table = games_per_table(args.games, game.num_players)
    total = per_table * len(table_list)
    with progress(transient=False) as bar:
        task = bar.add_task(f"{game.game_id} {fmt}, {len(table_list)} table(s)", total=total)
        report = asyncio.run(
            tournament(
                args.game,
                players,
                fmt=fmt,
                games=args.games,
                seed=seed,
                concurrency=args.concurrency,
                out_dir=out,
                time_control=control,
                on_result=lambda _r: bar.advance(task),
                check=False,
                listen=args.listen,
                wait_s=args.wait_s,
                say=lambda text: bar.console.print(text, soft_wrap=True, markup=False, highlight=False),
            )
        )
    standings = report.standings()
    cross = report.cross_table()
    problems = report.problems()
    if args.json:
        doc = {
            "game": game.game_id, "format": fmt, "players": [p.label for p in players],
            "bots": [p.spec for p in players], "seed": seed, "transcripts": str(out),
            "games_per_table": per_table, "games_requested": total, "games": len(report.run.results),
            "tables": [[players[i].label for i in t] for t in table_list],
            "standings": standings, "cross_table": cross, "problems": problems,
        }  # fmt: skip
        emit_json(doc)
        for problem in problems:
            report_error(problem)
        return 1 if problems else 0
    console.print(_cross_table(report.players, cross, game.game_id, fmt))
    console.print(_standings(standings))
    console.print(f"{len(report.run.results)} matches, {per_table} per table, seeds {seed}:0.. in every rotation; "
                  f"transcripts in {out}/ (arena transcript show|verify FILE)")  # fmt: skip
    for problem in problems:
        report_error(problem)
    return 1 if problems else 0


def _cross_table(players: list[Any], cross: list[dict[str, Any]], game_id: str, fmt: str) -> Table:
    """Rows: a bot's pairwise points / pairwise games against each column's bot."""
    table = Table(title=f"{game_id} {fmt}: pairwise points / games (row against column)")
    table.add_column("")
    for p in players:
        table.add_column(p.label, justify="right")
    cells = {(c["player"], c["opponent"]): c for c in cross}
    for p in players:
        row = [p.label]
        for q in players:
            c = cells.get((p.label, q.label))
            row.append("" if c is None else "-" if not c["games"] else f"{c['points']:g}/{c['games']}")
        table.add_row(*row)
    return table


def _standings(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="standings (Elo: relative to the field's mean, 95% error bar)")
    for col in ("rank", "bot", "games", "wins", "draws", "losses", "points", "score", "Elo"):
        table.add_column(col, justify="left" if col == "bot" else "right")
    for r in rows:
        score = "-" if r["score"] is None else f"{r['score']:.3f}"
        table.add_row(str(r["rank"]), r["player"], str(r["games"]), str(r["wins"]), str(r["draws"]),
                      str(r["losses"]), f"{r['points']:g}/{r['pair_games']}", score,
                      f"{r['elo']:+.0f} ± {r['elo_error']:.0f}")  # fmt: skip
    return table


def add_parser(sub: Any) -> None:
    p = sub.add_parser("tournament", help="a round robin or gauntlet of bots through a loopback referee (no Redis)")
    p.add_argument("bots", nargs="*", metavar="BOT",
                   help="the bots: FILE.py:Class, module:Class, random|greedy|strong|reference, cmd:COMMAND (a bot "
                        "in any language, told where to connect by $ARENA_SERVER, $ARENA_BOT_TOKEN and "
                        "$ARENA_MATCHES), stdio:COMMAND (a command that reads and writes lines, docs/bots.md) "
                        "or external:NAME (one you start yourself: where it must connect is printed on "
                        "stderr)")  # fmt: skip
    p.add_argument("--stdio", action="append", metavar="COMMAND",
                   help="one more bot: a command speaking the line protocol (repeat per bot)")  # fmt: skip
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--format", default="round-robin", choices=("round-robin", "gauntlet"),
                   help="round-robin: every pairing, or every table of the bots (default); gauntlet: the first "
                        "bot against each other one, or every table with the first bot")  # fmt: skip
    p.add_argument("--games", type=positive_int, default=10,
                   help="matches per pairing or table, rounded up to whole seat rotations (default 10)")  # fmt: skip
    p.add_argument("--seed", help="base seed; every table plays SEED:0, SEED:1, ... in every rotation (default: clock)")
    p.add_argument("--concurrency", type=positive_int, default=2, help="matches at once (default 2)")
    add_time_control(p)
    p.add_argument("--out", help="folder for transcripts (default transcripts/tournament-TIME)")
    add_json(p, "the results")
    add_launch_options(p)
    p.add_argument("--log-level", default="WARNING", help="referee log level (default WARNING)")
    p.set_defaults(func=cmd_tournament)
