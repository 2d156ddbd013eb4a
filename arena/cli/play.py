"""``arena play``: matches between a bot and its opponents through a loopback referee (no Redis), with an
optional SPRT that stops as soon as the bot is shown better (H1) or not (H0).

Output: the progress bar, the running LLR and every message go to stderr; stdout carries the result,
a table, or with ``--json`` one JSON object and nothing else (every key always there, numbers finite or
null, enum values as lowercase strings)."""

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
    errors,
    positive_int,
    progress,
    time_control_overrides,
)
from arena.cli.common import report as report_error
from referee import games

SPRT_MODELS = ("pentanomial", "trinomial")


def cmd_play(args: argparse.Namespace) -> int:
    from arena.local.launch import CMD_PREFIX, EXTERNAL_PREFIX, file_labels, spec_label
    from arena.local.play import Player, SprtMonitor, check_players, rotation_plan, run_matches
    from arena.local.sprt import SprtConfig
    from referee.logs import configure
    from sdk.stdio import STDIO_PREFIX, stdio_spec

    configure(json=False, level=args.log_level)
    game = games.get(args.game)
    n = game.num_players
    given = [x for x in (args.bot, args.cmd, args.stdio, args.external) if x is not None]
    if len(given) != 1:
        raise CliError("give one of: your bot (FILE.py:Class, module:Class, random|greedy|strong), --cmd COMMAND, "
                       "--stdio COMMAND, or --external NAME for a bot you start yourself", 2)  # fmt: skip
    hero = args.bot if args.bot is not None else f"{CMD_PREFIX}{args.cmd}" if args.cmd is not None else \
        stdio_spec(args.stdio) if args.stdio is not None else f"{EXTERNAL_PREFIX}{args.external}"  # fmt: skip
    specs = [hero, *(args.vs or ["reference"])]
    if len(specs) == 2 and n > 2:
        specs = [specs[0]] + [specs[1]] * (n - 1)  # copies of one opponent
    if len(specs) != n:
        raise CliError(f"{game.game_id} has {n} seats: give your bot and {n - 1} --vs", 2)
    config = None
    if args.sprt is not None:
        try:
            config = SprtConfig.parse(args.sprt)
        except ValueError as e:
            raise CliError(f"--sprt: {e}", 2) from None
    specs = [REFERENCE_ALIASES.get(spec, spec) for spec in specs]
    players = []
    for i, (spec, base) in enumerate(zip(specs, file_labels(specs), strict=True)):
        # an opponent is numbered by its seat unless its file already tells it apart
        numbered = i > 0 and (base == spec_label(spec) or specs.index(spec) < i)
        players.append(Player(spec, f"{base}#{i}" if numbered else base))
    check_players(players)  # every bot loads, before anything starts (BotLoadError: exit 2)
    control = games.time_control(game.game_id, time_control_overrides(args))
    out = Path(args.out or f"transcripts/play-{time.strftime('%Y%m%d-%H%M%S')}")
    seed = args.seed or f"play-{int(time.time())}"
    model = args.sprt_model
    group = 1
    games_count = args.games
    if config is not None:
        if model == "pentanomial" and args.no_rotate:
            model = "trinomial"
            errors.print("--no-rotate: no pairs of games with the seats swapped, so the SPRT falls back to trinomial")
        group = n if model == "pentanomial" else 1
        games_count = -(-args.games // group) * group
        if games_count != args.games:
            errors.print(f"--games {args.games} rounded up to {games_count}: whole rotations of the seats on each seed")
    plan = rotation_plan(n, games_count, seed, rotate=not args.no_rotate, seed_group=group)
    monitor = SprtMonitor.for_plan(config, plan, players[0].label, n, group) if config is not None else None
    with progress(transient=False) as bar:
        title = f"{game.game_id} matches"
        task = bar.add_task(title + (_llr_text(monitor) if monitor else ""), total=games_count)

        def on_result(result: Any) -> None:
            if monitor is not None:
                monitor.add(result)
                bar.update(task, description=title + _llr_text(monitor))
            bar.advance(task)

        report = asyncio.run(
            run_matches(
                args.game,
                players,
                plan,
                concurrency=args.concurrency,
                out_dir=out,
                time_control=control,
                on_result=on_result,
                check=False,
                stop=(lambda: monitor.decided) if monitor is not None else None,
                listen=args.listen,
                wait_s=args.wait_s,
                say=lambda text: bar.console.print(text, soft_wrap=True, markup=False, highlight=False),
            )
        )
    summary = report.summary()
    problems = report.problems()
    replays = _write_replays(out, [r.match_id for r in report.results]) if args.html else []
    sprt = _sprt_json(monitor, model, group) if monitor is not None else None
    if args.json:
        doc = {"game": game.game_id, "players": [p.label for p in players], "seed": seed, "transcripts": str(out),
               "games_requested": games_count, **summary, "sprt": sprt, "replays": [str(r) for r in replays],
               "problems": problems}  # fmt: skip
        emit_json(doc)
        for problem in problems:
            report_error(problem)
        return 1 if problems else 0
    table = Table(title=f"{players[0].label} vs {', '.join(p.label for p in players[1:])}")
    for col in ("games", "wins", "draws", "losses", "mean score", "pairwise score", "Elo difference"):
        table.add_column(col, justify="right")
    table.add_row(
        str(summary["games"]),
        str(summary["wins"]),
        str(summary["draws"]),
        str(summary["losses"]),
        _number(summary["mean_score"], ".1f"),
        _number(summary["pairwise_score"], ".3f"),
        f"{_number(summary['elo'], '+.0f')} ± {_number(summary['elo_error'], '.0f')}",
    )
    console.print(table)
    if sprt is not None:
        console.print(_sprt_line(sprt))
    console.print(f"seed {seed}; transcripts in {out}/ (arena transcript show|verify FILE)")
    if any(p.spec.startswith(CMD_PREFIX) for p in players):
        console.print(f"the output of --cmd bots in {out / 'logs'}/")
    if any(p.spec.startswith(STDIO_PREFIX) for p in players):
        console.print("the stderr of --stdio bots is this command's own (above)")
    if replays:
        console.print(f"{len(replays)} HTML replay(s) beside them, e.g. {replays[-1]}")
    for problem in problems:  # the run did not go as asked: say why, and exit non-zero
        report_error(problem)
    return 1 if problems else 0


def _llr_text(monitor: Any) -> str:
    lower, upper = monitor.tally.config.bounds
    return f"  LLR {monitor.tally.llr:+.2f} ({lower:+.2f}, {upper:+.2f})"


def _sprt_json(monitor: Any, model: str, group: int) -> dict[str, Any]:
    tally = monitor.tally
    c = tally.config
    lower, upper = c.bounds
    return {
        "elo0": c.elo0, "elo1": c.elo1, "alpha": c.alpha, "beta": c.beta, "elo_model": c.elo, "model": model,
        "games_per_unit": group, "lower": lower, "upper": upper, "llr": tally.llr,
        "decision": tally.decision or "inconclusive", "units": tally.units, "counts": list(tally.counts),
    }  # fmt: skip


def _sprt_line(sprt: dict[str, Any]) -> str:
    verdict = {"h0": "H0 accepted (not elo1 better)", "h1": "H1 accepted (elo1 better)"}
    unit = {1: "games", 2: "pairs"}.get(sprt["games_per_unit"], f"rotations of {sprt['games_per_unit']} tables")
    return (f"SPRT elo0={sprt['elo0']:g} elo1={sprt['elo1']:g} ({sprt['elo_model']} Elo, {sprt['model']}) "
            f"alpha={sprt['alpha']:g} beta={sprt['beta']:g}: LLR {sprt['llr']:+.2f} "
            f"({sprt['lower']:+.2f}, {sprt['upper']:+.2f}) after {sprt['units']} {unit}: "
            f"{verdict.get(sprt['decision'], 'inconclusive (--games reached)')}")  # fmt: skip


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


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
    p.add_argument("bot", nargs="?", help="your bot: FILE.py:Class, module:Class, or random|greedy|strong|reference")
    p.add_argument("--cmd", metavar="COMMAND", help="your bot is this command, in any language: it finds the "
                   "referee's host:port in $ARENA_SERVER, its token in $ARENA_BOT_TOKEN and its number of matches "
                   "in $ARENA_MATCHES (or in the words {address} {token} {matches} of the command)")  # fmt: skip
    p.add_argument("--stdio", metavar="COMMAND", help="your bot is this command, in any language, with no gRPC: "
                   "it reads one JSON line per turn on stdin and writes its action as one line on stdout "
                   "(docs/bots.md, the line protocol)")  # fmt: skip
    p.add_argument("--external", metavar="NAME", help="your bot, called NAME, is one you start yourself: the "
                   "address and token to give it are printed on stderr, and the matches wait for it")  # fmt: skip
    p.add_argument("--vs", action="append", help="an opponent (repeat per seat; one given fills every seat): a bot "
                   "as above, cmd:COMMAND, stdio:COMMAND or external:NAME")  # fmt: skip
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--games", type=positive_int, default=10,
                   help="number of matches (default 10); with --sprt the most it plays")  # fmt: skip
    p.add_argument("--seed", help="base seed; match k uses SEED:k, with a pentanomial --sprt SEED:(k // seats) "
                                  "(default: from the clock)")  # fmt: skip
    p.add_argument("--concurrency", type=positive_int, default=2, help="matches at once (default 2)")
    p.add_argument("--no-rotate", action="store_true", help="keep seats fixed instead of rotating them")
    add_time_control(p)
    p.add_argument("--sprt", nargs="*", metavar="KEY=VALUE",
                   help="stop when the SPRT accepts H0 or H1: elo0=0 elo1=10 alpha=0.05 beta=0.05 "
                        "elo=logistic|normalized (the defaults); the LLR shows beside the progress bar")  # fmt: skip
    p.add_argument("--sprt-model", choices=SPRT_MODELS, default="pentanomial",
                   help="pentanomial: pairs of games on one seed with the seats swapped (3-4 players: a rotation "
                        "of the table) are the units (default); trinomial: single games")  # fmt: skip
    p.add_argument("--out", help="folder for transcripts (default transcripts/play-TIME)")
    p.add_argument("--html", action="store_true", help="also write each match's HTML replay beside its transcript")
    add_json(p, "the summary")
    add_launch_options(p)
    p.add_argument("--log-level", default="WARNING", help="referee log level (default WARNING)")
    p.set_defaults(func=cmd_play)
