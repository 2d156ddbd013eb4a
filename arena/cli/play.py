"""``arena play``: matches between a bot and its opponents through a loopback referee (no Redis)."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from arena.cli.common import REFERENCE_ALIASES, CliError, console, milliseconds, positive_int, progress
from arena.cli.common import report as report_error
from referee import games


def cmd_play(args: argparse.Namespace) -> int:
    from arena.local.play import Player, check_players, play
    from referee.logs import configure

    configure(json=False, level=args.log_level)
    game = games.get(args.game)
    specs = [args.bot, *(args.vs or ["reference"])]
    if len(specs) == 2 and game.num_players > 2:
        specs = [specs[0]] + [specs[1]] * (game.num_players - 1)  # copies of one opponent
    if len(specs) != game.num_players:
        raise CliError(f"{game.game_id} has {game.num_players} seats: give your bot and {game.num_players - 1} --vs", 2)
    players = []
    for i, spec in enumerate(specs):
        spec = REFERENCE_ALIASES.get(spec, spec)
        base = spec.rpartition(":")[2] or spec
        players.append(Player(spec, f"{base}#{i}" if i else base))
    check_players(players)  # every bot loads, before anything starts (BotLoadError: exit 2)
    control = game.time_control.with_overrides(move_ms=args.move_ms, first_move_ms=args.first_move_ms)
    out = Path(args.out or f"transcripts/play-{time.strftime('%Y%m%d-%H%M%S')}")
    seed = args.seed or f"play-{int(time.time())}"
    with progress(console=console, transient=False) as bar:
        task = bar.add_task(f"{game.game_id} matches", total=args.games)
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
                on_result=lambda _r: bar.advance(task),
                check=False,
            )
        )
    summary = report.summary()
    problems = report.problems()
    replays = _write_replays(out, [r.match_id for r in report.results]) if args.html else []
    if args.json:
        print(json.dumps({"players": [p.label for p in players], "transcripts": str(out), **summary,
                          "replays": [str(r) for r in replays], "problems": problems}))  # fmt: skip
        return 1 if problems else 0
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
    if replays:
        console.print(f"{len(replays)} HTML replay(s) beside them, e.g. {replays[-1]}")
    for problem in problems:  # the run did not go as asked: say why, and exit non-zero
        report_error(problem)
    return 1 if problems else 0



def _write_replays(folder: Path, match_ids: list[str]) -> list[Path]:
    """An HTML replay beside each match's transcript (``FOLDER/MATCH_ID.html``), in match id order."""
    from arena.replay import write_replay
    from referee.transcript import file_lines

    pages = []
    for match_id in sorted(match_ids):
        source = folder / f"{match_id}.jsonl"
        if source.exists():
            pages.append(write_replay(file_lines(source), source.with_suffix(".html")))
    return pages


def add_parser(sub: Any) -> None:
    p = sub.add_parser("play", help="play matches locally through a loopback referee (no Redis)")
    p.add_argument("bot", help="your bot: FILE.py:Class, module:Class, or random|greedy|strong|reference")
    p.add_argument("--vs", action="append", help="an opponent (repeat per seat; one given fills every seat)")
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--games", type=positive_int, default=10, help="number of matches (default 10)")
    p.add_argument("--seed", help="base seed; match k uses SEED:k (default: from the clock)")
    p.add_argument("--concurrency", type=positive_int, default=2, help="matches at once (default 2)")
    p.add_argument("--no-rotate", action="store_true", help="keep seats fixed instead of rotating them")
    p.add_argument("--move-ms", type=milliseconds, help="per-move limit (default: the game's)")
    p.add_argument("--first-move-ms", type=milliseconds, help="first-move allowance (default: the game's)")
    p.add_argument("--out", help="folder for transcripts (default transcripts/play-TIME)")
    p.add_argument("--html", action="store_true", help="also write each match's HTML replay beside its transcript")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--log-level", default="WARNING", help="referee log level (default WARNING)")
    p.set_defaults(func=cmd_play)
